/* The number formats: the one place that knows how a dtype is stored, fed
 * to a GEMM and rounded into. A layer asks here what array its GEMM reads
 * and how to get it; a new format (FP8, a block-scaled one) plugs in by
 * teaching these four functions its storage and its rounding.
 *
 * Where the backend widens 16-bit GEMM inputs to FP32 anyway
 * (be->info.widened_gemm), the layer's GEMM is fed FP32 arrays holding the
 * values rounded through its dtype (what the widening would give, so the
 * bits are those of the 16-bit GEMM): the working copy is such an array,
 * cast once per step, and an operand is widened once, not at every GEMM. */
#include <stdio.h>

#include "kit_state.h"
#include "backend/kernels/mx.h"

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

const void *amp_format_operand(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                               const amp_array *v, size_t n) {
    return amp_format_operand_counted(m, feed, gemm, slot, v, n, NULL);
}

const void *amp_format_operand_counted(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                                       const amp_array *v, size_t n, amp_round_count *cnt) {
    amp_kit *k = m->kit;
    amp_backend *be = m->be;
    int r = rounds(gemm, v->vals);
    if (!r && v->store == feed) return v->p;
    if (!r && feed == AMP_DTYPE_F32 && v->f32) return v->f32;
    if (n > k->need[AMP_SCRATCH_OPERAND]) {
        snprintf(be->err, sizeof be->err, "model '%s': operand conversion of %zu elements exceeds "
                 "the scratch of %zu (a dtype mix the layers did not plan for)", m->ops->name, n,
                 k->need[AMP_SCRATCH_OPERAND]);
        return NULL;
    }
    const float *wide = v->store == AMP_DTYPE_F32 ? v->p : v->f32;
    if (!wide) {
        if (be->ops->widen(be, k->op_f32[slot], v->p, v->store, n) != 0) return NULL;
        wide = k->op_f32[slot];
    }
    if (feed == AMP_DTYPE_F32) { /* a widened GEMM, or an F32 GEMM fed 16-bit values */
        if (!r) return wide;
        if (be->ops->quantize(be, k->op_f32[slot], wide, n, gemm, cnt, 0) != 0) return NULL;
        return k->op_f32[slot];
    }
    if (be->ops->round(be, k->op_16[slot], gemm, wide, n, cnt) != 0) return NULL;
    return k->op_16[slot];
}

/* ---- scaled operands (FP8 per tensor: FP8_SPEC's Linear) ----
 * A scaled operand reaches its GEMM as the FP32 values deq(quant(v)); the
 * GEMM is the FP32 one, or, where the backend has fp8_gemm (nvfp4_gemm), a
 * Linear's forward gives it the codes (per tensor, or MX32 or NVFP4 with
 * their block scales: amp_format_fp8_gemm). The stats record each quantize adds to is
 * amp_model_scaled_stats: the slot's step record on the CPU backend, a
 * device record that amp_model_scaled_collect brings into it on a GPU. */

static const char *role_name(int role) {
    return role == AMP_ROLE_INPUT ? "input" : role == AMP_ROLE_WEIGHT ? "weight" : "grad_output";
}

int amp_format_scaled_slot(amp_model *m, int layer, int role, const char *what) {
    amp_scaled_slot *sl = amp_scaled_find(m->scaled, layer, role);
    if (!sl) return -1;
    if (sl->fmt.scaling >= AMP_SCALING_COUNT) { /* the host checked it: a model built by hand */
        snprintf(m->be->err, sizeof m->be->err,
                 "model '%s': layer '%s' (%s): the %s operand has the unknown scaling %u",
                 m->ops->name, m->desc.layers[layer].name, what, role_name(role),
                 (unsigned)sl->fmt.scaling);
        return -2;
    }
    sl->claimed = 1;
    return (int)(sl - m->scaled->slot);
}

static int is_mx(const amp_scaled_slot *sl) { return sl->fmt.scaling == AMP_SCALING_MX32; }
static int is_nv(const amp_scaled_slot *sl) { return sl->fmt.format == AMP_FORMAT_NVFP4; }

/* The scale that quantizes x[n] now: CURRENT from x's own amax when
 * `fresh` (a re-quantization keeps the scale it was counted with). The
 * slot's amax and scale are in unscaled units, x in the slot's unit (a
 * gradient times the loss scale): x quantizes with scale / unit. */
