/* The number formats: the one place that knows how a dtype is stored, fed
 * to a GEMM and rounded into. A layer asks here what array its GEMM reads
 * and how to get it. The scaled formats (FP8 per tensor, MX, NVFP4) are
 * families of core/formats/: this file calls a slot's family and never
 * asks which one it is; a new one is a family file and a table row.
 *
 * Where the backend widens 16-bit GEMM inputs to FP32 anyway
 * (be->info.widened_gemm), the layer's GEMM is fed FP32 arrays holding the
 * values rounded through its dtype (what the widening would give, so the
 * bits are those of the 16-bit GEMM): the working copy is such an array,
 * cast once per step, and an operand is widened once, not at every GEMM. */
#include <stdint.h>
#include <stdio.h>

#include "kit_state.h"

amp_dtype amp_format_feed(const amp_model *m, amp_dtype gemm) {
    int widened = gemm != AMP_DTYPE_F32 && ((m->be->info.widened_gemm >> gemm) & 1u);
    return widened ? AMP_DTYPE_F32 : gemm;
}

/* 1 when v's values change on their way into gemm */
static int rounds(amp_dtype gemm, amp_dtype vals) {
    return gemm != AMP_DTYPE_F32 && vals != gemm;
}

int amp_format_converts(amp_dtype feed, amp_dtype gemm, amp_dtype store, amp_dtype vals) {
    return rounds(gemm, vals) || store != feed;
}

int amp_format_dy_converts(amp_dtype feed, amp_dtype gemm, amp_dtype out_dt) {
    return rounds(gemm, out_dt) || (feed != AMP_DTYPE_F32 && out_dt != feed);
}

/* 1 when n elements fit the cap elements of the slot's array; else 0 and be->err */
static int fits(amp_model *m, const char *what, size_t n, size_t cap) {
    if (n <= cap) return 1;
    snprintf(m->be->err, sizeof m->be->err, "model '%s': %s of %zu elements exceeds the scratch "
             "of %zu (a dtype mix the layers did not plan for)", m->ops->name, what, n, cap);
    return 0;
}

const void *amp_format_operand(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                               const amp_array *v, size_t n) {
    return amp_format_operand_counted(m, feed, gemm, slot, v, n, NULL);
}

const void *amp_format_operand_counted(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                                       const amp_array *v, size_t n, amp_round_count *cnt) {
    return amp_format_operand_at(m, feed, gemm, slot, 0, v, n, cnt);
}

const void *amp_format_operand_at(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                                  size_t at, const amp_array *v, size_t n, amp_round_count *cnt) {
    amp_kit *k = m->kit;
    amp_backend *be = m->be;
    int r = rounds(gemm, v->vals);
    if (!r && v->store == feed) return v->p;
    if (!r && feed == AMP_DTYPE_F32 && v->f32) return v->f32;
    const char *what = "operand conversion";
    float *f32 = k->op_f32[slot] ? k->op_f32[slot] + at : NULL;
    void *h16 = k->op_16[slot] ? (uint16_t *)k->op_16[slot] + at : NULL;
    const float *wide = v->store == AMP_DTYPE_F32 ? v->p : v->f32;
    if (!wide) {
        if (!fits(m, what, at + n, k->cap32[slot])) return NULL;
        if (be->ops->widen(be, f32, v->p, v->store, n) != 0) return NULL;
        wide = f32;
    }
    if (feed == AMP_DTYPE_F32) { /* a widened GEMM, or an F32 GEMM fed 16-bit values */
        if (!r) return wide;
        if (!fits(m, what, at + n, k->cap32[slot])) return NULL;
        if (be->ops->quantize(be, f32, wide, n, gemm, cnt, 0) != 0) return NULL;
        return f32;
    }
    if (!fits(m, what, at + n, k->cap16[slot])) return NULL;
    if (be->ops->round(be, h16, gemm, wide, n, cnt) != 0) return NULL;
    return h16;
}

