/* The kit's state: the per-tensor working copies and init rules, the
 * scratch the objects asked for, and the frames of a model's ops table
 * that walk the parameter table (init_params, cast_weights, working_copy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_state.h"
#include "util/rng.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

int amp_kit_create(amp_model *m, char *err, size_t errlen) {
    amp_kit *k = calloc(1, sizeof *k);
    size_t n = m->desc.nparam_tensors > 0 ? (size_t)m->desc.nparam_tensors : 1;
    if (k) {
        k->copy = calloc(n, sizeof *k->copy);
        k->rule = calloc(n, sizeof *k->rule);
    }
    if (!k || !k->copy || !k->rule) {
        if (k) free(k->copy), free(k->rule);
        free(k);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    k->ntensors = m->desc.nparam_tensors;
    m->kit = k;
    return 0;
}

void amp_kit_free(amp_model *m) {
    if (!m->kit) return;
    free(m->kit->copy);
    free(m->kit->rule);
    free(m->kit);
    m->kit = NULL;
}

size_t amp_dtype_bytes(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

void *amp_kit_take(amp_model *m, amp_mem_category mem, size_t n, amp_dtype dt) {
    return amp_arena_take(&m->mem[mem], n * amp_dtype_bytes(dt));
}

void amp_kit_layout(amp_model *m) {
    amp_kit *k = m->kit;
    for (int t = 0; t < k->ntensors; t++) {
        amp_kit_copy *c = &k->copy[t];
        if (c->on && c->fp8_slot >= 0) /* 1 byte per value (+ MX scales) */
            c->ptr = amp_arena_take(&m->mem[AMP_MEM_WORKING], amp_format_scaled_bytes(m, t, c->fp8_slot));
        else if (c->on)
            c->ptr = amp_kit_take(m, AMP_MEM_WORKING, m->desc.params[t].numel,
                                  c->f32_store ? AMP_DTYPE_F32 : c->dt);
    }
    amp_kit_layout_scratch(m);
    amp_arena *W = &m->mem[AMP_MEM_WORKSPACE];
    k->conv_ws = amp_arena_take(W, k->need[AMP_SCRATCH_CONV_WS]);
    k->cast_cnt = amp_arena_take(W, (size_t)m->desc.nlayers * sizeof *k->cast_cnt);
    k->ones_ready = 0;
}

const float *amp_kit_ones(amp_model *m) {
    amp_kit *k = m->kit;
    size_t n = k->need[AMP_SCRATCH_ONES];
    if (!k->ones_ready) {
        float *host = malloc((n ? n : 1) * sizeof *host);
        if (!host) {
            snprintf(m->be->err, sizeof m->be->err, "out of host memory");
            return NULL;
        }
        for (size_t i = 0; i < n; i++) host[i] = 1.0f;
        int rc = m->be->ops->upload(m->be, k->scratch[AMP_SCRATCH_ONES], host, n * sizeof *host);
        free(host);
        if (rc != 0) return NULL;
        k->ones_ready = 1;
    }
    return k->scratch[AMP_SCRATCH_ONES];
}

void amp_kit_need(amp_model *m, amp_kit_scratch what, size_t n) {
    if (n > m->kit->need[what]) m->kit->need[what] = n;
}

void amp_kit_need_slot(amp_model *m, int slot, amp_dtype feed, size_t n) {
    size_t *s = m->kit->slot_need[slot];
    if (n > s[0]) s[0] = n;
    if (feed != AMP_DTYPE_F32 && n > s[1]) s[1] = n;
}

int amp_kit_tensor(const amp_model *m, const char *name) { return amp_model_desc_find(&m->desc, name); }

int amp_kit_layer(const amp_model *m, const char *name) {
    for (int l = 0; l < m->desc.nlayers; l++)
        if (strcmp(m->desc.layers[l].name, name) == 0) return l;
    return -1;
}

void amp_kit_add_copy(amp_model *m, int t, amp_dtype dt, int f32_store, int layer) {
    if (t < 0 || dt == AMP_DTYPE_F32) return; /* the master weights serve */
    int reads = m->kit->copy[t].reads_master;
    m->kit->copy[t] = (amp_kit_copy){1, dt, f32_store, layer, NULL, -1, 1.0f, reads};
}

void amp_kit_add_fp8_copy(amp_model *m, int t, int slot, int layer) {
    int reads = m->kit->copy[t].reads_master;
    m->kit->copy[t] = (amp_kit_copy){1, AMP_DTYPE_F32, 0, layer, NULL, slot, 1.0f, reads};
}

void amp_kit_reads_master(amp_model *m, int t) {
    if (t >= 0) m->kit->copy[t].reads_master = 1;
}

amp_array amp_kit_weight(amp_model *m, int t) {
    const amp_kit_copy *c = &m->kit->copy[t];
    if (!c->on) return amp_array_of(amp_kit_master(m, t), AMP_DTYPE_F32);
    amp_array a = {c->ptr, c->f32_store ? AMP_DTYPE_F32 : c->dt, c->dt, NULL};
    return a;
}

/* ---- init ---- */

void amp_kit_init_rule(amp_model *m, int t, amp_init_kind kind, double a) {
    if (t >= 0) m->kit->rule[t] = (amp_kit_rule){kind, a};
}

int amp_kit_init_params(amp_model *m, uint64_t seed) {
    const amp_model_desc *d = &m->desc;
    float *host = malloc(d->nparams * sizeof(float));
    if (!host) {
        snprintf(m->be->err, sizeof m->be->err, "out of host memory");
        return -1;
    }
    amp_rng rng;
    amp_rng_seed(&rng, seed);
    for (int t = 0; t < d->nparam_tensors; t++) {
        const amp_kit_rule *r = &m->kit->rule[t];
        float *w = host + d->params[t].offset;
        size_t n = d->params[t].numel;
        for (size_t j = 0; j < n; j++) {
            switch (r->kind) {
            case AMP_INIT_UNIFORM: w[j] = (float)((2.0 * amp_rng_uniform(&rng) - 1.0) * r->a); break;
            case AMP_INIT_NORMAL: w[j] = (float)(r->a * amp_rng_normal(&rng)); break;
            case AMP_INIT_CONST: w[j] = (float)r->a; break;
            case AMP_INIT_NONE:
                snprintf(m->be->err, sizeof m->be->err, "model '%s': tensor %s has no init rule",
                         m->ops->name, d->params[t].name);
                free(host);
                return -1;
            }
        }
    }
    int rc = amp_model_put_master(m, host);
    free(host);
    return rc;
}

/* ---- working copies ---- */

int amp_kit_cast_weights(amp_model *m) {
    int reused = amp_model_cast_reuse(m);
    if (reused < 0) return -1;
    /* the optimizer's fused cast writes no FP8 copy: those are cast here;
     * sharded, the 16-bit copies are written from the gathered shards */
    for (int t = 0; t < m->kit->ntensors; t++) {
        amp_kit_copy *c = &m->kit->copy[t];
        if (c->on && (c->fp8_slot >= 0 || (!reused && !m->sharded)))
            CHECK(amp_format_cast(m, c, amp_kit_master(m, t), m->desc.params[t].numel));
    }
    return 0;
}

int amp_kit_working_copy(amp_model *m, int t, amp_working_copy *wc) {
    const amp_kit_copy *c = &m->kit->copy[t];
    if (!c->on || c->fp8_slot >= 0) return 0; /* FP8: amp_kit_cast_weights */
    *wc = (amp_working_copy){c->ptr, c->dt, c->f32_store, c->layer, c->reads_master};
    return 1;
}
