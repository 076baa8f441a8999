/* amp_scaler_oldminor.so: a plugin built against the frozen ABI 1.0 header
 * (tests/abi/v1_0), standing in for every plugin built before the current
 * minor. Its entry is shorter than the host's (no `keys`); the host must
 * load it, read only the bytes it has, and run it. A fixed scale of 2^20 on
 * the tiny task keeps its gradients above FP16's underflow. */
#include "amptrain/plugin.h"

#if AMP_PLUGIN_ABI_MAJOR != 1 || AMP_PLUGIN_ABI_MINOR != 0
#error "old_minor.c must be built against tests/abi/v1_0 (plugin ABI 1.0)"
#endif

static int om_init(const amp_host_api *host, void **self)
{
    (void)host;
    *self = NULL;
    return 0;
}

static void om_fini(void *self) { (void)self; }

static double om_get_scale(void *self)
{
    (void)self;
    return 1048576.0;
}

static int om_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    (void)self;
    *skip = stats->found_inf != 0;
    return 0;
}

static const amp_scaler_vtable om_vtable = {(uint32_t)sizeof(amp_scaler_vtable), om_init, om_fini,
                                            om_get_scale, om_update, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "oldminor", "1.0.0", "test: built against ABI 1.0",
                  &om_vtable);
