/* The `layer.<name or glob> = f32|f16|bf16` keys of a precision plugin's
 * section, read exactly as the built-in policies read them: a name with
 * * ? or [ is a glob over the model's layer names (fnmatch, where * also
 * crosses dots: "transformer.h.*.attn.*"); keys apply in file order, so a
 * later key wins for the layers both match; a key that names no layer, a
 * bad dtype or an unclosed '[' is a key_error naming the key (its file and
 * line). `amptrain ab --scan` keeps groups of layers at a precision through
 * these keys, so a plugin that reads them can be a scan's candidate.
 *
 * Header only (static inline): a plugin never links the core, and nothing
 * here is part of the plugin ABI's layout.
 *
 * Ownership: the caller owns the keys array; each name is the host's
 * layer_name pointer, valid until the plugin's fini. Use from init:
 *
 *   amp_layer_key *keys = calloc(n ? n : 1, sizeof *keys);  // n = layer_count
 *   if (amp_layer_keys_read(host, keys, n) != 0) ...          // message is set
 *   ...in resolve: if (amp_layer_keys_apply(keys, n, layer, out)) the layer
 *   has an override (leave its operands unscaled). */
#ifndef AMPTRAIN_LAYER_KEYS_H
#define AMPTRAIN_LAYER_KEYS_H

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "amptrain/plugin.h"

typedef struct amp_layer_key {
    const char *name; /* the host's layer name */
    int set;          /* a layer.* key names this layer */
    amp_dtype dtype;  /* the last such key's dtype */
} amp_layer_key;

#define AMP_LAYER_KEY_PREFIX "layer."
#define AMP_DTYPE_LIST "f32 f16 bf16"

/* "f32", "f16", "bf16" into *out: 0, or -1 for any other text. */
static inline int amp_dtype_parse(const char *s, amp_dtype *out)
{
    static const char *const names[AMP_DTYPE_COUNT] = {"f32", "f16", "bf16"};
    for (int i = 0; s && i < AMP_DTYPE_COUNT; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (amp_dtype)i;
            return 0;
        }
    return -1;
}

/* fnmatch takes an unclosed '[' literally, so "fc[12" would only "match no
 * layer"; say what is wrong instead. The column of the bad '[' (1-based), or
 * 0 when the pattern is well formed. */
static inline int amp_glob_unclosed_bracket(const char *pat)
{
    for (const char *p = pat; *p; p++) {
        if (*p != '[')
            continue;
        const char *q = p + 1;
        if (*q == '!' || *q == '^')
            q++;
        if (*q == ']') /* a ']' first in the set is a member */
            q++;
        q = strchr(q, ']');
        if (!q)
            return (int)(p - pat) + 1;
        p = q;
    }
    return 0;
}

typedef struct amp_layer_keys_ctx {
    const amp_host_api *host;
    amp_layer_key *keys;
    int count;
} amp_layer_keys_ctx;

static inline int amp_layer_keys_on_key(void *user, const char *key, const char *value)
{
    const amp_layer_keys_ctx *c = (const amp_layer_keys_ctx *)user;
    const amp_host_api *h = c->host;
    const char *name = key + (strncmp(key, AMP_LAYER_KEY_PREFIX, 6) == 0 ? 6 : 0);
    amp_dtype dt;
    if (amp_dtype_parse(value, &dt) != 0) {
        h->key_error(h->ctx, key, "unknown dtype '%s'; use one of: " AMP_DTYPE_LIST,
                     value ? value : "");
        return 1;
    }
    int glob = strpbrk(name, "*?[") != NULL, matched = 0;
    int bad_col = glob ? amp_glob_unclosed_bracket(name) : 0;
    if (bad_col) {
        h->key_error(h->ctx, key,
                     "malformed pattern '%s': the '[' at column %d has no closing ']'", name,
                     bad_col);
        return 1;
    }
    for (int i = 0; i < c->count; i++) {
        const char *ln = c->keys[i].name;
        if (!ln || (glob ? fnmatch(name, ln, 0) != 0 : strcmp(name, ln) != 0))
            continue;
        c->keys[i].set = 1;
        c->keys[i].dtype = dt;
        matched++;
    }
    if (matched == 0) {
        /* Name the model's layers so the fix is obvious; long lists are cut. */
        char list[256];
        size_t used = 0;
        list[0] = '\0';
        for (int i = 0; i < c->count && used + 1 < sizeof list; i++) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", i ? " " : "",
                             c->keys[i].name ? c->keys[i].name : "?");
            if (n < 0 || (size_t)n >= sizeof list - used) {
                used = sizeof list;
                break;
            }
            used += (size_t)n;
        }
        if (used >= sizeof list)
            strcpy(list + sizeof list - 5, " ...");
        if (c->count == 0)
            h->key_error(h->ctx, key, "unknown layer '%s'; the model has no layers", name);
        else
            h->key_error(h->ctx, key, "%s '%s' matches no layer; the model's layers are: %s",
                         glob ? "the pattern" : "unknown layer", name, list);
        return 1;
    }
    return 0;
}

/* Fills keys[count] (count = host->layer_count) from the section's layer.*
 * keys, marking them read. 0, or -1 after key_error. */
static inline int amp_layer_keys_read(const amp_host_api *host, amp_layer_key *keys, int count)
{
    amp_layer_keys_ctx c = {host, keys, count};
    for (int i = 0; i < count; i++) {
        keys[i].name = host->layer_name(host->ctx, i);
        keys[i].set = 0;
        keys[i].dtype = AMP_DTYPE_F32;
    }
    return host->each_key(host->ctx, AMP_LAYER_KEY_PREFIX, amp_layer_keys_on_key, &c) != 0 ? -1
                                                                                          : 0;
}

/* When a key names `layer`: its GEMM, CONV, ATTENTION and POINTWISE compute,
 * activation and param take the key's dtype (the built-ins' meaning) and 1
 * is returned; 0, with out untouched, otherwise. */
static inline int amp_layer_keys_apply(const amp_layer_key *keys, int count, const char *layer,
                                       amp_layer_precision *out)
{
    int hit = 0;
    for (int i = 0; layer && i < count; i++) {
        if (!keys[i].set || !keys[i].name || strcmp(layer, keys[i].name) != 0)
            continue;
        amp_dtype d = keys[i].dtype;
        out->compute[AMP_OP_GEMM] = out->compute[AMP_OP_CONV] = d;
        out->compute[AMP_OP_ATTENTION] = out->compute[AMP_OP_POINTWISE] = d;
        out->activation = out->param = d;
        hit = 1;
    }
    return hit;
}

#endif
