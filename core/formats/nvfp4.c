/* NVFP4 (FP4 E2M1 in blocks of 16 with E4M3 scales, an FP32 tensor scale:
 * backend/kernels/nvfp4.h). Activations and gradients in 1x16 blocks along
 * a GEMM's reduction dimension, the weight-gradient GEMM's operands
 * optionally through the random Hadamard transform; stochastic rounding
 * where the slot's flags ask. A weight's copy holds the codes at 4 bits,
 * then its block scales: 16x16 tiles under NVFP4_2D (the forward and dX
 * read the same values), the forward's 1x16 blocks along `in` under
 * NVFP4_1D (dX's blocks down the columns come from the FP32 master). The
 * tensor's decode scale is the copy's kept scale. */
#include <stdio.h>

#include "formats/family.h"
#include "io/json.h"

static int serves(const amp_operand_format *f) {
    return f->format == AMP_FORMAT_NVFP4 &&
           (f->scaling == AMP_SCALING_NVFP4_1D || f->scaling == AMP_SCALING_NVFP4_2D);
}

static const char *lacks(const amp_backend *be) {
    const amp_scaled_ops *so = be->ops->scaled;
    return so && so->nvfp4_qdq && so->nvfp4_quantize && so->nvfp4_dequantize
               ? NULL
               : "NVFP4 ops (nvfp4_qdq, nvfp4_quantize, nvfp4_dequantize)";
}

static amp_nvfp4_desc weight_desc(const amp_scaled_slot *sl, int out, int in, int along_cols) {
    int blocks = sl->fmt.scaling == AMP_SCALING_NVFP4_2D ? AMP_NVFP4_TILES
                 : along_cols                            ? AMP_NVFP4_COLS
                                                         : AMP_NVFP4_ROWS;
    return (amp_nvfp4_desc){out, in, blocks, 0, 0, 0, 0};
}

static size_t weight_bytes(const amp_scaled_slot *sl, int out, int in) {
    amp_nvfp4_desc d = weight_desc(sl, out, in, 0);
    return ((size_t)out * (size_t)in + 1) / 2 +
           amp_nvfp4_block_count((size_t)d.rows, (size_t)d.cols, d.blocks);
}

static int cast(const amp_family_env *e, const amp_family_weight *w) {
    amp_scaled_slot *sl = e->sl;
    size_t n = (size_t)w->out * (size_t)w->in;
    amp_nvfp4_desc d = weight_desc(sl, w->out, w->in, 0);
    float s_dec;
    d.stochastic = (sl->flags & AMP_OPERAND_STOCHASTIC) != 0;
    if (d.stochastic) d.sr_key = amp_scaled_nvfp4_key(e->s, sl);
    if (AMP_SCALED(e->be, nvfp4_quantize, w->codes, (uint8_t *)w->codes + (n + 1) / 2, &s_dec,
                   w->master, &d, e->stats, e->nv) != 0)
        return -1;
    *w->scale = s_dec;
    sl->scale = 1.0f / s_dec;
    return 0;
}

/* An activation or gradient [rows, cols]: 1x16 blocks along the rows, or
 * down the columns (along_cols: the weight GEMM's operands, where the
 * slot's HADAMARD flag applies). */
static const float *operand(const amp_family_env *e, float *dst, const float *wide, int rows,
                            int cols, int along_cols, int count) {
    amp_scaled *s = e->s;
    amp_scaled_slot *sl = e->sl;
    uint32_t fl = sl->flags;
    amp_nvfp4_desc d = {rows, cols, along_cols ? AMP_NVFP4_COLS : AMP_NVFP4_ROWS,
                        (fl & AMP_OPERAND_STOCHASTIC) != 0, 0,
                        along_cols && (fl & AMP_OPERAND_HADAMARD), 0};
    if (d.stochastic) d.sr_key = amp_scaled_nvfp4_key(s, sl);
    if (d.hadamard) d.signs = amp_scaled_nvfp4_signs(s);
    float s_enc;
    if (AMP_SCALED(e->be, nvfp4_qdq, dst, wide, &d, count ? &s_enc : NULL,
                   count ? e->stats : NULL, count ? e->nv : NULL) != 0)
        return NULL;
    if (count) sl->scale = s_enc * amp_scaled_unit(s, sl); /* in unscaled units */
    return dst;
}

