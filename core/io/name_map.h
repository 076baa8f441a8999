/* Checkpoint names as data: for each kind of checkpoint (a Hugging Face
 * `model_type`, or amptrain's own PyTorch-named files), how its tensor names
 * meet amptrain's parameter names, which of its weights are stored
 * transposed, and which of its tensors are buffers rather than parameters.
 * One loader (init_weights.c) reads every kind through these tables. */
#ifndef AMP_NAME_MAP_H
#define AMP_NAME_MAP_H

#include <stddef.h>

/* One rule: `file` and `kit` are name patterns where '*' stands for a block
 * number (one or more digits), the same number on both sides. */
typedef struct amp_name_rule {
    const char *file, *kit;
    int transpose; /* stored [in, out] (GPT-2's Conv1D), the kit holds [out, in] */
} amp_name_rule;

typedef struct amp_name_map {
    const char *model_type;         /* config.json's model_type; "" for amptrain's own names */
    const char *model;              /* the amptrain [model] name it builds; NULL: any */
    const amp_name_rule *rules;     /* {NULL}-terminated; a name no rule matches is the same in both */
    const char *const *buffers;     /* NULL-terminated patterns of non-parameter tensors, skipped */
} amp_name_map;

/* The map of a config.json model_type, or NULL when none is known. */
const amp_name_map *amp_name_map_find(const char *model_type);
/* The map of a plain .safetensors file (PyTorch state_dict names). */
const amp_name_map *amp_name_map_plain(void);
/* The model_types known, comma-separated, for messages. */
const char *amp_name_map_types(void);

/* The file's name of kit parameter `kit` into out; *transpose says its layout. */
void amp_name_map_to_file(const amp_name_map *m, const char *kit, char *out, size_t len,
                          int *transpose);
/* The kit's name of the file's tensor `file` into out (the inverse). */
void amp_name_map_to_kit(const amp_name_map *m, const char *file, char *out, size_t len,
                         int *transpose);
/* 1 when the file's tensor `file` is a buffer the map skips. */
int amp_name_map_is_buffer(const amp_name_map *m, const char *file);

/* 1 when `name` matches `pattern` ('*': one or more digits), the digits
 * into num (num may be NULL). */
int amp_name_match(const char *pattern, const char *name, char *num, size_t numlen);

#endif
