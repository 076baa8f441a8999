/* The kit's private state and its planning calls, shared by the files of
 * models/layers/ and by no model. */
#ifndef AMP_LAYERS_KIT_STATE_H
#define AMP_LAYERS_KIT_STATE_H

#include "formats/family.h"
#include "image.h"
#include "layers.h"

/* A tensor's working copy: the master weights in dt, cast once per step. */
typedef struct amp_kit_copy {
    int on;
    amp_dtype dt;
    int f32_store; /* an FP32 array of dt's values (the GEMM is fed FP32) */
    int layer;     /* whose forward slot counts the cast */
    void *ptr;
    /* A per-tensor scaled FP8 copy (fp8_slot >= 0: m->scaled's slot index
     * of its (layer, WEIGHT)): ptr holds 1-byte codes, quantized with
     * fp8_scale (kept with the codes: the slot's scale may move on before
     * the next cast). Not written by the optimizer's fused cast. */
    int fp8_slot;
    float fp8_scale;
    int reads_master; /* a forward reads the FP32 master too (amp_kit_reads_master) */
} amp_kit_copy;

typedef struct amp_kit_rule {
    amp_init_kind kind;
    double a;
} amp_kit_rule;

/* Scratch the objects ask for at init (elements; the largest ask wins). */
typedef enum amp_kit_scratch {
    AMP_SCRATCH_OPERAND = 0, /* per slot: a converted GEMM operand (F32 and 16-bit) */
    AMP_SCRATCH_ACC,         /* FP32 convolution results (a Linear's go to operand slot 0) */
    AMP_SCRATCH_DW,          /* FP32 weight gradients */
    AMP_SCRATCH_DB,          /* FP32 bias gradients */
    AMP_SCRATCH_DY32,        /* a scaled Linear's FP32 dY; a bias's widened dY */
    AMP_SCRATCH_ATT_WS,      /* the attention ops' workspace */
    AMP_SCRATCH_ATT_DY,      /* attention: its output's gradient (its dtype) */
    AMP_SCRATCH_ATT_DQKV,    /* attention: the input's gradient, until the Linear before reads it */
    AMP_SCRATCH_CONV_WS,     /* bytes: the largest workspace a Conv2d's shape asked for */
    AMP_SCRATCH_COL,         /* a scaled Conv2d's column matrix [K, rows*p*q] */
    AMP_SCRATCH_ONES,        /* 1.0f each: a scaled Conv2d's bias as a GEMM (amp_kit_ones) */
    AMP_SCRATCH_COUNT
} amp_kit_scratch;

struct amp_kit {
    int ntensors;
    amp_kit_copy *copy; /* [ntensors] */
    amp_kit_rule *rule; /* [ntensors] */
    size_t need[AMP_SCRATCH_COUNT];
    float *op_f32[2];
    void *op_16[2];
    /* a plain Linear plans its operand slots one by one (amp_kit_need_slot):
     * [slot][0] FP32 elements, [slot][1] 16-bit ones; need[OPERAND] is the
     * ask of the rest, for every slot in both kinds */
    size_t slot_need[2][2];
    size_t cap32[2], cap16[2]; /* elements op_f32[i] and op_16[i] hold */
    int att_operand;           /* an attention converts its qkv in operand slot 0 */
    float *scratch[AMP_SCRATCH_COUNT]; /* FP32-sized; [OPERAND] and [CONV_WS] unused */
    void *conv_ws;                     /* need[AMP_SCRATCH_CONV_WS] bytes */
    /* the optimizer's fused cast: its counts per layer, and whether the
     * copies hold the last step's weights (used once by the next cast) */
    amp_round_count *cast_cnt;
    int cast_fresh;
    int ones_ready; /* scratch[AMP_SCRATCH_ONES] holds its ones */
};

void amp_kit_need(amp_model *m, amp_kit_scratch what, size_t n);
/* A plain Linear's operand of n elements converted in slot `slot` for a
 * GEMM fed `feed` (a 16-bit feed may widen on the way: both kinds). */
void amp_kit_need_slot(amp_model *m, int slot, amp_dtype feed, size_t n);
/* Lays out the operand slots and the FP32 scratch in the workspace
 * (kit_scratch.c): what no two calls hold at once shares its bytes. */
void amp_kit_layout_scratch(amp_model *m);
/* Gives tensor t a working copy in dt (nothing for an FP32 dt: the master
 * weights serve), counted in layer; f32_store as amp_kit_copy. */
void amp_kit_add_copy(amp_model *m, int t, amp_dtype dt, int f32_store, int layer);
/* Gives tensor t a per-tensor FP8 working copy quantized with the scale of
 * m->scaled's slot index `slot` (its layer's WEIGHT operand). */
void amp_kit_add_fp8_copy(amp_model *m, int t, int slot, int layer);
/* Tensor t is read from the FP32 master weights (amp_kit_master) by a
 * layer's forward, whatever copy another layer gives it. */
void amp_kit_reads_master(amp_model *m, int t);
/* What the GEMMs read for tensor t: its working copy, or the master. */
amp_array amp_kit_weight(amp_model *m, int t);
/* need[AMP_SCRATCH_ONES] FP32 ones (uploaded by the first call); NULL and
 * be->err on failure. */
const float *amp_kit_ones(amp_model *m);

