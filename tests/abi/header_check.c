/* Compiled as C11 and as C++17 with -Wall -Wextra -pedantic -Werror
 * (tests/cmake/abi.cmake): the public header, and a plugin written against
 * it with both entry macros' expansion, must be clean in either language. */
#include "amptrain/layer_keys.h" /* the SDK's layer.<glob> key helper */
#include "amptrain/plugin.h"

static int hc_init(const amp_host_api *host, void **self)
{
    double scale = 1.0;
    if (host->get_double(host->ctx, "scale", &scale) < 0) {
        host->key_error(host->ctx, "scale", "bad value %g", scale);
        return 1;
    }
    host->log(host->ctx, AMP_LOG_INFO, "layers: %d", host->layer_count(host->ctx));
    *self = NULL;
    return 0;
}

static void hc_fini(void *self) { (void)self; }

static double hc_get_scale(void *self)
{
    (void)self;
    return 1.0;
}

static int hc_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    (void)self;
    *skip = stats->found_inf != 0;
    return 0;
}

/* A precision plugin on a base policy (ABI 1.4): the size macro and the
 * base's vtable, as the fp8 recipe template uses them. */
static int hc_pinit(const amp_host_api *host, void **self)
{
    if (host->struct_size < AMP_HOST_API_SIZE_1_4)
        return 1;
    const amp_policy_base *b = host->base_policy(host->ctx, "fp8");
    *self = (void *)b;
    return b ? 0 : 1;
}

static int hc_presolve(void *self, const char *layer, amp_layer_precision *out)
{
    const amp_policy_base *b = (const amp_policy_base *)self;
    return b->vtable->resolve(b->self, layer, out);
}

AMP_PLUGIN_EXTERN_C const amp_precision_vtable hc_pvtable; /* used by no one: external */
const amp_precision_vtable hc_pvtable = {(uint32_t)sizeof(amp_precision_vtable), hc_pinit, hc_fini,
                                         hc_presolve, NULL, NULL, NULL};

static const amp_scaler_vtable hc_vtable = {(uint32_t)sizeof(amp_scaler_vtable), hc_init, hc_fini,
                                            hc_get_scale, hc_update, NULL, NULL};

#ifdef HC_WITH_KEYS
AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_SCALER, "hc", "1.0.0", "header check", "scale=1",
                            &hc_vtable);
#else
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "hc", "1.0.0", "header check", &hc_vtable);
#endif
