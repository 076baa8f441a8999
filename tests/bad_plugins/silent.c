/* A precision policy that fails without saying why (no host->error): in
 * resolve for layer fc1, or in init with SILENT_INIT. The host must say
 * that the plugin gave no reason, not end its message with an empty one. */
#include <string.h>

#include "amptrain/plugin.h"

static int sl_init(const amp_host_api *host, void **self)
{
    (void)host;
    *self = NULL;
#ifdef SILENT_INIT
    return 1;
#else
    return 0;
#endif
}

static void sl_fini(void *self) { (void)self; }

static int sl_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    (void)self;
    for (int c = 0; c < AMP_OP_COUNT; c++) out->compute[c] = AMP_DTYPE_F32;
    out->activation = out->param = AMP_DTYPE_F32;
    return strcmp(layer, "fc1") == 0 ? 1 : 0;
}

static const amp_precision_vtable sl_vtable = {(uint32_t)sizeof(amp_precision_vtable), sl_init,
                                               sl_fini, sl_resolve, NULL, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, SILENT_NAME, "1.0.0",
                  "test: fails without a reason", &sl_vtable);
