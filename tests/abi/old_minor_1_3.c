/* amp_precision_oldminor13.so: a precision policy built against the frozen
 * ABI 1.3 header (tests/abi/v1_3), standing in for the FP8 recipes written
 * before ABI 1.4 appended host->base_policy: FP32 compute, every GEMM
 * layer's operands in E4M3 with delayed scaling (history 4), and its own
 * scale_update, format_max / amax / 2, which says once that it ran. The
 * host must load it, hand it a host table it reads only up to its own
 * fields, and run its recipe. */
#include <stdlib.h>
#include <string.h>

#include "amptrain/plugin.h"

#if AMP_PLUGIN_ABI_MAJOR != 1 || AMP_PLUGIN_ABI_MINOR != 3
#error "old_minor_1_3.c must be built against tests/abi/v1_3 (plugin ABI 1.3)"
#endif

typedef struct om_state {
    const amp_host_api *host;
    int said;
} om_state;

static int om_init(const amp_host_api *host, void **self)
{
    if (host->struct_size < offsetof(amp_host_api, layer_op_classes) + sizeof(void *)) {
        host->error(host->ctx, "oldminor13 needs a host of ABI 1.2 or later");
        return 1;
    }
    om_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "out of memory");
        return 1;
    }
    s->host = host;
    *self = s;
    return 0;
}

static void om_fini(void *self) { free(self); }

static int om_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    const om_state *s = self;
    const amp_host_api *h = s->host;
    for (int i = 0; i < h->layer_count(h->ctx); i++)
        if (strcmp(layer, h->layer_name(h->ctx, i)) == 0 &&
            (h->layer_op_classes(h->ctx, i) & (1u << AMP_OP_GEMM)))
            for (int r = 0; r < AMP_ROLE_COUNT; r++)
                out->operand[r] = (amp_operand_format){AMP_FORMAT_F8_E4M3, AMP_SCALING_DELAYED, 4, 0};
    return 0;
}

static int om_scale_update(void *self, const amp_scale_stats *st, double *scale)
{
    om_state *s = self;
    *scale = st->amax > 0.0 ? st->format_max / st->amax / 2.0 : st->scale;
    if (!s->said++)
        s->host->log(s->host->ctx, AMP_LOG_WARN, "oldminor13 scale_update: layer %s scale %g",
                     st->layer, *scale);
    return 0;
}

static const amp_precision_vtable om_vtable = {(uint32_t)sizeof(amp_precision_vtable), om_init,
                                               om_fini, om_resolve, NULL, NULL, om_scale_update};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, "oldminor13", "1.3.0", "test: built against ABI 1.3",
                  &om_vtable);
