/* Scaler "hysteresis": Megatron-LM DynamicGradScaler
 * (megatron/core/optimizer/grad_scaler.py), the rule DeepSpeed's
 * DynamicLossScaler also follows, plus Apex's max_scale cap:
 *   inf:   growth_tracker = 0; hysteresis_tracker -= 1;
 *          if hysteresis_tracker <= 0: scale = max(scale*backoff, min_scale)
 *          (the tracker is not reset, so every further inf backs off too)
 *   clean: growth_tracker += 1; at growth_interval: growth_tracker = 0,
 *          hysteresis_tracker = hysteresis, scale = min(scale*growth, max_scale)
 * Every step with an inf is skipped, also the ones the hysteresis absorbs. */
#include <stdlib.h>

#include "amptrain/plugin.h"
#include "scaler_growth.h"

#define HYS_STATE_VERSION 1u
/* the tracker's head (magic, version, scale, growth_tracker), then
 * hysteresis_tracker, growth, backoff, interval, hysteresis, min_scale,
 * max_scale */
#define HYS_STATE_SIZE (AMP_SCALER_TRACKER_HEAD + 7 * 8)
static const char hys_magic[4] = {'a', 'm', 'p', 'H'};

typedef struct hys_state {
    const amp_host_api *host;
    amp_scaler_tracker t;
    /* Megatron keeps scale, factors and bounds in float32 tensors, so the
     * products are float32 x float32 rounded to float32; we match that. */
    float growth;
    float backoff;
    float min_scale;
    float max_scale;
    int64_t hysteresis_tracker; /* infs still tolerated before backing off */
    int64_t hysteresis;
} hys_state;

static int hys_init(const amp_host_api *host, void **self)
{
    amp_scaler_growth g = {65536.0, 2.0, 0.5, 1000};
    double min_scale = 1.0, max_scale = 16777216.0;
    int64_t hysteresis = 2;
    /* Read every key before failing so none is reported as unread. */
    int bad = amp_scaler_read_growth(host, &g);
    bad |= amp_scaler_read_int(host, "hysteresis", &hysteresis);
    bad |= amp_scaler_read_double(host, "min_scale", &min_scale);
    bad |= amp_scaler_read_double(host, "max_scale", &max_scale);
    if (bad)
        return -1;
    bad |= amp_scaler_check_growth_keys(host, &g);
    bad |= amp_scaler_check_count(host, "hysteresis", hysteresis);
    bad |= amp_scaler_check_scale(host, "min_scale", min_scale);
    bad |= amp_scaler_check_scale(host, "max_scale", max_scale);
    if (bad)
        return -1;
    double init = g.init_scale;
    /* Compare the float32 values actually used. */
    float fmin = (float)min_scale, fmax = (float)max_scale, finit = (float)init;
    if (fmax < fmin) {
        host->key_error(host->ctx, "max_scale", "got %g; must be >= min_scale (%g)", max_scale,
                        min_scale);
        return -1;
    }
    if (finit < fmin || finit > fmax) {
        host->key_error(host->ctx, "init_scale",
                        "got %g; must lie in [min_scale, max_scale] = [%g, %g]", init, min_scale,
                        max_scale);
        return -1;
    }
    hys_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "hysteresis scaler: out of memory");
        return -1;
    }
    s->host = host;
    s->t = (amp_scaler_tracker){finit, 0, g.growth_interval};
    s->growth = (float)g.growth_factor;
    s->backoff = (float)g.backoff_factor;
    s->min_scale = fmin;
    s->max_scale = fmax;
    s->hysteresis = hysteresis;
    s->hysteresis_tracker = hysteresis;
    *self = s;
    return 0;
}

static void hys_fini(void *self) { free(self); }

static double hys_get_scale(void *self) { return ((hys_state *)self)->t.scale; }

static int hys_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    hys_state *s = self;
    if (amp_scaler_update_begin(s->host, stats, skip, "hysteresis"))
        return -1;
    if (*skip) {
        amp_scaler_tracker_overflow(&s->t);
        if (s->hysteresis_tracker > 0) /* stops at 0: same decisions, no overflow */
            s->hysteresis_tracker -= 1;
        if (s->hysteresis_tracker <= 0)
            s->t.scale = fmaxf(s->t.scale * s->backoff, s->min_scale);
    } else if (amp_scaler_tracker_clean(&s->t)) {
        s->hysteresis_tracker = s->hysteresis;
        s->t.scale = fminf(s->t.scale * s->growth, s->max_scale);
    }
    return 0;
}