static const float *weight(const amp_family_env *e, float *dst, const amp_family_weight *w,
                           int along_cols) {
    amp_scaled_slot *sl = e->sl;
    size_t n = (size_t)w->out * (size_t)w->in;
    amp_nvfp4_desc d = weight_desc(sl, w->out, w->in, along_cols);
    int from_master = d.blocks == AMP_NVFP4_COLS; /* NVFP4_1D's dX blocks */
    d.stochastic = from_master && (sl->flags & AMP_OPERAND_STOCHASTIC);
    if (d.stochastic) d.sr_key = amp_scaled_nvfp4_key(e->s, sl);
    int rc = from_master ? AMP_SCALED(e->be, nvfp4_qdq, dst, w->master, &d, NULL, NULL, NULL)
                         : AMP_SCALED(e->be, nvfp4_dequantize, dst, w->codes,
                                      (const uint8_t *)w->codes + (n + 1) / 2, *w->scale, &d);
    return rc != 0 ? NULL : dst;
}

/* The backend's nvfp4_gemm: X quantized as the forward's operand (1x16
 * blocks along in, the slot's rounding, counted) into its codes and
 * scales in scratch 0; W's codes and scales are its working copy. 0 when
 * the backend has no nvfp4_gemm or X's codes and scales do not fit. */
static int gemm(const amp_family_env *ex, const amp_family_env *ew, const amp_family_weight *w,
                const amp_family_values *x, amp_gemm_desc *g) {
    amp_backend *be = ex->be;
    if (!amp_backend_supports(be, "nvfp4_gemm")) return 0;
    amp_scaled_slot *sx = ex->sl;
    size_t n = (size_t)g->m * (size_t)g->k;
    uint8_t *x_scales, *codes = n > ex->scratch_n ? NULL :
        amp_family_codes(ex, (n + 1) / 2,
                         amp_nvfp4_block_count((size_t)g->m, (size_t)g->k, AMP_NVFP4_ROWS),
                         &x_scales);
    if (!codes) return 0;
    const float *wide = amp_family_wide(be, ex->scratch[1], x, n);
    if (!wide) return -1;
    amp_nvfp4_desc d = {g->m, g->k, AMP_NVFP4_ROWS, (sx->flags & AMP_OPERAND_STOCHASTIC) != 0, 0,
                        0, 0};
    if (d.stochastic) d.sr_key = amp_scaled_nvfp4_key(ex->s, sx);
    amp_nvfp4_gemm_operands q = {x_scales, NULL, 0, 0.0f, *w->scale};
    if (AMP_SCALED(be, nvfp4_quantize, codes, x_scales, &q.a_s_dec, wide, &d, ex->stats,
                   ex->nv) != 0)
        return -1;
    sx->scale = 1.0f / q.a_s_dec;
    q.b_blocks = weight_desc(ew->sl, w->out, w->in, 0).blocks;
    q.b_scales = (const uint8_t *)w->codes + ((size_t)w->out * (size_t)w->in + 1) / 2;
    g->a = codes;
    g->b = w->codes;
    g->in_dtype = AMP_DTYPE_F32;
    return AMP_FUSED(be, nvfp4_gemm, g, &q) != 0 ? -1 : 1;
}

/* The telemetry's extras: the flags, the E4M3 block scales' range (blocks
 * with a nonzero amax) and, when stochastic, the mean rounding bias
 * sum(deq - x) / sum(|x|) of the rounded elements (~0 when unbiased). */
static void json(FILE *f, const amp_scaled_slot *sl) {
    const amp_nvfp4_stats *nv = &sl->nv_last;
    fprintf(f, ",\"stochastic\":%s,\"hadamard\":%s,\"blocks\":%llu,\"block_scale_min\":",
            (sl->flags & AMP_OPERAND_STOCHASTIC) ? "true" : "false",
            (sl->flags & AMP_OPERAND_HADAMARD) ? "true" : "false", nv->blocks);
    amp_json_num(f, nv->blocks ? nv->scale_min : 0.0);
    fputs(",\"block_scale_max\":", f);
    amp_json_num(f, nv->blocks ? nv->scale_max : 0.0);
    if (sl->flags & AMP_OPERAND_STOCHASTIC) {
        fputs(",\"sr_bias\":", f);
        amp_json_num(f, nv->sr_abs > 0.0 ? nv->sr_err / nv->sr_abs : 0.0);
        fprintf(f, ",\"sr_count\":%llu", nv->sr_count);
    }
}

const amp_format_family amp_family_nvfp4 = {
    .name = "nvfp4",
    .serves = serves,
    .blocked = 1,
    .nv_records = 1,
    .lacks = lacks,
    .weight_bytes = weight_bytes,
    .cast = cast,
    .operand = operand,
    .weight = weight,
    .gemm = gemm,
    .json = json,
};
