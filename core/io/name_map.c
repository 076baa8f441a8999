#include "io/name_map.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Buffers that PyTorch state_dicts carry beside the parameters: the causal
 * masks of older nanoGPT files and of GPT-2 (attn.bias, attn.masked_bias). */
static const char *const gpt_buffers[] = {"transformer.h.*.attn.bias",
                                          "transformer.h.*.attn.masked_bias", NULL};

static const amp_name_rule no_rules[] = {{NULL, NULL, 0}};

/* Hugging Face GPT2LMHeadModel: nanoGPT's names (nanoGPT took them from
 * it), but its Linears are Conv1D and store the weight [in, out]. */
static const amp_name_rule gpt2_rules[] = {
    {"transformer.h.*.attn.c_attn.weight", "transformer.h.*.attn.c_attn.weight", 1},
    {"transformer.h.*.attn.c_proj.weight", "transformer.h.*.attn.c_proj.weight", 1},
    {"transformer.h.*.mlp.c_fc.weight", "transformer.h.*.mlp.c_fc.weight", 1},
    {"transformer.h.*.mlp.c_proj.weight", "transformer.h.*.mlp.c_proj.weight", 1},
    {NULL, NULL, 0}};

/* Hugging Face LlamaForCausalLM: amptrain's names = llama are its own; an
 * older file's rotary_emb.inv_freq is a buffer. */
static const char *const llama_buffers[] = {"model.layers.*.self_attn.rotary_emb.inv_freq", NULL};

static const amp_name_map maps[] = {
    {"gpt2", "gpt", gpt2_rules, gpt_buffers},
    {"llama", "gpt", no_rules, llama_buffers},
};
static const amp_name_map plain = {"", NULL, no_rules, gpt_buffers};

const amp_name_map *amp_name_map_find(const char *model_type) {
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        if (strcmp(maps[i].model_type, model_type) == 0) return &maps[i];
    return NULL;
}

const amp_name_map *amp_name_map_plain(void) {
    return &plain;
}

const char *amp_name_map_types(void) {
    return "gpt2, llama";
}

int amp_name_match(const char *pattern, const char *name, char *num, size_t numlen) {
    const char *star = strchr(pattern, '*');
    if (!star) return strcmp(pattern, name) == 0;
    size_t head = (size_t)(star - pattern);
    if (strncmp(pattern, name, head) != 0) return 0;
    const char *d = name + head, *e = d;
    while (isdigit((unsigned char)*e)) e++;
    if (e == d || strcmp(e, star + 1) != 0) return 0;
    if (num) snprintf(num, numlen, "%.*s", (int)(e - d), d);
    return 1;
}

/* `to` with '*' replaced by num. */
static void fill(const char *to, const char *num, char *out, size_t len) {
    const char *star = strchr(to, '*');
    if (!star) snprintf(out, len, "%s", to);
    else snprintf(out, len, "%.*s%s%s", (int)(star - to), to, num, star + 1);
}

static void translate(const amp_name_map *m, const char *name, int to_file, char *out, size_t len,
                      int *transpose) {
    char num[32];
    for (const amp_name_rule *r = m->rules; r->file; r++) {
        const char *from = to_file ? r->kit : r->file, *to = to_file ? r->file : r->kit;
        if (amp_name_match(from, name, num, sizeof num)) {
            fill(to, num, out, len);
            *transpose = r->transpose;
            return;
        }
    }
    snprintf(out, len, "%s", name);
    *transpose = 0;
}

void amp_name_map_to_file(const amp_name_map *m, const char *kit, char *out, size_t len,
                          int *transpose) {
    translate(m, kit, 1, out, len, transpose);
}

void amp_name_map_to_kit(const amp_name_map *m, const char *file, char *out, size_t len,
                         int *transpose) {
    translate(m, file, 0, out, len, transpose);
}

int amp_name_map_is_buffer(const amp_name_map *m, const char *file) {
    for (const char *const *b = m->buffers; b && *b; b++)
        if (amp_name_match(*b, file, NULL, 0)) return 1;
    return 0;
}
