#include "policy_common.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Indexed by amp_op_class. */
static const char *const op_class_names[AMP_OP_COUNT] = {
    "gemm", "conv", "attention", "pointwise", "softmax", "loss", "norm", "reduce"};
#define OP_CLASS_LIST "gemm conv attention pointwise softmax loss norm reduce"

#define OP_PREFIX "op."

/* each_key hands over the full key ("op.gemm"); strip the prefix. */
static const char *key_suffix(const char *key, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(key, prefix, n) == 0 ? key + n : key;
}

static int policy_dtype_value(const amp_host_api *h, const char *key, const char *value,
                              amp_dtype *dt)
{
    if (!value || amp_dtype_parse(value, dt) != 0) {
        h->key_error(h->ctx, key, "unknown dtype '%s'; use one of: " AMP_DTYPE_LIST,
                     value ? value : "");
        return -1;
    }
    return 0;
}

static int on_op_key(void *user, const char *key, const char *value)
{
    amp_policy *p = user;
    const amp_host_api *h = p->host;
    const char *cls = key_suffix(key, OP_PREFIX);
    int idx = -1;
    for (int i = 0; i < AMP_OP_COUNT; i++)
        if (strcmp(cls, op_class_names[i]) == 0)
            idx = i;
    if (idx < 0) {
        h->key_error(h->ctx, key, "unknown op class '%s'; valid classes: " OP_CLASS_LIST, cls);
        return 1;
    }
    amp_dtype dt;
    if (policy_dtype_value(h, key, value, &dt))
        return 1;
    p->op_set[idx] = 1;
    p->op_dtype[idx] = dt;
    return 0;
}

int amp_policy_create(const amp_host_api *host, amp_dtype low, amp_policy **out)
{
    *out = NULL;
    amp_policy *p = calloc(1, sizeof *p);
    if (!p) {
        host->error(host->ctx, "precision policy: out of memory");
        return -1;
    }
    p->host = host;
    p->low = low;
    int n = host->layer_count ? host->layer_count(host->ctx) : 0;
    p->layer_count = n > 0 ? n : 0;
    if (p->layer_count) {
        p->layers = calloc((size_t)p->layer_count, sizeof *p->layers);
        if (!p->layers) {
            free(p);
            host->error(host->ctx, "precision policy: out of memory");
            return -1;
        }
    }
    /* Both scans run so every bad key is reported in one go. */
    int bad = host->each_key(host->ctx, OP_PREFIX, on_op_key, p) != 0;
    bad |= amp_layer_keys_read(host, p->layers, p->layer_count) != 0;
    if (bad) {
        amp_policy_destroy(p);
        return -1;
    }
    *out = p;
    return 0;
}

void amp_policy_destroy(amp_policy *p)
{
    if (!p)
        return;
    free(p->layers);
    free(p->layer_classes);
    free(p);
}

int amp_policy_resolve(const amp_policy *p, const char *layer, amp_layer_precision *out)
{
    const amp_host_api *h = p->host;
    if (!out || out->struct_size < sizeof(amp_layer_precision)) {
        h->error(h->ctx, "resolve: amp_layer_precision too small (struct_size %u, need %zu)",
                 out ? (unsigned)out->struct_size : 0u, sizeof(amp_layer_precision));
        return -1;
    }
    amp_dtype L = p->low;
    for (int c = 0; c < AMP_OP_COUNT; c++)
        out->compute[c] = AMP_DTYPE_F32;
    out->compute[AMP_OP_GEMM] = L;
    out->compute[AMP_OP_CONV] = L;
    out->compute[AMP_OP_ATTENTION] = L;
    out->compute[AMP_OP_POINTWISE] = L;
    out->activation = L;
    out->param = L;
    for (int c = 0; c < AMP_OP_COUNT; c++)
        if (p->op_set[c])
            out->compute[c] = p->op_dtype[c];
    amp_layer_keys_apply(p->layers, p->layer_count, layer, out);
    for (int r = 0; r < AMP_ROLE_COUNT; r++) {
        out->operand[r] = (amp_operand_format){AMP_FORMAT_DTYPE, 0, 0, 0};
        out->operand_flags[r] = 0;
    }
    for (int i = 0; p->scaled && layer && i < p->layer_count; i++) {
        const unsigned gemm = (1u << AMP_OP_GEMM) | (1u << AMP_OP_CONV); /* Linear, Conv2d */
        if (p->layers[i].set || !p->layers[i].name || strcmp(layer, p->layers[i].name) != 0 ||
            !(p->layer_classes[i] & gemm))
            continue;
        for (int r = 0; r < AMP_ROLE_COUNT; r++) {
            out->operand[r] = p->operand[r];
            out->operand_flags[r] = p->operand_flags[r];
        }
    }
    return 0;
}

int amp_policy_choice(const amp_host_api *h, const char *key, const char *const *names,
                      int count, int *out)
{
    const char *v = NULL;
    int got = h->get_string(h->ctx, key, &v);
    if (got < 0)
        return -1;
    if (got == 0)
        return 0;
    for (int i = 0; i < count; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char list[256] = "";
    for (int i = 0; i < count; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? " | " : "",
                 names[i]);
    h->key_error(h->ctx, key, "unknown value '%s'; use %s", v, list);
    return -1;
}

int amp_policy_integer(const amp_host_api *h, const char *key, double lo, double hi,
                       int64_t *out)
{
    double v = (double)*out;
    int got = h->get_double(h->ctx, key, &v);
    if (got < 0)
        return -1;
    if (got == 0)
        return 0;
    if (!isfinite(v) || v != floor(v) || v < lo || v > hi) {
        h->key_error(h->ctx, key, "%g is not an integer in %.0f..%.0f", v, lo, hi);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

int amp_policy_set_scaled(amp_policy *p, uint32_t grad_format, uint32_t scaling,
                          uint32_t history_len)
{
    amp_operand_format op[AMP_ROLE_COUNT];
    for (int r = 0; r < AMP_ROLE_COUNT; r++) {
        uint32_t f = r == AMP_ROLE_GRAD_OUTPUT ? grad_format : AMP_FORMAT_F8_E4M3;
        op[r] = (amp_operand_format){f, scaling, history_len, 0};
    }
    const uint32_t none[AMP_ROLE_COUNT] = {0};
    return amp_policy_set_operands(p, op, none);
}

int amp_policy_set_operands(amp_policy *p, const amp_operand_format *operand,
                            const uint32_t *flags)
{
    const amp_host_api *h = p->host;
    if (h->struct_size <= offsetof(amp_host_api, layer_op_classes) || !h->layer_op_classes) {
        h->error(h->ctx, "this host does not tell layer op classes (plugin ABI 1.2 needed)");
        return -1;
    }
    if (p->layer_count && !(p->layer_classes = calloc((size_t)p->layer_count, sizeof(unsigned)))) {
        h->error(h->ctx, "precision policy: out of memory");
        return -1;
    }
    for (int i = 0; i < p->layer_count; i++)
        p->layer_classes[i] = h->layer_op_classes(h->ctx, i);
    for (int r = 0; r < AMP_ROLE_COUNT; r++) {
        p->operand[r] = operand[r];
        p->operand_flags[r] = flags[r];
    }
    p->scaled = 1;
    return 0;
}

void amp_policy_vt_fini(void *self) { amp_policy_destroy(self); }

int amp_policy_vt_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    return amp_policy_resolve(self, layer, out);
}

int amp_policy_vt_requires_scaler(void *self) { return ((amp_policy *)self)->requires_scaler; }

int amp_policy_vt_allow_tf32(void *self) { return ((amp_policy *)self)->tf32; }
