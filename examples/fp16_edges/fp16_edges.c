/* amp_precision_fp16_edges: FP16 autocast everywhere except the first and
 * last layers, which stay in FP32.
 *
 * The first layer sees the raw input and the last one produces the logits;
 * both are where FP16's rounding and range hurt most, and they are usually a
 * small share of the compute. Inner layers run as the built-in fp16 policy
 * does: GEMM, conv, attention and pointwise ops, activations and working
 * weights in FP16 (GEMMs accumulate in FP32); softmax, loss, norms and
 * reductions always in FP32. An FP32 layer stores its output activations in
 * FP32; the next FP16 layer rounds them into FP16 when it reads them.
 *
 * Key: keep (1): how many layers at each end stay in FP32. A model with at
 * most 2 * keep layers runs entirely in FP32 (a warning says so).
 * FP16 inside needs a loss scaler: [scaler] defaults to dynamic.
 *
 * Build against an installed amptrain:
 *   cmake -S . -B build -DCMAKE_PREFIX_PATH=<amptrain prefix>
 *   cmake --build build */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "amptrain/plugin.h"

typedef struct edges {
    const amp_host_api *host;
    int64_t keep;
    int layers;
} edges;

static int ed_init(const amp_host_api *host, void **self)
{
    int64_t keep = 1;
    if (host->get_int(host->ctx, "keep", &keep) < 0)
        return 1;
    if (keep < 0 || keep > 64) {
        host->key_error(host->ctx, "keep", "got %lld; must be 0..64 layers at each end",
                        (long long)keep);
        return 1;
    }
    edges *p = calloc(1, sizeof *p);
    if (!p) {
        host->error(host->ctx, "fp16_edges: out of memory");
        return 1;
    }
    p->host = host;
    p->keep = keep;
    p->layers = host->layer_count(host->ctx);
    if (p->layers <= 2 * keep)
        host->log(host->ctx, AMP_LOG_WARN,
                  "the model has %d layers and keep = %lld: every layer stays in FP32",
                  p->layers, (long long)keep);
    *self = p;
    return 0;
}

static void ed_fini(void *self) { free(self); }

/* The layer's index from its name, -1 for "loss" (or a name the host never
 * gave, which resolve refuses). */
static int layer_index(const edges *p, const char *layer)
{
    for (int i = 0; i < p->layers; i++) {
        const char *n = p->host->layer_name(p->host->ctx, i);
        if (n && strcmp(n, layer) == 0)
            return i;
    }
    return -1;
}

static int ed_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    const edges *p = self;
    if (strcmp(layer, "loss") == 0)
        return 0; /* the host preset FP32 everywhere */
    int i = layer_index(p, layer);
    if (i < 0) {
        p->host->error(p->host->ctx, "fp16_edges: unknown layer '%s'", layer);
        return 1;
    }
    if (i < p->keep || i >= p->layers - p->keep)
        return 0; /* an edge layer: FP32 */
    out->compute[AMP_OP_GEMM] = AMP_DTYPE_F16;
    out->compute[AMP_OP_CONV] = AMP_DTYPE_F16;
    out->compute[AMP_OP_ATTENTION] = AMP_DTYPE_F16;
    out->compute[AMP_OP_POINTWISE] = AMP_DTYPE_F16;
    out->activation = AMP_DTYPE_F16;
    out->param = AMP_DTYPE_F16;
    return 0;
}

/* FP16 inside, so a loss scaler keeps small gradients from flushing to zero. */
static int ed_requires_scaler(void *self)
{
    const edges *p = self;
    return p->layers > 2 * p->keep;
}

static const amp_precision_vtable ed_vtable = {(uint32_t)sizeof(amp_precision_vtable), ed_init,
                                               ed_fini, ed_resolve, ed_requires_scaler, NULL, NULL};

AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_PRECISION, "fp16_edges", "1.0.0",
                            "FP16 autocast except the first and last `keep` layers (FP32)",
                            "keep=1", &ed_vtable);
