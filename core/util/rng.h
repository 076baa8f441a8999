/* amp_rng: the project's one deterministic random number generator
 * (parameter init, synthetic data, shuffling). xoshiro256** seeded through
 * splitmix64, as recommended by its authors (Blackman & Vigna). The integer
 * and uniform streams are bit-identical on every platform; amp_rng_normal
 * goes through libm's log/sqrt/cos, so it is bit-identical for a given libm.
 * No state hides outside the struct (amp_rng_normal caches nothing). */
#ifndef AMP_RNG_H
#define AMP_RNG_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amp_rng {
    uint64_t s[4];
} amp_rng;

/* One splitmix64 step: advances *x and returns a well-mixed 64-bit value. */
static inline uint64_t amp_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline void amp_rng_seed(amp_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = amp_splitmix64(&x);
    /* splitmix64 never yields four zero words in a row, but be explicit:
     * the all-zero state is xoshiro's one fixed point. */
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
        r->s[0] = 1;
}

/* Independent streams from one user seed: e.g. (seed, epoch) for shuffling,
 * (seed, tag) for a dataset split. The stream is mixed before combining so
 * that nearby (seed, stream) pairs do not give overlapping states. */
static inline void amp_rng_seed_stream(amp_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t a = seed, b = stream ^ 0x5DEECE66DULL;
    uint64_t ka = amp_splitmix64(&a);
    uint64_t kb = amp_splitmix64(&b);
    amp_rng_seed(r, ka ^ (kb * 0xD1342543DE82EF95ULL));
}

static inline uint64_t amp_rng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
static inline uint64_t amp_rng_next(amp_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = amp_rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = amp_rng_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1): the top 53 bits, so every value is an exact double. */
static inline double amp_rng_uniform(amp_rng *r)
{
    return (double)(amp_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Standard normal by Box-Muller, one value per call (the sine half is
 * dropped so the struct stays the whole state). u1 is in (0, 1] so log()
 * never sees 0. */
static inline double amp_rng_normal(amp_rng *r)
{
    double u1 = 1.0 - amp_rng_uniform(r);
    double u2 = amp_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

/* Uniform integer in [0, n), unbiased: rejects the low 2^64 mod n values so
 * the remaining range is a multiple of n. n == 0 returns 0. */
static inline uint64_t amp_rng_below(amp_rng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    uint64_t threshold = (0 - n) % n; /* == 2^64 mod n */
    for (;;) {
        uint64_t x = amp_rng_next(r);
        if (x >= threshold)
            return x % n;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* AMP_RNG_H */
