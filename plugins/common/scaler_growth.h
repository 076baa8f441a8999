/* The GradScaler growth/backoff core the "dynamic" and "hysteresis" scalers
 * share: their keys (init_scale, growth_factor, backoff_factor,
 * growth_interval), the float32 scale with its count of clean steps, the
 * tracker's rule, and the head of their state records. Each plugin keeps only
 * what differs: how a product is rounded, the bounds and the hysteresis.
 * Header-only, as scaler_common.h, so each plugin .so carries its own copy. */
#ifndef AMP_PLUGINS_SCALER_GROWTH_H
#define AMP_PLUGINS_SCALER_GROWTH_H

#include "scaler_common.h"

/* The keys, preset with the plugin's defaults, then read (every key, so none
 * is reported unread) and checked (every bad value, not just the first). */
typedef struct amp_scaler_growth {
    double init_scale, growth_factor, backoff_factor;
    int64_t growth_interval;
} amp_scaler_growth;

static inline int amp_scaler_read_growth(const amp_host_api *host, amp_scaler_growth *g)
{
    int bad = 0;
    bad |= amp_scaler_read_double(host, "init_scale", &g->init_scale);
    bad |= amp_scaler_read_double(host, "growth_factor", &g->growth_factor);
    bad |= amp_scaler_read_double(host, "backoff_factor", &g->backoff_factor);
    bad |= amp_scaler_read_int(host, "growth_interval", &g->growth_interval);
    return bad;
}

static inline int amp_scaler_check_growth_keys(const amp_host_api *host, const amp_scaler_growth *g)
{
    int bad = 0;
    bad |= amp_scaler_check_scale(host, "init_scale", g->init_scale);
    bad |= amp_scaler_check_growth(host, "growth_factor", g->growth_factor);
    bad |= amp_scaler_check_backoff(host, "backoff_factor", g->backoff_factor);
    bad |= amp_scaler_check_count(host, "growth_interval", g->growth_interval);
    return bad;
}

/* The scale lives in float32, as PyTorch and Megatron keep it in an fp32
 * tensor; growth_tracker counts the clean steps since the last change. */
typedef struct amp_scaler_tracker {
    float scale;
    int64_t growth_tracker;
    int64_t interval;
} amp_scaler_tracker;

/* A step with an inf/NaN: the clean run is over (the caller backs off). */
static inline void amp_scaler_tracker_overflow(amp_scaler_tracker *t) { t->growth_tracker = 0; }

/* A clean step: 1 when it completes growth_interval clean steps (the tracker
 * starts again and the caller grows the scale), else 0. */
static inline int amp_scaler_tracker_clean(amp_scaler_tracker *t)
{
    if (++t->growth_tracker < t->interval)
        return 0;
    t->growth_tracker = 0;
    return 1;
}

/* A tracker a checkpoint may hold: 0 .. interval - 1. */
static inline int amp_scaler_tracker_valid(int64_t growth_tracker, int64_t interval)
{
    return interval >= 1 && growth_tracker >= 0 && growth_tracker < interval;
}

/* Both records start magic, version, scale (f64), growth_tracker (i64); the
 * plugin's own fields follow at AMP_SCALER_TRACKER_HEAD. */
#define AMP_SCALER_TRACKER_HEAD (4 + 4 + 8 + 8)

static inline void amp_scaler_tracker_put(unsigned char *p, const char magic[4], uint32_t version,
                                          const amp_scaler_tracker *t)
{
    memcpy(p, magic, 4);
    amp_le_put_u32(p + 4, version);
    amp_le_put_f64(p + 8, (double)t->scale);
    amp_le_put_i64(p + 16, t->growth_tracker);
}

/* Reads the head's scale and tracker; magic and version are the caller's
 * amp_scaler_load_check. */
static inline void amp_scaler_tracker_get(const unsigned char *p, double *scale,
                                          int64_t *growth_tracker)
{
    *scale = amp_le_get_f64(p + 8);
    *growth_tracker = amp_le_get_i64(p + 16);
}

#endif
