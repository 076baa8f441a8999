/* amp_scaler_dup.so: a valid scaler (scale 1) built into two folders. Found
 * by name with both folders on the search path it is ambiguous and must be
 * refused, listing both; named by path it runs. */
#include "amptrain/plugin.h"

static int dp_init(const amp_host_api *host, void **self)
{
    *self = NULL;
    return 0;
}

static void dp_fini(void *self) {}
static double dp_get_scale(void *self) { return 1.0; }

static int dp_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    *skip = stats->found_inf != 0;
    return 0;
}

static const amp_scaler_vtable dp_vtable = {(uint32_t)sizeof(amp_scaler_vtable), dp_init, dp_fini,
                                            dp_get_scale, dp_update, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "dup", "1.0.0", "test: the same name in two folders",
                  &dp_vtable);
