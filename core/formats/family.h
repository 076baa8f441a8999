/* core/formats/: the scaled number formats of GEMM operands, one file per
 * family (per-tensor FP8, MX block, NVFP4), their state (scaled.h) and the
 * table the layer kit calls through. A family may include the backend and
 * this folder; it never includes models/ (the kit includes it).
 *
 * A family is one interface: how an operand and a weight are quantized,
 * what it keeps (the weight's working copy: codes and scales, the slot's
 * scale), how its GEMM runs (the backend's op table: the CPU emulation or
 * CUDA alike) and what it counts (the slot's stats records, its own JSON
 * fields). The kit (models/layers/format.c) never asks which family it
 * holds. A new family is one file with one amp_format_family and one row
 * in families.c (docs/layers.md). */
#ifndef AMP_FORMATS_FAMILY_H
#define AMP_FORMATS_FAMILY_H

#include <stddef.h>
#include <stdio.h>

#include "backend/backend.h"
#include "formats/scaled.h"

/* Where a family's call works: the backend, the slot of the operand it
 * quantizes and that slot's records, two FP32 scratch arrays: scratch[0]
 * of codes_n elements (a GEMM's operand codes and block scales), scratch[1]
 * of scratch_n (free for the family's own use; the kit's composed GEMMs
 * read what a call writes into its `dst`). In a gemm call scratch[0] is
 * room for 1-byte codes only (codes_n < scratch_n: the kit packs the call
 * into one slot); elsewhere both hold scratch_n. */
typedef struct amp_family_env {
    amp_backend *be;
    amp_scaled *s;
    amp_scaled_slot *sl;
    amp_fp8_stats *stats;  /* the slot's step record (host, or the device's) */
    amp_nvfp4_stats *nv;   /* its NVFP4 record, same place */
    const char *who;       /* the model's name, for messages */
    float *scratch[2];
    size_t scratch_n;
    size_t codes_n;
    /* where a counted quantize of an input also keeps its codes and scale
     * for the weight gradient (NULL: nowhere; only a family with `kept`) */
    uint8_t *keep;
    float *keep_scale;
} amp_family_env;

/* A weight [out, in] (a Conv2d's [out, c*kh*kw]) and its working copy. */
typedef struct amp_family_weight {
    void *codes;          /* weight_bytes(out, in) bytes in the backend's memory */
    float *scale;         /* the scale kept with the codes (the slot's moves on) */
    const float *master;  /* the FP32 master values */
    int out, in;
} amp_family_weight;

/* An operand's values: FP32 at f32 (or p when store is F32), else 16-bit
 * values at p that widen exactly. */
typedef struct amp_family_values {
    const void *p;
    amp_dtype store;
    const float *f32;
} amp_family_values;

typedef struct amp_format_family {
    const char *name;
    /* 1 when its quantizers serve operands of format f (format, scaling) */
    int (*serves)(const amp_operand_format *f);
    /* 1 when its blocks lie along a GEMM's reduction dimension: an operand
     * is quantized again for each GEMM that reduces along another one */
    int blocked;
    /* the slots count into the NVFP4 records too (a device allocates them) */
    int nv_records;
    /* NULL when backend be runs it, else what it lacks (for the message
     * "backend 'B' has no <lacks>: layer ...") */
    const char *(*lacks)(const amp_backend *be);
    /* bytes of a weight's working copy */
    size_t (*weight_bytes)(const amp_scaled_slot *sl, int out, int in);
    /* the working copy from the master weights, counted into e->stats */
    int (*cast)(const amp_family_env *e, const amp_family_weight *w);
    /* wide [rows, cols] quantize-dequantized into dst (FP32; may be wide):
     * blocks along each row, or down each column with along_cols (a
     * family without blocks ignores it); count: add what it saw to the
     * records and take a fresh scale where the scaling says so (0: a
     * re-quantization of an operand already counted, with its scale).
     * dst, or NULL and be->err. */
    const float *(*operand)(const amp_family_env *e, float *dst, const float *wide, int rows,
                            int cols, int along_cols, int count);
    /* the weight's values in dst (FP32 [out, in]) for the forward (along
     * in), or with along_cols for dX (blocked families: blocks down its
     * columns, from the master, uncounted). dst, or NULL and be->err. */
    const float *(*weight)(const amp_family_env *e, float *dst, const amp_family_weight *w,
                           int along_cols);
    /* The forward GEMM on codes, where the backend has one (NULL: none):
     * g->acc [m, n] = X [m, k] . W^T with g's epilogue, X quantized and
     * counted (ex: X's slot, of this family) into ex's scratch, W's codes
     * its working copy (ew: W's slot). 1 when it ran, 0 when it does not
     * fit (the kit composes the FP32 GEMM), -1 and be->err. */
    int (*gemm)(const amp_family_env *ex, const amp_family_env *ew, const amp_family_weight *w,
                const amp_family_values *x, amp_gemm_desc *g);
    /* The values deq(codes) [n] into dst (FP32) of codes a counted
     * operand or gemm call kept in e->keep with *e->keep_scale: the same
     * values its operand gives again uncounted (NULL: the family keeps no
     * codes; a Linear saves its input as it came). dst, or NULL, be->err. */
    const float *(*kept)(const amp_family_env *e, float *dst, const uint8_t *codes, float scale,
                         size_t n);
    /* the family's own fields of a slot's telemetry object (NULL: none) */
    void (*json)(FILE *f, const amp_scaled_slot *sl);
} amp_format_family;

/* The family that serves f: the table's rows, then the registered ones;
 * NULL when none does. */
const amp_format_family *amp_format_family_of(const amp_operand_format *f);
/* Adds a family after the table's rows (a program embedding amptrain, a
 * test). 0, or -1 when the registry is full. Call before any model. */
int amp_format_family_register(const amp_format_family *f);

/* ---- helpers the families share (family_common.c) ---- */

/* x's values in FP32: x itself or widened into dst. NULL and be->err. */
const float *amp_family_wide(amp_backend *be, float *dst, const amp_family_values *x, size_t n);
/* Codes of code_bytes and nscales block scales in e->scratch[0] (codes_n
 * floats), the scales after the codes, 16-byte aligned: NULL when they do
 * not fit. */
uint8_t *amp_family_codes(const amp_family_env *e, size_t code_bytes, size_t nscales,
                          uint8_t **scales);

/* The per-tensor and MX families' fp8_gemm, for X of n elements: 0 when
 * the backend has none (the kit composes), -1 and be->err when X does not
 * fit the scratch, 1 when it may run. */
int amp_family_fp8_gemm_fits(const amp_family_env *ex, size_t n);
/* The backend's fp8_gemm on X's codes (a) and W's (b), q their formats
 * and scales: 1, or -1 and be->err. */
int amp_family_fp8_gemm_run(amp_backend *be, amp_gemm_desc *g, const void *a, const void *b,
                            const amp_fp8_gemm_operands *q);

#endif
