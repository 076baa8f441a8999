/* amp_scaler_nullupdate.so: the required `update` is NULL. The host must
 * refuse it from the vtable alone; init fails with a distinct message so a
 * host that ran init first would show that message instead. */
#include "amptrain/plugin.h"

static int nu_init(const amp_host_api *host, void **self)
{
    host->error(host->ctx, "nullupdate: init ran although update is NULL");
    return 1;
}

static void nu_fini(void *self) {}
static double nu_get_scale(void *self) { return 1.0; }

static const amp_scaler_vtable nu_vtable = {(uint32_t)sizeof(amp_scaler_vtable), nu_init, nu_fini,
                                            nu_get_scale, NULL, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "nullupdate", "1.0.0", "test: update is NULL",
                  &nu_vtable);