/* ---- scaled operands: the family table (core/formats/family.h) ----
 * A scaled operand reaches its GEMM as the FP32 values deq(quant(v)); the
 * GEMM is the FP32 one, or, where the backend has its family's GEMM on
 * codes, a Linear's forward gives it the codes (amp_format_fp8_gemm). The
 * kit never asks which family a slot has: it calls the slot's family. The
 * stats record each quantize adds to is amp_model_scaled_stats: the slot's
 * step record on the CPU backend, a device record that
 * amp_model_scaled_collect brings into it on a GPU. */

static const char *role_name(int role) {
    return role == AMP_ROLE_INPUT ? "input" : role == AMP_ROLE_WEIGHT ? "weight" : "grad_output";
}

int amp_format_scaled_slot(amp_model *m, int layer, int role, const char *what) {
    amp_scaled_slot *sl = amp_scaled_find(m->scaled, layer, role);
    if (!sl) return -1;
    if (!sl->family) { /* the host checked it: a model built by hand */
        snprintf(m->be->err, sizeof m->be->err,
                 "model '%s': layer '%s' (%s): the %s operand has the format %u with the scaling "
                 "%u, which no number-format family serves",
                 m->ops->name, m->desc.layers[layer].name, what, role_name(role),
                 (unsigned)sl->fmt.format, (unsigned)sl->fmt.scaling);
        return -2;
    }
    sl->claimed = 1;
    return (int)(sl - m->scaled->slot);
}

static const amp_format_family *family(const amp_model *m, int slot) {
    return m->scaled->slot[slot].family;
}

int amp_format_scaled_blocked(const amp_model *m, int slot) {
    return slot >= 0 && family(m, slot)->blocked;
}

/* Where slot `slot`'s family works: its records, the operand scratch. */
static amp_family_env env_of(amp_model *m, int slot) {
    amp_kit *k = m->kit;
    return (amp_family_env){m->be, m->scaled, &m->scaled->slot[slot],
                            amp_model_scaled_stats(m, slot), amp_model_nvfp4_stats(m, slot),
                            m->ops->name, {k->op_f32[0], k->op_f32[1]},
                            k->cap32[0] < k->cap32[1] ? k->cap32[0] : k->cap32[1],
                            k->cap32[0] < k->cap32[1] ? k->cap32[0] : k->cap32[1], NULL, NULL};
}

/* Tensor t as a weight [out, in] (a Conv2d's [out, c, kh, kw] is [out,
 * c*kh*kw]) with its working copy. */
static amp_family_weight weight_of(amp_model *m, int t, const float *master) {
    amp_kit_copy *c = &m->kit->copy[t];
    const amp_param_desc *p = &m->desc.params[t];
    return (amp_family_weight){c->ptr, &c->fp8_scale, master, (int)p->shape[0],
                               (int)(p->numel / (size_t)p->shape[0])};
}

size_t amp_format_scaled_bytes(const amp_model *m, int t, int slot) {
    const amp_param_desc *p = &m->desc.params[t];
    return family(m, slot)->weight_bytes(&m->scaled->slot[slot], (int)p->shape[0],
                                         (int)(p->numel / (size_t)p->shape[0]));
}

const float *amp_format_scaled_operand(amp_model *m, int slot, int scratch, const amp_array *v,
                                       int rows, int cols, int along_cols, int count) {
    return amp_format_scaled_operand_at(m, slot, scratch, 0, v, rows, cols, along_cols, count);
}

/* The operand of slot `slot`, its codes and scale kept where keep says
 * (a counted input of a family with `kept`). */
static const float *scaled_operand(amp_model *m, int slot, int scratch, size_t at,
                                   const amp_array *v, int rows, int cols, int along_cols,
                                   int count, const amp_format_keep *keep) {
    amp_kit *k = m->kit;
    amp_backend *be = m->be;
    size_t n = (size_t)rows * (size_t)cols;
    if (!fits(m, "scaled operand", at + n, k->cap32[scratch])) return NULL;
    float *dst = k->op_f32[scratch] + at;
    amp_family_values x = {v->p, v->store, v->f32};
    const float *wide = amp_family_wide(be, dst, &x, n); /* 16-bit values widen exactly */
    if (!wide) return NULL;
    amp_family_env e = env_of(m, slot);
    if (keep) e.keep = keep->codes, e.keep_scale = keep->scale;
    return family(m, slot)->operand(&e, dst, wide, rows, cols, along_cols, count);
}

