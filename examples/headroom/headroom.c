/* amp_scaler_headroom: a loss scale aimed from the observed gradients.
 *
 * GradScaler ("dynamic") finds its scale by trial and error: it grows the
 * scale until a step overflows, skips that step, and halves. `headroom`
 * instead reads the largest |gradient| of each clean step and sets the next
 * scale so that this gradient, scaled, sits `headroom` binades (powers of
 * two) under the largest finite value of the narrowest gradient dtype
 * (stats->dtype_max, 65504 for FP16):
 *
 *   scale = 2^(floor(log2(dtype_max / grad_max_abs)) - headroom)
 *
 * clamped to [min_scale, max_scale]. stats->grad_max_abs is of the UNSCALED
 * gradients (the host divides by the scale before measuring), so the scaled
 * maximum this step was grad_max_abs * scale. A power of two keeps scaling
 * exact. The margin covers gradients growing between two steps and the
 * activation gradients, which the stats do not measure.
 *
 *   - found_inf (a gradient overflowed): the maximum over the finite values
 *     says nothing about the one that overflowed, so the step is skipped
 *     (the host would skip it anyway) and the scale drops `backoff_binades`;
 *     the next clean step re-aims it from its own maximum.
 *   - every gradient zero (grad_max_abs == 0): either all of them flushed to
 *     zero, meaning the scale is far too small, or the model has no
 *     gradient; either way the scale grows `backoff_binades` (up to
 *     max_scale) and the step is not skipped.
 *
 * Keys: headroom (4), backoff_binades (4), init_scale (65536),
 * min_scale (2^-24), max_scale (2^64).
 *
 * Build against an installed amptrain:
 *   cmake -S . -B build -DCMAKE_PREFIX_PATH=<amptrain prefix>
 *   cmake --build build */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "amptrain/plugin.h"

/* state_save's record: magic, then five doubles (host byte order). */
#define HR_MAGIC "hdr1"
#define HR_STATE_SIZE (4 + 5 * 8)

typedef struct hr_state {
    const amp_host_api *host;
    double scale;
    double headroom;  /* binades under dtype_max */
    double backoff;   /* binades dropped on overflow, gained on all-zero gradients */
    double min_scale, max_scale;
} hr_state;

static double clamp(const hr_state *s, double v)
{
    return v < s->min_scale ? s->min_scale : v > s->max_scale ? s->max_scale : v;
}

/* Every key is read before any is checked, so none is reported as unread. */
static int hr_init(const amp_host_api *host, void **self)
{
    int64_t headroom = 4, backoff = 4;
    double init_scale = 65536.0, min_scale = ldexp(1.0, -24), max_scale = ldexp(1.0, 64);
    int bad = host->get_int(host->ctx, "headroom", &headroom) < 0;
    bad |= host->get_int(host->ctx, "backoff_binades", &backoff) < 0;
    bad |= host->get_double(host->ctx, "init_scale", &init_scale) < 0;
    bad |= host->get_double(host->ctx, "min_scale", &min_scale) < 0;
    bad |= host->get_double(host->ctx, "max_scale", &max_scale) < 0;
    if (bad)
        return 1;
    if (headroom < 0 || headroom > 30) {
        host->key_error(host->ctx, "headroom", "got %lld; must be 0..30 binades",
                        (long long)headroom);
        return 1;
    }
    if (backoff < 1 || backoff > 30) {
        host->key_error(host->ctx, "backoff_binades", "got %lld; must be 1..30",
                        (long long)backoff);
        return 1;
    }
    /* The host keeps scale * loss_weight in float32: stay within its range. */
    if (!(min_scale > 0.0) || !(min_scale < 1e38)) {
        host->key_error(host->ctx, "min_scale", "got %g; must be > 0 and < 1e38", min_scale);
        return 1;
    }
    if (!(max_scale >= min_scale) || !(max_scale < 1e38)) {
        host->key_error(host->ctx, "max_scale", "got %g; must be >= min_scale (%g) and < 1e38",
                        max_scale, min_scale);
        return 1;
    }
    if (!(init_scale >= min_scale && init_scale <= max_scale)) {
        host->key_error(host->ctx, "init_scale", "got %g; must lie in [min_scale, max_scale] = "
                        "[%g, %g]", init_scale, min_scale, max_scale);
        return 1;
    }
    hr_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "headroom: out of memory");
        return 1;
    }
    s->host = host;
    s->scale = init_scale;
    s->headroom = (double)headroom;
    s->backoff = (double)backoff;
    s->min_scale = min_scale;
    s->max_scale = max_scale;
    *self = s;
    return 0;
}

static void hr_fini(void *self) { free(self); }

static double hr_get_scale(void *self) { return ((hr_state *)self)->scale; }

static int hr_update(void *self, const amp_scaler_stats *st, int *skip)
{
    hr_state *s = self;
    if (st->found_inf) {
        *skip = 1;
        s->scale = clamp(s, ldexp(s->scale, -(int)s->backoff));
        return 0;
    }
    *skip = 0;
    if (!(st->grad_max_abs > 0.0)) {
        s->scale = clamp(s, ldexp(s->scale, (int)s->backoff));
        return 0;
    }
    /* floor(log2(dtype_max / max|g|)) exactly: frexp gives m * 2^e, m in [0.5, 1). */
    int e;
    frexp(st->dtype_max / st->grad_max_abs, &e);
    s->scale = clamp(s, ldexp(1.0, e - 1 - (int)s->headroom));
    return 0;
}

static int hr_state_save(void *self, void *buf, size_t cap, size_t *len)
{
    hr_state *s = self;
    *len = HR_STATE_SIZE;
    if (!buf)
        return 0;
    if (cap < HR_STATE_SIZE) {
        s->host->error(s->host->ctx, "headroom: state needs %d bytes, got %zu", HR_STATE_SIZE, cap);
        return 1;
    }
    const double v[5] = {s->scale, s->headroom, s->backoff, s->min_scale, s->max_scale};
    memcpy(buf, HR_MAGIC, 4);
    memcpy((unsigned char *)buf + 4, v, sizeof v);
    return 0;
}

/* The config's keys stay in force on resume; only the scale is restored,
 * and it must be one the config allows. */
static int hr_state_load(void *self, const void *buf, size_t len)
{
    hr_state *s = self;
    double v[5];
    if (len != HR_STATE_SIZE || memcmp(buf, HR_MAGIC, 4) != 0) {
        s->host->error(s->host->ctx, "headroom: not a headroom scaler state (%zu bytes)", len);
        return 1;
    }
    memcpy(v, (const unsigned char *)buf + 4, sizeof v);
    if (!(v[0] >= s->min_scale && v[0] <= s->max_scale)) {
        s->host->error(s->host->ctx, "headroom: saved scale %g lies outside [min_scale, max_scale] "
                       "= [%g, %g]", v[0], s->min_scale, s->max_scale);
        return 1;
    }
    s->scale = v[0];
    return 0;
}

static const amp_scaler_vtable hr_vtable = {(uint32_t)sizeof(amp_scaler_vtable), hr_init, hr_fini,
                                            hr_get_scale, hr_update, hr_state_save, hr_state_load};

AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_SCALER, "headroom", "1.0.0",
                            "scale = the largest gradient kept `headroom` binades under the "
                            "dtype's max; back off on overflow",
                            "headroom=4 backoff_binades=4 init_scale=65536 min_scale=2^-24 "
                            "max_scale=2^64",
                            &hr_vtable);
