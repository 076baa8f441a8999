/* The row-wise part of causal self-attention: the reference rows. The CPU's
 * threaded rows (cpu_transformer.c) do the same operations in the same
 * order with the ISA kernels (vexp has expf's bits), which
 * test_transformer_threads checks bit for bit; the CUDA kernels do them one
 * warp per row, the max and the sums as warp butterflies (another order:
 * test_gpu_transformer's tolerances). The GEMMs around it are the
 * backend's batched ones (oneDNN / cuBLAS batched over batch x heads). Softmax runs in FP32 whatever the policy
 * (autocast's fp32 list); the logits (the QK^T GEMM's output) and the
 * probabilities (the PV GEMM's input) are rounding points into the
 * attention dtype dt, counted like every other rounding.
 *
 * A row is one query position t of one (batch, head): it sees keys 0..t.
 * Masked entries are exactly 0 in the probabilities and their gradients. */
#ifndef AMP_KERNELS_ATTENTION_H
#define AMP_KERNELS_ATTENTION_H

#include <math.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/store.h"

/* s[T]: the row's scaled logits in FP32 (the GEMM accumulator), rounded
 * into dt here (an overflow to inf makes the row NaN, as it does in
 * PyTorch). p: the row's probabilities rounded into dt, stored as dt values
 * in att (index base..base+T) and, when pw is non-NULL, as their FP32
 * widening in pw[T] (pw may alias s: each s[j] is read before pw[j] is
 * written). Counts both roundings into *t. */
static inline AMP_HD void amp_attn_softmax_row(void *att, size_t base, float *pw, float *s, int t_q,
                                               int T, int dt, amp_round_tally *t) {
    float mx = -INFINITY;
    for (int j = 0; j <= t_q; j++) {
        s[j] = amp_store(s, (size_t)j, dt, 1, s[j], t); /* the logits' rounding point */
        if (s[j] > mx) mx = s[j];
    }
    float sum = 0.0f;
    for (int j = 0; j <= t_q; j++) sum += expf(s[j] - mx);
    float inv = 1.0f / sum;
    for (int j = 0; j < T; j++) {
        float p = j <= t_q ? expf(s[j] - mx) * inv : 0.0f;
        float q = amp_store(att, base + (size_t)j, dt, 0, p, t);
        if (pw) pw[j] = q;
    }
}

/* Softmax backward of one row. dp[T]: the FP32 gradient of the
 * probabilities (dY V^T), rounded into dt first (the gradient of a dt
 * tensor); p: the saved probabilities (dt values in att from base). Writes
 * ds = p * (dp - sum_j p_j dp_j), rounded into dt, to dst (from dbase, as dt
 * values, or as their FP32 widening when wide != 0; dst may alias dp when
 * wide != 0 and dbase indexes the same row). */
static inline AMP_HD void amp_attn_softmax_backward_row(void *dst, size_t dbase, int wide,
                                                        float *dp, const void *att, size_t base,
                                                        int t_q, int T, int dt, amp_round_tally *t) {
    float dot = 0.0f;
    for (int j = 0; j <= t_q; j++) {
        dp[j] = amp_store(dp, (size_t)j, dt, 1, dp[j], t);
        dot += amp_load(att, base + (size_t)j, dt) * dp[j];
    }
    for (int j = 0; j < T; j++) {
        float ds = j <= t_q ? amp_load(att, base + (size_t)j, dt) * (dp[j] - dot) : 0.0f;
        amp_store(dst, dbase + (size_t)j, dt, wide, ds, t);
    }
}

/* FP32 workspace floats the attention ops need (forward and backward):
 * two [B, nh, T, T] score blocks and one [B, T, 3C] accumulator. */
static inline AMP_HD size_t amp_attention_workspace_floats(int B, int T, int C, int nh) {
    return 2 * (size_t)B * nh * T * T + (size_t)B * T * 3 * C;
}

#endif