/* ---- a Conv2d with scaled operands (conv2d_scaled.c) ---- */
/* Its working copies and scratch, once C's shape and fp8[] are set. */
void amp_conv2d_scaled_plan(amp_model *m, amp_conv2d *C, int rows);
int amp_conv2d_scaled_forward(amp_model *m, const amp_conv2d *C, void *out, amp_array x, int rows);
int amp_conv2d_scaled_backward(amp_model *m, const amp_conv2d *C, float *dx, const float *dy,
                               int rows, int accumulate);

/* ---- the number formats (format.c) ---- */
/* The dtype a GEMM of dtype gemm is fed: gemm, or F32 where the backend
 * widens gemm's inputs anyway (then arrays of gemm's values, widened once). */
amp_dtype amp_format_feed(const amp_model *m, amp_dtype gemm);
/* 1 when `v` (store, vals) is not already what a feed/gemm GEMM reads. */
int amp_format_converts(amp_dtype feed, amp_dtype gemm, amp_dtype store, amp_dtype vals);
/* 1 when a dY stored in out_dt reaches a feed/gemm GEMM only through an
 * operand conversion (an FP32 feed of out_dt values reads the FP32 copy
 * every dY of the kit carries: amp_linear_grad_in, act_backward). */
int amp_format_dy_converts(amp_dtype feed, amp_dtype gemm, amp_dtype out_dt);
/* v as an operand of a feed/gemm GEMM: v itself, or converted into
 * scratch slot `slot`. NULL and be->err on failure. */
const void *amp_format_operand(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                               const amp_array *v, size_t n);
/* The same, counting the rounding into cnt (NULL: uncounted). */
const void *amp_format_operand_counted(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                                       const amp_array *v, size_t n, amp_round_count *cnt);
/* The same, converted `at` elements into the slot (past an operand the
 * same GEMM reads from its start). */
const void *amp_format_operand_at(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                                  size_t at, const amp_array *v, size_t n, amp_round_count *cnt);
/* Where a second operand starts in a slot after one of n elements (256-byte aligned). */
static inline size_t amp_format_after(size_t n) { return (n + 63) & ~(size_t)63; }
/* FP32 elements kept for a family GEMM's codes and block scales of n
 * values at the start of slot 0 (FP8: n bytes; MX: n + n/32; NVFP4:
 * n/2 + n/16; each with up to 16 bytes of alignment): n + n/8 + 64 bytes.
 * Its widened x follows them. */
static inline size_t amp_format_codes_room(size_t n) { return amp_format_after(n / 4 + n / 32 + 16); }
/* The slot index of (layer, role) in m->scaled, -1 when that operand is not
 * scaled; -2 with be->err (naming `what`, the layer kind) for a scaling
 * the kit does not know. */
int amp_format_scaled_slot(amp_model *m, int layer, int role, const char *what);
/* 1 when slot index `slot` (-1: none) is in a family whose blocks lie along
 * a GEMM's reduction dimension (quantized again for each GEMM). */
int amp_format_scaled_blocked(const amp_model *m, int slot);
/* v [rows, cols] quantize-dequantized into operand scratch `scratch` (FP32)
 * by slot index `slot`'s family (amp_format_family.operand: blocks along
 * each row, or down each column with along_cols; count adds what the
 * quantize saw to the slot's step stats, 0 for a re-quantization of an
 * operand already counted, with the scale it had). NULL and be->err. */
const float *amp_format_scaled_operand(amp_model *m, int slot, int scratch, const amp_array *v,
                                       int rows, int cols, int along_cols, int count);
/* The same, `at` elements into the scratch (past an operand the same GEMM reads). */
const float *amp_format_scaled_operand_at(amp_model *m, int slot, int scratch, size_t at,
                                          const amp_array *v, int rows, int cols, int along_cols,
                                          int count);
/* The forward's GEMM on codes, X and W in one family that has one
 * (amp_format_family.gemm): y_acc [rows, out] = X [rows, in] . W^T, X
 * quantized and counted into operand slot 0 (widened past its codes
 * when 16-bit: amp_format_codes_room), W the working copy of tensor t; g carries the epilogue. 1
 * when it ran, 0 when the operands do not fit it (the caller composes),
 * -1 and be->err on failure. */
int amp_format_fp8_gemm(amp_model *m, int x_slot, int t, const amp_array *x, amp_gemm_desc *g,
                        const amp_format_keep *keep);
/* 1 when slot `slot`'s family keeps a counted input's codes and scale
 * for the weight gradient (amp_format_family.kept). */
int amp_format_scaled_keeps(const amp_model *m, int slot);
/* The forward's input v [rows, cols] of slot `slot` as
 * amp_format_scaled_operand (counted), its codes and scale also into keep
 * (NULL: not kept) where the slot's family keeps them. */
const float *amp_format_scaled_input(amp_model *m, int slot, int scratch, const amp_array *v,
                                     int rows, int cols, const amp_format_keep *keep);
/* The kept codes of n values as FP32 in operand scratch `scratch`, `at`
 * elements in: the values the uncounted operand would give again. */
const float *amp_format_scaled_kept(amp_model *m, int slot, int scratch, size_t at,
                                    const amp_format_keep *keep, size_t n);
/* Tensor t's scaled working copy [out, in] as FP32 values in operand
 * scratch `scratch` (amp_format_family.weight: along_cols for dX). */
const float *amp_format_scaled_weight(amp_model *m, int t, int scratch, int along_cols);
/* Bytes of tensor t's scaled working copy (its family's). */
size_t amp_format_scaled_bytes(const amp_model *m, int t, int slot);
/* The working copy of tensor t from the master weights, counted. */
int amp_format_cast(amp_model *m, amp_kit_copy *c, const float *master, size_t n);

#endif
