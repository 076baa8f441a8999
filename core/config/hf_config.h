/* A Hugging Face model folder's config.json as amptrain [model] keys.
 *
 * `[model] init = FOLDER` names a folder holding config.json and the weights
 * (model.safetensors, or model.safetensors.index.json and its shards). The
 * config sets the architecture: each of its keys becomes a [model] key
 * (GPT-2's n_layer, n_head, n_embd, n_positions -> block_size,
 * activation_function -> activation), is checked to hold the one value
 * amptrain's model computes (layer_norm_epsilon 1e-5, tied embeddings, ...),
 * or is metadata that changes no number (architectures, token ids, ...).
 * Any other key is refused by name, never ignored. An INI key that
 * disagrees with the folder is an error naming both values. */
#ifndef AMP_HF_CONFIG_H
#define AMP_HF_CONFIG_H

#include <stddef.h>

#include "io/config.h"
#include "io/name_map.h"

#define AMP_HF_MAX_KEYS 24

typedef struct amp_hf_keys {
    const amp_name_map *map; /* of the config's model_type */
    int n;
    char key[AMP_HF_MAX_KEYS][32];   /* the [model] key */
    char value[AMP_HF_MAX_KEYS][64]; /* its value, as an INI line writes it */
    char from[AMP_HF_MAX_KEYS][48];  /* the config.json key it came from */
    char dropout[48];                /* a dropout key with a non-zero value, or "" */
} amp_hf_keys;

/* Reads len bytes of config.json text (label names it in messages) into
 * *out. 0, or -1 with "label: why" in err. */
int amp_hf_config_parse(const char *text, size_t len, const char *label, amp_hf_keys *out,
                        char *err, size_t errlen);

/* When cfg's [model] init names a folder: reads FOLDER/config.json and sets
 * its keys in cfg ([model] name included), each located as
 * "FOLDER/config.json: key". 0 (also when init is no folder), or -1 with
 * err. */
int amp_hf_config_apply(amp_config *cfg, char *err, size_t errlen);

/* The name map of the folder's config.json (its model_type). 0, or -1 with
 * err. */
int amp_hf_folder_map(const char *folder, const amp_name_map **map, char *err, size_t errlen);

#endif
