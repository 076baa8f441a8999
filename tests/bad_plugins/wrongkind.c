/* Built as amp_precision_wrongkind.so, but its entry declares a scaler: the
 * file name and the entry disagree about the kind. */
#include <stdlib.h>

#include "amptrain/plugin.h"

static int wk_init(const amp_host_api *host, void **self)
{
    host->error(host->ctx, "wrongkind: init must never run");
    return 1;
}

static void wk_fini(void *self) {}
static double wk_get_scale(void *self) { return 1.0; }

static int wk_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    *skip = stats->found_inf != 0;
    return 0;
}

static const amp_scaler_vtable wk_vtable = {(uint32_t)sizeof(amp_scaler_vtable), wk_init, wk_fini,
                                            wk_get_scale, wk_update, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "wrongkind", "1.0.0",
                  "test: a scaler in a precision plugin's file", &wk_vtable);
