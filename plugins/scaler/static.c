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
    if (!amp_scaler_stats_ok(stats) || !skip) {
        s->host->error(s->host->ctx, "static scaler: update called without stats/skip");
        return -1;
    }
    *skip = stats->found_inf != 0;
    return 0;
}

/* No state: everything comes from the config. */
static const amp_scaler_vtable static_vtable = {
    (uint32_t)sizeof(amp_scaler_vtable), static_init, static_fini, static_get_scale, static_update,
    NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "static", "1.0.0",
                  "fixed loss scale (key: scale, default 65536); skips non-finite steps",
                  &static_vtable);