static int scale_for(amp_model *m, amp_scaled_slot *sl, const float *x, size_t n, int fresh,
                     float *scale) {
    amp_backend *be = m->be;
    float unit = amp_scaled_unit(m->scaled, sl);
    if (fresh && sl->fmt.scaling == AMP_SCALING_CURRENT) {
        float amax;
        if (AMP_SCALED(be, fp8_amax, &amax, x, n) != 0) return -1;
        if (amp_scaled_current(m->scaled, sl, amax / unit, be->err, sizeof be->err) != 0)
            return -1;
    }
    *scale = sl->scale / unit;
    return 0;
}

/* A weight as the GEMM's [out, in] matrix: out = its first dimension (a
 * Conv2d's [out, c, kh, kw] is [out, c*kh*kw]). */
static size_t weight_in(const amp_param_desc *p) { return p->numel / (size_t)p->shape[0]; }

/* The MX32 codes' E8M0 scales of a [out, in] weight, blocks along its rows. */
static size_t mx_row_scales(const amp_param_desc *p) {
    size_t in = weight_in(p), out = (size_t)p->shape[0];
    return out * ((in + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK);
}

/* ---- NVFP4 (FP4 E2M1 in blocks of 16 with E4M3 scales, an FP32 tensor
 * scale: backend/kernels/nvfp4.h). A weight's copy holds the codes at 4
 * bits, then its block scales: 16x16 tiles under NVFP4_2D (the forward and
 * dX read the same values), the forward's 1x16 blocks along `in` under
 * NVFP4_1D (dX's blocks down the columns come from the FP32 master, as
 * MX32's). The tensor's decode scale is kept as c->fp8_scale. ---- */

static amp_nvfp4_desc nv_weight_desc(const amp_model *m, int t, const amp_scaled_slot *sl,
                                     int along_cols) {
    const amp_param_desc *p = &m->desc.params[t];
    int blocks = sl->fmt.scaling == AMP_SCALING_NVFP4_2D ? AMP_NVFP4_TILES
                 : along_cols                            ? AMP_NVFP4_COLS
                                                         : AMP_NVFP4_ROWS;
    return (amp_nvfp4_desc){(int)p->shape[0], (int)weight_in(p), blocks, 0, 0, 0, 0};
}

size_t amp_format_scaled_bytes(const amp_model *m, int t, int slot) {
    const amp_param_desc *p = &m->desc.params[t];
    const amp_scaled_slot *sl = &m->scaled->slot[slot];
    if (is_nv(sl)) {
        amp_nvfp4_desc d = nv_weight_desc(m, t, sl, 0);
        return (p->numel + 1) / 2 +
               amp_nvfp4_block_count((size_t)d.rows, (size_t)d.cols, d.blocks);
    }
    return p->numel + (is_mx(sl) ? mx_row_scales(p) : 0);
}

/* An activation or gradient operand [rows, cols] in NVFP4 into dst: 1x16
 * blocks along the rows, or down the columns (along_cols: the weight
 * GEMM's operands, where the slot's HADAMARD flag applies). */
static const float *nv_operand(amp_model *m, amp_scaled_slot *sl, float *dst, const float *wide,
                               int rows, int cols, int along_cols, int count) {
    amp_scaled *s = m->scaled;
    uint32_t fl = sl->flags;
    amp_nvfp4_desc d = {rows, cols, along_cols ? AMP_NVFP4_COLS : AMP_NVFP4_ROWS,
                        (fl & AMP_OPERAND_STOCHASTIC) != 0, 0,
                        along_cols && (fl & AMP_OPERAND_HADAMARD), 0};
    if (d.stochastic) d.sr_key = amp_scaled_nvfp4_key(s, sl);
    if (d.hadamard) d.signs = amp_scaled_nvfp4_signs(s);
    float s_enc;
    int slot = (int)(sl - s->slot);
    if (AMP_SCALED(m->be, nvfp4_qdq, dst, wide, &d, count ? &s_enc : NULL,
                   count ? amp_model_scaled_stats(m, slot) : NULL,
                   count ? amp_model_nvfp4_stats(m, slot) : NULL) != 0)
        return NULL;
    if (count) sl->scale = s_enc * amp_scaled_unit(s, sl); /* in unscaled units */
    return dst;
}

static amp_mx_desc weight_blocks(const amp_model *m, int t, int fmt, int along_cols) {
    const amp_param_desc *p = &m->desc.params[t];
    return (amp_mx_desc){(int)p->shape[0], (int)weight_in(p), fmt, along_cols};
}

const float *amp_format_scaled_operand(amp_model *m, int slot, int scratch, const amp_array *v,
                                       int rows, int cols, int along_cols, int count) {
    amp_kit *k = m->kit;
    amp_backend *be = m->be;
    amp_scaled_slot *sl = &m->scaled->slot[slot];
    size_t n = (size_t)rows * (size_t)cols;
    if (n > k->need[AMP_SCRATCH_OPERAND]) {
        snprintf(be->err, sizeof be->err, "model '%s': scaled operand of %zu elements exceeds the "
                 "scratch of %zu", m->ops->name, n, k->need[AMP_SCRATCH_OPERAND]);
        return NULL;
    }
    float *dst = k->op_f32[scratch];
    const float *wide = v->store == AMP_DTYPE_F32 ? v->p : v->f32;
    if (!wide) { /* 16-bit values widen exactly */
        if (be->ops->widen(be, dst, v->p, v->store, n) != 0) return NULL;
        wide = dst;
    }
    if (is_nv(sl)) return nv_operand(m, sl, dst, wide, rows, cols, along_cols, count);
    int fmt = amp_format_fp8(sl->fmt.format);
    amp_fp8_stats *st = count ? amp_model_scaled_stats(m, slot) : NULL;
    if (is_mx(sl)) {
        amp_mx_desc d = {rows, cols, fmt, along_cols};
        return AMP_SCALED(be, mx_qdq, dst, wide, &d, st) != 0 ? NULL : dst;
    }
    float scale;
    if (scale_for(m, sl, wide, n, count, &scale) != 0) return NULL;
    if (AMP_SCALED(be, fp8_qdq, dst, wide, n, scale, fmt, st) != 0) return NULL;
    return dst;
}

const float *amp_format_scaled_weight(amp_model *m, int t, int scratch, int along_cols) {
    amp_kit *k = m->kit;
    amp_backend *be = m->be;
    const amp_kit_copy *c = &k->copy[t];
    amp_scaled_slot *sl = &m->scaled->slot[c->fp8_slot];
    size_t n = m->desc.params[t].numel;
    int fmt = amp_format_fp8(sl->fmt.format);
    float *dst = k->op_f32[scratch];
    if (is_nv(sl)) {
        amp_nvfp4_desc d = nv_weight_desc(m, t, sl, along_cols);
        int from_master = d.blocks == AMP_NVFP4_COLS; /* NVFP4_1D's dX blocks */
        d.stochastic = from_master && (sl->flags & AMP_OPERAND_STOCHASTIC);
        if (d.stochastic) d.sr_key = amp_scaled_nvfp4_key(m->scaled, sl);
        int rc = from_master ? AMP_SCALED(be, nvfp4_qdq, dst, amp_kit_master(m, t), &d, NULL,
                                          NULL, NULL)
                             : AMP_SCALED(be, nvfp4_dequantize, dst, c->ptr,
                                          (const uint8_t *)c->ptr + (n + 1) / 2, c->fp8_scale, &d);
        return rc != 0 ? NULL : dst;
    }
    if (is_mx(sl)) {
        amp_mx_desc d = weight_blocks(m, t, fmt, along_cols);
        int rc = along_cols ? AMP_SCALED(be, mx_qdq, dst, amp_kit_master(m, t), &d, NULL)
                            : AMP_SCALED(be, mx_dequantize, dst, c->ptr,
                                         (const uint8_t *)c->ptr + n, &d);
        return rc != 0 ? NULL : dst;
    }
    if (AMP_SCALED(be, fp8_dequantize, dst, c->ptr, n, c->fp8_scale, fmt) != 0) return NULL;
    return dst;
}

/* X's codes (code_bytes) and their nscales block scales in operand scratch
 * 0, the scales after the codes, 16-byte aligned: NULL when they do not fit
 * its bytes. */
static uint8_t *codes_scales(amp_kit *k, size_t code_bytes, size_t nscales, uint8_t **scales) {
    size_t at = (code_bytes + 15) / 16 * 16;
    if (at + nscales > k->need[AMP_SCRATCH_OPERAND] * sizeof(float)) return NULL;
    uint8_t *codes = (uint8_t *)k->op_f32[0];
    *scales = codes + at;
    return codes;
}

/* X's values in FP32 for its quantize: x itself, or 16-bit values widened
 * (exactly) into operand scratch 1, beside the codes in scratch 0. */
static const float *x_wide(amp_model *m, const amp_array *x, size_t n) {
    amp_backend *be = m->be;
    if (x->store == AMP_DTYPE_F32) return x->p;
    if (x->f32) return x->f32;
    return be->ops->widen(be, m->kit->op_f32[1], x->p, x->store, n) != 0 ? NULL : m->kit->op_f32[1];
}

/* A Linear's forward on NVFP4 X and W through the backend's nvfp4_gemm: X
 * quantized as the forward's operand (1x16 blocks along in, the slot's
 * rounding, counted into its stats) into its codes and scales in operand
 * scratch 0; W's codes and scales are its working copy. 0 when the
 * backend has no nvfp4_gemm or X's codes and scales do not fit. */
static int nv_forward_gemm(amp_model *m, amp_scaled_slot *sx, const amp_kit_copy *c,
                           const amp_array *x, amp_gemm_desc *g) {
    amp_kit *k = m->kit;
    amp_backend *be = m->be;
    if (!amp_backend_supports(be, "nvfp4_gemm")) return 0;
    const amp_scaled_slot *sw = &m->scaled->slot[c->fp8_slot];
    size_t n = (size_t)g->m * (size_t)g->k;
    uint8_t *x_scales, *codes = n > k->need[AMP_SCRATCH_OPERAND] ? NULL :
        codes_scales(k, (n + 1) / 2,
                     amp_nvfp4_block_count((size_t)g->m, (size_t)g->k, AMP_NVFP4_ROWS), &x_scales);
    if (!codes) return 0;
    const float *wide = x_wide(m, x, n);
    if (!wide) return -1;
    amp_nvfp4_desc d = {g->m, g->k, AMP_NVFP4_ROWS, (sx->flags & AMP_OPERAND_STOCHASTIC) != 0, 0,
                        0, 0};
    if (d.stochastic) d.sr_key = amp_scaled_nvfp4_key(m->scaled, sx);
    int slot = (int)(sx - m->scaled->slot);
    amp_nvfp4_gemm_operands q = {x_scales, NULL, 0, 0.0f, c->fp8_scale};
    if (AMP_SCALED(be, nvfp4_quantize, codes, x_scales, &q.a_s_dec, wide, &d,
                   amp_model_scaled_stats(m, slot), amp_model_nvfp4_stats(m, slot)) != 0)
        return -1;
    sx->scale = 1.0f / q.a_s_dec;
    int t = (int)(c - k->copy);
    q.b_blocks = nv_weight_desc(m, t, sw, 0).blocks;
    q.b_scales = (const uint8_t *)c->ptr + (m->desc.params[t].numel + 1) / 2;
    g->a = codes;
    g->b = c->ptr;
    g->in_dtype = AMP_DTYPE_F32;
    return AMP_FUSED(be, nvfp4_gemm, g, &q) != 0 ? -1 : 1;
}

int amp_format_fp8_gemm(amp_model *m, int x_slot, int t, const amp_array *x, amp_gemm_desc *g) {
    amp_kit *k = m->kit;
    amp_backend *be = m->be;
    const amp_kit_copy *c = &k->copy[t];
    if (x_slot < 0 || c->fp8_slot < 0) return 0;
    amp_scaled_slot *sx = &m->scaled->slot[x_slot];
    const amp_scaled_slot *sw = &m->scaled->slot[c->fp8_slot];
    if (is_nv(sx) && is_nv(sw)) return nv_forward_gemm(m, sx, c, x, g);
    if (is_nv(sx) || is_nv(sw) || !amp_backend_supports(be, "fp8_gemm")) return 0;
    int mx = is_mx(sx);
    if (mx != is_mx(sw)) return 0; /* per tensor x per tensor, or MX32 x MX32 */
    size_t n = (size_t)g->m * (size_t)g->k;
    if (n > k->need[AMP_SCRATCH_OPERAND]) {
        snprintf(be->err, sizeof be->err, "model '%s': FP8 operand of %zu elements exceeds the "
                 "scratch of %zu", m->ops->name, n, k->need[AMP_SCRATCH_OPERAND]);
        return -1;
    }
    uint8_t *codes = (uint8_t *)k->op_f32[0], *x_scales = NULL;
    if (mx && !(codes = codes_scales(k, n, amp_mx_block_count((size_t)g->m, (size_t)g->k, 0),
                                     &x_scales)))
        return 0;
    const float *wide = x_wide(m, x, n);
    if (!wide) return -1;
    int fmt = amp_format_fp8(sx->fmt.format);
    amp_fp8_gemm_operands q = {fmt, amp_format_fp8(sw->fmt.format), 0.0f, c->fp8_scale, NULL,
                               NULL};
    if (mx) { /* X [rows, in] and W [out, in], both in blocks along in */
        amp_mx_desc d = {g->m, g->k, fmt, 0};
        if (AMP_SCALED(be, mx_quantize, codes, x_scales, wide, &d,
                       amp_model_scaled_stats(m, x_slot)) != 0)
            return -1;
        q.a_mx = x_scales;
        q.b_mx = (const uint8_t *)c->ptr + m->desc.params[t].numel;
    } else {
        if (scale_for(m, sx, wide, n, 1, &q.a_scale) != 0) return -1;
        if (AMP_SCALED(be, fp8_quantize, codes, wide, n, q.a_scale, fmt,
                       amp_model_scaled_stats(m, x_slot)) != 0)
            return -1;
    }
    g->a = codes;
    g->b = c->ptr;
    g->in_dtype = AMP_DTYPE_F32;
    return AMP_FUSED(be, fp8_gemm, g, &q) != 0 ? -1 : 1;
}

/* qW = quant(master, s_w): 1 byte per value and the scale it used (MX32:
 * the forward's blocks and their scales); the master's stats go to the
 * WEIGHT slot. */
static int cast_fp8(amp_model *m, amp_kit_copy *c, const float *master, size_t n) {
    amp_scaled_slot *sl = &m->scaled->slot[c->fp8_slot];
    int fmt = amp_format_fp8(sl->fmt.format);
    if (is_nv(sl)) {
        amp_nvfp4_desc d = nv_weight_desc(m, (int)(c - m->kit->copy), sl, 0);
        float s_dec;
        d.stochastic = (sl->flags & AMP_OPERAND_STOCHASTIC) != 0;
        if (d.stochastic) d.sr_key = amp_scaled_nvfp4_key(m->scaled, sl);
        if (AMP_SCALED(m->be, nvfp4_quantize, c->ptr, (uint8_t *)c->ptr + (n + 1) / 2, &s_dec,
                       master, &d, amp_model_scaled_stats(m, c->fp8_slot),
                       amp_model_nvfp4_stats(m, c->fp8_slot)) != 0)
            return -1;
        c->fp8_scale = s_dec;
        sl->scale = 1.0f / s_dec;
        return 0;
    }
    if (is_mx(sl)) {
        int t = (int)(c - m->kit->copy);
        amp_mx_desc d = weight_blocks(m, t, fmt, 0);
        return AMP_SCALED(m->be, mx_quantize, c->ptr, (uint8_t *)c->ptr + n, master, &d,
                          amp_model_scaled_stats(m, c->fp8_slot));
    }
    float scale;
    if (scale_for(m, sl, master, n, 1, &scale) != 0) return -1;
    c->fp8_scale = scale;
    return AMP_SCALED(m->be, fp8_quantize, c->ptr, master, n, scale, fmt,
                      amp_model_scaled_stats(m, c->fp8_slot));
}

int amp_format_cast(amp_model *m, amp_kit_copy *c, const float *master, size_t n) {
    amp_backend *be = m->be;
    if (c->fp8_slot >= 0) return cast_fp8(m, c, master, n);
    amp_round_count *cnt = amp_model_rounds(m, c->layer, AMP_ROUND_FWD);
    if (c->f32_store) /* FP32 arrays of the rounded values, counted the same */
        return be->ops->quantize(be, c->ptr, master, n, c->dt, cnt, 0);
    return be->ops->round(be, c->ptr, c->dt, master, n, cnt);
}
