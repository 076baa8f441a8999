/* Scaler "static": a fixed scale from the config; steps with non-finite
 * gradients are skipped but the scale never moves. */
#include <stdlib.h>

#include "amptrain/plugin.h"
#include "scaler_common.h"

typedef struct static_state {
    const amp_host_api *host;
    float scale; /* fp32, like every other scaler's scale */
} static_state;

static int static_init(const amp_host_api *host, void **self)
{
    double scale = 65536.0;
    if (amp_scaler_read_double(host, "scale", &scale) ||
        amp_scaler_check_scale(host, "scale", scale))
        return -1;
    static_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "static scaler: out of memory");
        return -1;
    }
    s->host = host;
    s->scale = (float)scale;
    *self = s;
    return 0;
}

static void static_fini(void *self) { free(self); }

static double static_get_scale(void *self) { return ((static_state *)self)->scale; }

static int static_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    static_state *s = self;
    return amp_scaler_update_begin(s->host, stats, skip, "static");
}

/* magic, version, scale (as a double holding the float32 value) */
#define STATIC_STATE_VERSION 1u
#define STATIC_STATE_SIZE (4 + 4 + 8)
static const char static_magic[4] = {'a', 'm', 'p', 'S'};

static int static_state_save(void *self, void *buf, size_t cap, size_t *len)
{
    static_state *s = self;
    int rc = amp_scaler_save_begin(s->host, buf, cap, len, STATIC_STATE_SIZE);
    if (rc <= 0)
        return rc;
    unsigned char *p = buf;
    memcpy(p, static_magic, 4);
    amp_le_put_u32(p + 4, STATIC_STATE_VERSION);
    amp_le_put_f64(p + 8, (double)s->scale);
    return 0;
}

/* Restores the checkpoint's scale, as dynamic restores its state; a scale
 * differing from the config's is logged so a changed INI on resume does not
 * go unnoticed. */
static int static_state_load(void *self, const void *buf, size_t len)
{
    static_state *s = self;
    const amp_host_api *h = s->host;
    if (amp_scaler_load_check(h, buf, len, STATIC_STATE_SIZE, static_magic, STATIC_STATE_VERSION,
                              "static"))
        return -1;
    double scale = amp_le_get_f64((const unsigned char *)buf + 8);
    /* what init accepts, and exactly a float32 as save writes it */
    if (!isfinite(scale) || !(scale > 0.0) || !isfinite((float)scale) ||
        (double)(float)scale != scale) {
        h->error(h->ctx, "static scaler state: invalid scale %g (must be a float32 > 0)", scale);
        return -1;
    }
    if ((float)scale != s->scale)
        h->log(h->ctx, AMP_LOG_WARN, "checkpoint scale %g replaces the config's %g", scale,
               (double)s->scale);
    s->scale = (float)scale;
    return 0;
}

static const amp_scaler_vtable static_vtable = {
    (uint32_t)sizeof(amp_scaler_vtable), static_init, static_fini, static_get_scale, static_update,
    static_state_save, static_state_load};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "static", "1.0.0",
                  "fixed loss scale (key: scale, default 65536); skips non-finite steps",
                  &static_vtable);
