/* amp_scaler_initfail.so: init reports a reason through host->error and
 * fails; the host must show that reason. */
#include "amptrain/plugin.h"

static int if_init(const amp_host_api *host, void **self)
{
    host->error(host->ctx, "initfail: the frobnicator is not calibrated (test reason)");
    return 1;
}

static void if_fini(void *self) {}
static double if_get_scale(void *self) { return 1.0; }

static int if_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    *skip = stats->found_inf != 0;
    return 0;
}

static const amp_scaler_vtable if_vtable = {(uint32_t)sizeof(amp_scaler_vtable), if_init, if_fini,
                                            if_get_scale, if_update, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "initfail", "1.0.0", "test: init always fails",
                  &if_vtable);
