/* Helpers shared by the built-in loss scalers: config reading/validation, the
 * start of every update and the little-endian state record. Header-only
 * (static inline) so each plugin .so carries its own copy and nothing links
 * the core. The GradScaler growth/backoff core is scaler_growth.h. */
#ifndef AMP_PLUGINS_SCALER_COMMON_H
#define AMP_PLUGINS_SCALER_COMMON_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "amptrain/plugin.h"

/* Reads an optional double key; *v holds the default on entry. 0 ok, -1 when
 * the value is malformed (the host has recorded the error). */
static inline int amp_scaler_read_double(const amp_host_api *host, const char *key, double *v)
{
    return host->get_double(host->ctx, key, v) < 0 ? -1 : 0;
}

static inline int amp_scaler_read_int(const amp_host_api *host, const char *key, int64_t *v)
{
    return host->get_int(host->ctx, key, v) < 0 ? -1 : 0;
}

/* key_error messages leave the key out: the host prefixes file:line and the
 * key. */

/* A scale is kept in float32 (as PyTorch/Megatron keep it in an fp32
 * tensor), so it must be finite and > 0 both as given and once rounded. */
static inline int amp_scaler_check_scale(const amp_host_api *host, const char *key, double v)
{
    float f = (float)v;
    /* The host unscales by float(1/scale): that must be finite too, or the
     * gradients become inf/NaN (the host refuses such a scale at step 0). */
    float inv = (float)(1.0 / (double)f);
    if (!isfinite(v) || v <= 0.0 || !isfinite(f) || f <= 0.0f || !isfinite(inv)) {
        host->key_error(host->ctx, key,
                        "got %g; must be a finite number that fits float32 with a reciprocal "
                        "that does too (%g .. %g)",
                        v, 1.0 / (double)FLT_MAX, (double)FLT_MAX);
        return -1;
    }
    return 0;
}

static inline int amp_scaler_check_growth(const amp_host_api *host, const char *key, double v)
{
    if (!isfinite(v) || !(v > 1.0)) {
        host->key_error(host->ctx, key, "got %g; must be a finite number > 1 (e.g. 2.0)", v);
        return -1;
    }
    return 0;
}

static inline int amp_scaler_check_backoff(const amp_host_api *host, const char *key, double v)
{
    if (!(v > 0.0 && v < 1.0)) {
        host->key_error(host->ctx, key, "got %g; must lie strictly between 0 and 1 (e.g. 0.5)", v);
        return -1;
    }
    return 0;
}

static inline int amp_scaler_check_count(const amp_host_api *host, const char *key, int64_t v)
{
    if (v < 1) {
        host->key_error(host->ctx, key, "got %lld; must be an integer >= 1", (long long)v);
        return -1;
    }
    return 0;
}

/* True when the stats struct is large enough to carry found_inf. */
static inline int amp_scaler_stats_ok(const amp_scaler_stats *st)
{
    return st && st->struct_size >= offsetof(amp_scaler_stats, found_inf) + sizeof(st->found_inf);
}

/* Every scaler's update starts here: refuses a call without stats or skip
 * (-1, the host has the error naming scaler `who`), else sets *skip when the
 * step found an inf/NaN and returns 0. */
static inline int amp_scaler_update_begin(const amp_host_api *host, const amp_scaler_stats *st,
                                          int *skip, const char *who)
{
    if (!amp_scaler_stats_ok(st) || !skip) {
        host->error(host->ctx, "%s scaler: update called without stats/skip", who);
        return -1;
    }
    *skip = st->found_inf != 0;
    return 0;
}

/* ---- little-endian record: fixed byte order so checkpoints move between
 * machines; doubles travel as their IEEE-754 bit patterns. */

static inline void amp_le_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t amp_le_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline void amp_le_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t amp_le_get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static inline void amp_le_put_f64(unsigned char *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    amp_le_put_u64(p, u);
}

static inline double amp_le_get_f64(const unsigned char *p)
{
    uint64_t u = amp_le_get_u64(p);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static inline void amp_le_put_i64(unsigned char *p, int64_t v) { amp_le_put_u64(p, (uint64_t)v); }
static inline int64_t amp_le_get_i64(const unsigned char *p) { return (int64_t)amp_le_get_u64(p); }

/* Common save prologue: size query or capacity check. Returns 1 when the
 * caller should write the record, 0 when only the size was asked, -1 on a
 * too-small buffer. */
static inline int amp_scaler_save_begin(const amp_host_api *host, void *buf, size_t cap,
                                        size_t *len, size_t need)
{
    if (!len) {
        host->error(host->ctx, "state_save: len must not be NULL");
        return -1;
    }
    *len = need;
    if (!buf)
        return 0;
    if (cap < need) {
        host->error(host->ctx, "state_save: buffer holds %zu bytes, the state needs %zu", cap,
                    need);
        return -1;
    }
    return 1;
}

/* Common load prologue: size, magic and version. 0 ok, -1 rejected. */
static inline int amp_scaler_load_check(const amp_host_api *host, const void *buf, size_t len,
                                        size_t need, const char magic[4], uint32_t version,
                                        const char *who)
{
    const unsigned char *p = (const unsigned char *)buf;
    if (!buf || len != need) {
        host->error(host->ctx,
                    "%s scaler state: got %zu bytes, expected %zu (checkpoint from another "
                    "scaler or version?)",
                    who, buf ? len : (size_t)0, need);
        return -1;
    }
    if (memcmp(p, magic, 4) != 0) {
        host->error(host->ctx, "%s scaler state: bad magic (not a %s scaler checkpoint)", who,
                    who);
        return -1;
    }
    uint32_t v = amp_le_get_u32(p + 4);
    if (v != version) {
        host->error(host->ctx, "%s scaler state: format version %u, this plugin reads %u", who,
                    (unsigned)v, (unsigned)version);
        return -1;
    }
    return 0;
}

#endif
