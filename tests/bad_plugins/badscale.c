/* One scaler whose get_scale goes wrong, built twice:
 *   -DBAD_SCALE_NAN -> amp_scaler_nanscale.so: scale 1 for two steps, then
 *                      NaN (so the run has written metrics before it fails)
 *   otherwise       -> amp_scaler_negscale.so: scale -1 from the start */
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
#ifdef BAD_SCALE_NAN
    return ((bs_state *)self)->updates < 2 ? 1.0 : NAN;
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

#ifdef BAD_SCALE_NAN
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "nanscale", "1.0.0", "test: scale turns NaN at step 2",
                  &bs_vtable);
#else
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "negscale", "1.0.0", "test: scale -1", &bs_vtable);
#endif
