/* nvfp4.h's amp_hadamard16 down every column of 16 rows of C values, as a
 * fast Walsh-Hadamard transform on strips of columns: a strip's 16 rows
 * held in 16 vector registers (AVX-512: 16 columns, AVX2: 8), the signs
 * a sign-bit flip, the four butterfly stages vector adds and subtracts,
 * the * 0.25 on the way out. Per column these are amp_hadamard16's own
 * operations on the same values, so the same bits on every path; the
 * generic path and the last columns run the scalar form. Part of
 * cpu_nvfp4_body.h (compiled once per path). y may be x. */
#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define NV_WHT_W 16
#define NV_VEC __m512
#define NV_LOAD _mm512_loadu_ps
#define NV_STORE _mm512_storeu_ps
#define NV_ADD _mm512_add_ps
#define NV_SUB _mm512_sub_ps
#define NV_MUL _mm512_mul_ps
#define NV_SET1 _mm512_set1_ps
#define NV_NEG(v) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), \
                                                       _mm512_set1_epi32((int)0x80000000u)))
#elif defined(__AVX2__)
#define NV_WHT_W 8
#define NV_VEC __m256
#define NV_LOAD _mm256_loadu_ps
#define NV_STORE _mm256_storeu_ps
#define NV_ADD _mm256_add_ps
#define NV_SUB _mm256_sub_ps
#define NV_MUL _mm256_mul_ps
#define NV_SET1 _mm256_set1_ps
#define NV_NEG(v) _mm256_xor_ps(v, _mm256_set1_ps(-0.0f))
#endif

static void nv_wht16(float *y, const float *x, size_t C, uint32_t signs) {
    size_t c = 0;
#ifdef NV_WHT_W
    for (; c + NV_WHT_W <= C; c += NV_WHT_W) {
        NV_VEC t[16];
        for (int k = 0; k < 16; k++) {
            NV_VEC v = NV_LOAD(x + (size_t)k * C + c);
            t[k] = ((signs >> k) & 1u) ? NV_NEG(v) : v;
        }
        for (int h = 1; h < 16; h <<= 1)
            for (int i = 0; i < 16; i += 2 * h)
                for (int j = i; j < i + h; j++) {
                    NV_VEC a = t[j], b = t[j + h];
                    t[j] = NV_ADD(a, b);
                    t[j + h] = NV_SUB(a, b);
                }
        for (int k = 0; k < 16; k++) NV_STORE(y + (size_t)k * C + c, NV_MUL(t[k], NV_SET1(0.25f)));
    }
#undef NV_WHT_W
#undef NV_VEC
#undef NV_LOAD
#undef NV_STORE
#undef NV_ADD
#undef NV_SUB
#undef NV_MUL
#undef NV_SET1
#undef NV_NEG
#endif
    for (; c < C; c++) { /* the scalar form, in place in y */
        if (y != x)
            for (int k = 0; k < 16; k++) y[(size_t)k * C + c] = x[(size_t)k * C + c];
        amp_hadamard16(y + c, C, signs);
    }
}