const float *amp_format_scaled_operand_at(amp_model *m, int slot, int scratch, size_t at,
                                          const amp_array *v, int rows, int cols, int along_cols,
                                          int count) {
    return scaled_operand(m, slot, scratch, at, v, rows, cols, along_cols, count, NULL);
}

int amp_format_scaled_keeps(const amp_model *m, int slot) {
    return slot >= 0 && family(m, slot)->kept != NULL;
}

const float *amp_format_scaled_input(amp_model *m, int slot, int scratch, const amp_array *v,
                                     int rows, int cols, const amp_format_keep *keep) {
    return scaled_operand(m, slot, scratch, 0, v, rows, cols, 0, 1, keep);
}

const float *amp_format_scaled_kept(amp_model *m, int slot, int scratch, size_t at,
                                    const amp_format_keep *keep, size_t n) {
    if (!fits(m, "kept operand", at + n, m->kit->cap32[scratch])) return NULL;
    amp_family_env e = env_of(m, slot);
    return family(m, slot)->kept(&e, m->kit->op_f32[scratch] + at, keep->codes, *keep->scale, n);
}

const float *amp_format_scaled_weight(amp_model *m, int t, int scratch, int along_cols) {
    int slot = m->kit->copy[t].fp8_slot;
    amp_family_env e = env_of(m, slot);
    amp_family_weight w = weight_of(m, t, amp_kit_master(m, t));
    return family(m, slot)->weight(&e, m->kit->op_f32[scratch], &w, along_cols);
}

int amp_format_fp8_gemm(amp_model *m, int x_slot, int t, const amp_array *x, amp_gemm_desc *g,
                        const amp_format_keep *keep) {
    int w_slot = m->kit->copy[t].fp8_slot;
    if (x_slot < 0 || w_slot < 0) return 0;
    const amp_format_family *f = family(m, x_slot);
    if (f != family(m, w_slot) || !f->gemm) return 0; /* mixed families compose */
    amp_family_env ex = env_of(m, x_slot), ew = env_of(m, w_slot);
    if (keep && f->kept) ex.keep = keep->codes, ex.keep_scale = keep->scale;
    /* X's codes at slot 0's start, its widened values past them (dead
     * once the codes are made: the results may land on them) */
    size_t n = (size_t)g->m * (size_t)g->k, room = amp_format_codes_room(n), cap = m->kit->cap32[0];
    ex.scratch[1] = m->kit->op_f32[0] + room;
    ex.scratch_n = cap > room ? cap - room : 0;
    ex.codes_n = cap < room ? cap : room;
    amp_family_weight w = weight_of(m, t, amp_kit_master(m, t));
    amp_family_values xv = {x->p, x->store, x->f32};
    return f->gemm(&ex, &ew, &w, &xv, g);
}

int amp_format_cast(amp_model *m, amp_kit_copy *c, const float *master, size_t n) {
    amp_backend *be = m->be;
    if (c->fp8_slot >= 0) { /* the family's codes, counted into the WEIGHT slot */
        amp_family_env e = env_of(m, c->fp8_slot);
        amp_family_weight w = weight_of(m, (int)(c - m->kit->copy), master);
        return family(m, c->fp8_slot)->cast(&e, &w);
    }
    amp_round_count *cnt = amp_model_rounds(m, c->layer, AMP_ROUND_FWD);
    if (c->f32_store) /* FP32 arrays of the rounded values, counted the same */
        return be->ops->quantize(be, c->ptr, master, n, c->dt, cnt, 0);
    return be->ops->round(be, c->ptr, c->dt, master, n, cnt);
}
