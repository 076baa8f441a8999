/* One scaler whose get_scale goes wrong, built four times:
 *   -DBAD_SCALE_NAN  -> amp_scaler_nanscale.so: scale 1 for two steps, then
 *                       NaN (so the run has written metrics before it fails)
 *   -DBAD_SCALE_ZERO -> amp_scaler_zeroscale.so: scale 0 from the start
 *   -DBAD_SCALE_INF  -> amp_scaler_infscale.so: scale 1, then +inf at step 1
 *   -DBAD_SCALE_TINY -> amp_scaler_tinyscale.so: scale 1e-40 from the start,
 *                       finite and > 0 but its reciprocal overflows float
 *   otherwise        -> amp_scaler_negscale.so: scale -1 from the start */
#include <math.h>
#include <stdlib.h>

#include "amptrain/plugin.h"

typedef struct bs_state {
    int updates;
} bs_state;

static int bs_init(const amp_host_api *host, void **self)
{
    *self = calloc(1, sizeof(bs_state));
    if (!*self) {
        host->error(host->ctx, "out of memory");
        return 1;
    }
    return 0;
}

static void bs_fini(void *self) { free(self); }

static double bs_get_scale(void *self)
{
#if defined(BAD_SCALE_NAN)
    return ((bs_state *)self)->updates < 2 ? 1.0 : NAN;
#elif defined(BAD_SCALE_ZERO)
    (void)self;
    return 0.0;
#elif defined(BAD_SCALE_INF)
    return ((bs_state *)self)->updates < 1 ? 1.0 : INFINITY;
#elif defined(BAD_SCALE_TINY)
    (void)self;
    return 1e-40;
#else
    return -1.0;
#endif
}

static int bs_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    ((bs_state *)self)->updates++;
    *skip = stats->found_inf != 0;
    return 0;
}

static const amp_scaler_vtable bs_vtable = {(uint32_t)sizeof(amp_scaler_vtable), bs_init, bs_fini,
                                            bs_get_scale, bs_update, NULL, NULL};

#if defined(BAD_SCALE_NAN)
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "nanscale", "1.0.0", "test: scale turns NaN at step 2",
                  &bs_vtable);
#elif defined(BAD_SCALE_ZERO)
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "zeroscale", "1.0.0", "test: scale 0", &bs_vtable);
#elif defined(BAD_SCALE_INF)
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "infscale", "1.0.0", "test: scale turns +inf at step 1",
                  &bs_vtable);
#elif defined(BAD_SCALE_TINY)
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "tinyscale", "1.0.0", "test: scale 1e-40", &bs_vtable);
#else
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "negscale", "1.0.0", "test: scale -1", &bs_vtable);
#endif
