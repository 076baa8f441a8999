/* An FP8 recipe of your own: BF16 autocast with every GEMM/CONV layer's
 * operands in FP8 (E4M3 inputs and weights, E5M2 gradients, delayed
 * scaling), whose next scale comes from a percentile of the amax history
 * instead of its max, so one outlier step does not shrink the scale for the
 * whole history. Keys (its [precision] section):
 *   percentile        = 90  (0 < p <= 100; 100 is Transformer Engine's max)
 *   amax_history_len  = 16  (1..65536)
 *   layer.<name or glob> = f32|f16|bf16  that layer in the dtype, no FP8
 *                       operands (the SDK's amptrain/layer_keys.h reads them
 *                       as the built-ins do, so `amptrain ab --scan` can
 *                       keep groups of layers at a baseline's precision)
 * Built only against the installed SDK (find_package(amptrain)). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amptrain/layer_keys.h"
#include "amptrain/plugin.h"

typedef struct recipe {
    const amp_host_api *host;
    double percentile;
    int64_t history_len;
    int nlayers;
    unsigned *classes; /* [nlayers] op class bits */
    amp_layer_key *keys; /* [nlayers] the layer.* overrides */
    double *sorted;    /* [history_len] scratch for the percentile */
} recipe;

static void pct_fini(void *self)
{
    recipe *r = self;
    if (!r)
        return;
    free(r->classes);
    free(r->keys);
    free(r->sorted);
    free(r);
}

static int pct_init(const amp_host_api *host, void **self)
{
    if (host->struct_size <= offsetof(amp_host_api, layer_op_classes)) {
        host->error(host->ctx, "fp8_percentile needs an amptrain with plugin ABI 1.2");
        return 1;
    }
    recipe *r = calloc(1, sizeof *r);
    if (!r) {
        host->error(host->ctx, "out of memory");
        return 1;
    }
    r->host = host;
    r->percentile = 90.0;
    r->history_len = 16;
    if (host->get_double(host->ctx, "percentile", &r->percentile) < 0 ||
        host->get_int(host->ctx, "amax_history_len", &r->history_len) < 0) {
        pct_fini(r);
        return 1;
    }
    if (!(r->percentile > 0.0 && r->percentile <= 100.0)) {
        host->key_error(host->ctx, "percentile", "%g is not in (0, 100]", r->percentile);
        pct_fini(r);
        return 1;
    }
    if (r->history_len < 1 || r->history_len > (int64_t)AMP_AMAX_HISTORY_MAX) {
        host->key_error(host->ctx, "amax_history_len", "%lld is not in 1..%u",
                        (long long)r->history_len, AMP_AMAX_HISTORY_MAX);
        pct_fini(r);
        return 1;
    }
    r->nlayers = host->layer_count(host->ctx);
    r->classes = calloc((size_t)(r->nlayers > 0 ? r->nlayers : 1), sizeof *r->classes);
    r->keys = calloc((size_t)(r->nlayers > 0 ? r->nlayers : 1), sizeof *r->keys);
    r->sorted = calloc((size_t)r->history_len, sizeof *r->sorted);
    if (!r->classes || !r->keys || !r->sorted) {
        host->error(host->ctx, "out of memory");
        pct_fini(r);
        return 1;
    }
    if (amp_layer_keys_read(host, r->keys, r->nlayers) != 0) {
        pct_fini(r);
        return 1;
    }
    for (int i = 0; i < r->nlayers; i++)
        r->classes[i] = host->layer_op_classes(host->ctx, i);
    *self = r;
    return 0;
}

static int pct_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    recipe *r = self;
    for (int c = 0; c < AMP_OP_COUNT; c++)
        out->compute[c] = AMP_DTYPE_F32; /* softmax, loss, norm, reduce */
    out->compute[AMP_OP_GEMM] = out->compute[AMP_OP_CONV] = AMP_DTYPE_BF16;
    out->compute[AMP_OP_ATTENTION] = out->compute[AMP_OP_POINTWISE] = AMP_DTYPE_BF16;
    out->activation = out->param = AMP_DTYPE_BF16;
    if (out->struct_size < sizeof *out) {
        r->host->error(r->host->ctx, "the host's amp_layer_precision has no operand formats");
        return 1;
    }
    if (amp_layer_keys_apply(r->keys, r->nlayers, layer, out))
        return 0; /* kept in its dtype: no FP8 operands */
    const unsigned gemm = (1u << AMP_OP_GEMM) | (1u << AMP_OP_CONV);
    for (int i = 0; i < r->nlayers; i++)
        if (strcmp(layer, r->host->layer_name(r->host->ctx, i)) == 0 && (r->classes[i] & gemm))
            for (int role = 0; role < AMP_ROLE_COUNT; role++)
                out->operand[role] = (amp_operand_format){
                    role == AMP_ROLE_GRAD_OUTPUT ? AMP_FORMAT_F8_E5M2 : AMP_FORMAT_F8_E4M3,
                    AMP_SCALING_DELAYED, (uint32_t)r->history_len, 0};
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* scale = format_max / (the percentile of the history's finite values);
 * the previous scale when that is 0 or there is none. */
static int pct_scale_update(void *self, const amp_scale_stats *st, double *scale)
{
    recipe *r = self;
    uint32_t n = 0;
    for (uint32_t i = 0; i < st->history_count && n < (uint32_t)r->history_len; i++)
        if (isfinite(st->history[i]))
            r->sorted[n++] = st->history[i];
    *scale = st->scale;
    if (n == 0)
        return 0;
    qsort(r->sorted, n, sizeof *r->sorted, cmp_double);
    /* nearest rank: the smallest value with at least p% of the values <= it */
    uint32_t rank = (uint32_t)ceil(r->percentile / 100.0 * n);
    double amax = r->sorted[(rank ? rank : 1) - 1];
    if (amax > 0.0)
        *scale = st->format_max / amax;
    return 0;
}

static const amp_precision_vtable vt = {(uint32_t)sizeof vt, pct_init, pct_fini, pct_resolve,
                                        NULL, NULL, pct_scale_update};

AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_PRECISION, "fp8_percentile", "1.0.0",
                            "FP8 delayed scaling from a percentile of the amax history",
                            "percentile=90 amax_history_len=16 "
                            "layer.<glob>=f32/f16/bf16 (no fp8 on that layer)",
                            &vt);
