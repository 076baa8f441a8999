/* The attention's input for Llama: separate q [N, nh*hs], k and v [N,
 * nkv*hs] packed into the fused qkv [N, 3C] the attention op reads, with
 * rotary position embeddings on q and k (Hugging Face Llama's rotate-half
 * convention: pairs (i, i + hs/2) turn by t * theta^(-2j/hs), j = i mod
 * hs/2) and each of the nkv key/value heads repeated for nh/nkv query heads
 * (grouped-query attention; HF's repeat_kv). The backward turns the
 * gradients back and sums each repeated head's copies in head order. Shared
 * by the CPU loops and the CUDA kernels. */
#ifndef AMP_KERNELS_ROPE_H
#define AMP_KERNELS_ROPE_H

#include <math.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/store.h"

/* cos and sin of pair j at position t, in FP32 as HF's
 * LlamaRotaryEmbedding computes them: inv_freq = 1 / theta^((2j)/hs). */
static inline AMP_HD void amp_rope_cs(int t, int j, int hs, float theta, float *c, float *s) {
    float inv = 1.0f / powf(theta, (float)(2 * j) / (float)hs);
    float a = (float)t * inv;
    *c = cosf(a);
    *s = sinf(a);
}

/* Element i of one head (hs values of dt at src) turned to position t,
 * x*cos + rotate_half(x)*sin (dir = 1), or the transpose of that turn
 * (dir = -1: the gradient before the turn from the one after it). */
static inline AMP_HD float amp_rope_turn(const void *src, int dt, int i, int hs, int t,
                                         float theta, float dir) {
    int half = hs / 2, j = i < half ? i : i - half;
    float c, s;
    amp_rope_cs(t, j, hs, theta, &c, &s);
    float x = amp_load(src, (size_t)i, dt), y = amp_load(src, (size_t)(i < half ? i + half : j), dt);
    float ys = dir * (y * s); /* exact: dir is +-1 */
    return i < half ? x * c - ys : x * c + ys;
}

/* A head's values of the packed row: rope ? turned : as they are. */
static inline AMP_HD float amp_qkv_head_value(const void *src, int dt, int i, int hs, int t,
                                              int rope, float theta) {
    return rope ? amp_rope_turn(src, dt, i, hs, t, theta, 1.0f) : amp_load(src, (size_t)i, dt);
}

/* Element e of qkv (dt) [N, 3C], C = nh*hs, rows of T positions. */
static inline AMP_HD void amp_qkv_pack_elem(void *qkv, int dt, const void *q, int qdt,
                                            const void *k, int kdt, const void *v, int vdt,
                                            size_t e, int T, int nh, int nkv, int hs, int rope,
                                            float theta, amp_round_tally *tally) {
    size_t C = (size_t)nh * hs, Ckv = (size_t)nkv * hs, r = e / (3 * C);
    int c = (int)(e % (3 * C)), part = c / (int)C, h = (c % (int)C) / hs, i = c % hs;
    int t = (int)(r % (size_t)T), kh = h / (nh / nkv);
    float val;
    if (part == 0)
        val = amp_qkv_head_value((const char *)q + (r * C + (size_t)h * hs) * (qdt == AMP_DTYPE_F32 ? 4 : 2), qdt,
                                 i, hs, t, rope, theta);
    else if (part == 1)
        val = amp_qkv_head_value((const char *)k + (r * Ckv + (size_t)kh * hs) * (kdt == AMP_DTYPE_F32 ? 4 : 2),
                                 kdt, i, hs, t, rope, theta);
    else
        val = amp_load(v, r * Ckv + (size_t)kh * hs + i, vdt);
    amp_store(qkv, e, dt, 0, val, tally);
}

/* Element e of the gradients: e < N*C is dq's, then dk's and dv's (N*Ckv
 * each), FP32, from dqkv (dt). */
static inline AMP_HD void amp_qkv_unpack_elem(float *dq, float *dk, float *dv, const void *dqkv,
                                              int dt, size_t e, size_t N, int T, int nh, int nkv,
                                              int hs, int rope, float theta) {
    size_t C = (size_t)nh * hs, Ckv = (size_t)nkv * hs, es = dt == AMP_DTYPE_F32 ? 4 : 2;
    int rep = nh / nkv;
    if (e < N * C) {
        size_t r = e / C;
        int h = (int)(e % C) / hs, i = (int)(e % C) % hs, t = (int)(r % (size_t)T);
        const char *d = (const char *)dqkv + (r * 3 * C + (size_t)h * hs) * es;
        dq[e] = rope ? amp_rope_turn(d, dt, i, hs, t, theta, -1.0f) : amp_load(d, (size_t)i, dt);
        return;
    }
    e -= N * C;
    int part = e < N * Ckv ? 1 : 2;
    if (part == 2) e -= N * Ckv;
    size_t r = e / Ckv;
    int kh = (int)(e % Ckv) / hs, i = (int)(e % Ckv) % hs, t = (int)(r % (size_t)T);
    float sum = 0.0f;
    for (int g = 0; g < rep; g++) {
        const char *d = (const char *)dqkv + (r * 3 * C + part * C + (size_t)(kh * rep + g) * hs) * es;
        sum += part == 1 && rope ? amp_rope_turn(d, dt, i, hs, t, theta, -1.0f)
                                 : amp_load(d, (size_t)i, dt);
    }
    (part == 1 ? dk : dv)[e] = sum;
}

#endif