static int hys_state_save(void *self, void *buf, size_t cap, size_t *len)
{
    hys_state *s = self;
    int rc = amp_scaler_save_begin(s->host, buf, cap, len, HYS_STATE_SIZE);
    if (rc <= 0)
        return rc;
    unsigned char *p = buf;
    amp_scaler_tracker_put(p, hys_magic, HYS_STATE_VERSION, &s->t);
    amp_le_put_i64(p + 24, s->hysteresis_tracker);
    amp_le_put_f64(p + 32, s->growth);
    amp_le_put_f64(p + 40, s->backoff);
    amp_le_put_i64(p + 48, s->t.interval);
    amp_le_put_i64(p + 56, s->hysteresis);
    amp_le_put_f64(p + 64, s->min_scale);
    amp_le_put_f64(p + 72, s->max_scale);
    return 0;
}

/* A double that is exactly some float32 (all our fields were floats). */
static int hys_is_f32(double v) { return isfinite(v) && (double)(float)v == v; }

/* Restores the trackers, the scale and the hyper-parameters (checkpoint
 * wins, as in PyTorch; a difference from the config is logged). */
static int hys_state_load(void *self, const void *buf, size_t len)
{
    hys_state *s = self;
    const amp_host_api *h = s->host;
    if (amp_scaler_load_check(h, buf, len, HYS_STATE_SIZE, hys_magic, HYS_STATE_VERSION,
                              "hysteresis"))
        return -1;
    const unsigned char *p = buf;
    double scale;
    int64_t gt;
    amp_scaler_tracker_get(p, &scale, &gt);
    int64_t ht = amp_le_get_i64(p + 24);
    double growth = amp_le_get_f64(p + 32);
    double backoff = amp_le_get_f64(p + 40);
    int64_t interval = amp_le_get_i64(p + 48);
    int64_t hysteresis = amp_le_get_i64(p + 56);
    double mn = amp_le_get_f64(p + 64);
    double mx = amp_le_get_f64(p + 72);
    if (!hys_is_f32(scale) || !hys_is_f32(growth) || !hys_is_f32(backoff) || !hys_is_f32(mn) ||
        !hys_is_f32(mx) || !(mn > 0.0) || !(mx >= mn) || !(scale >= mn && scale <= mx) ||
        !(growth > 1.0) || !(backoff > 0.0 && backoff < 1.0) ||
        !amp_scaler_tracker_valid(gt, interval) || hysteresis < 1 || ht < 0 || ht > hysteresis) {
        h->error(h->ctx,
                 "hysteresis scaler state: invalid values (scale %g in [%g, %g], growth_tracker "
                 "%lld/%lld, hysteresis_tracker %lld/%lld, growth %g, backoff %g)",
                 scale, mn, mx, (long long)gt, (long long)interval, (long long)ht,
                 (long long)hysteresis, growth, backoff);
        return -1;
    }
    if ((float)growth != s->growth || (float)backoff != s->backoff || interval != s->t.interval ||
        hysteresis != s->hysteresis || (float)mn != s->min_scale || (float)mx != s->max_scale)
        h->log(h->ctx, AMP_LOG_WARN,
               "checkpoint hyper-parameters (growth_factor %g, backoff_factor %g, "
               "growth_interval %lld, hysteresis %lld, min_scale %g, max_scale %g) replace the "
               "config's",
               growth, backoff, (long long)interval, (long long)hysteresis, mn, mx);
    s->t = (amp_scaler_tracker){(float)scale, gt, interval};
    s->hysteresis_tracker = ht;
    s->growth = (float)growth;
    s->backoff = (float)backoff;
    s->hysteresis = hysteresis;
    s->min_scale = (float)mn;
    s->max_scale = (float)mx;
    return 0;
}

static const amp_scaler_vtable hys_vtable = {
    (uint32_t)sizeof(amp_scaler_vtable), hys_init, hys_fini, hys_get_scale, hys_update,
    hys_state_save, hys_state_load};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "hysteresis", "1.0.0",
                  "Megatron/DeepSpeed dynamic scaling: back off after `hysteresis` overflows, "
                  "bounded by min_scale/max_scale",
                  &hys_vtable);
