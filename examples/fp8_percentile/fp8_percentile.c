/* An FP8 recipe of your own, on the built-in fp8 policy (plugin ABI 1.4,
 * host->base_policy): fp8 as it is (BF16 autocast; every GEMM/CONV layer's
 * inputs and weights in FP8 E4M3, its output gradients in E5M2, one
 * delayed scale per tensor), with its scale_update replaced: the amax that
 * sets the next scale is a percentile of the amax history instead of its
 * max, so one outlier step does not shrink the scale for the whole
 * history; fp8's rule then makes the scale of it (format_max / amax /
 * 2^margin). Keys (its [precision] section):
 *   percentile  = 90  (0 < p <= 100; 100 is fp8's max)
 *   and fp8's, read and checked by fp8: format, recipe, amax_history_len
 *   (1024), margin, op.<class>, layer.<name or glob> = f32|f16|bf16 (that
 *   layer in the dtype, no FP8 operands, so `amptrain ab --scan` can keep
 *   groups of layers at a baseline's precision). fp8's amax_compute is
 *   refused: the percentile takes its place.
 * Built only against the installed SDK (find_package(amptrain)). */
#include <math.h>
#include <stdlib.h>

#include "amptrain/plugin.h"

typedef struct recipe {
    const amp_policy_base *base; /* fp8, the host's: valid until fini returns */
    double percentile;
    double *sorted; /* [AMP_AMAX_HISTORY_MAX] scratch for the percentile */
} recipe;

static void pct_fini(void *self)
{
    recipe *r = self;
    if (!r)
        return;
    free(r->sorted);
    free(r);
}

static int pct_init(const amp_host_api *host, void **self)
{
    if (host->struct_size < AMP_HOST_API_SIZE_1_4) {
        host->error(host->ctx, "fp8_percentile needs an amptrain with plugin ABI 1.4 or later");
        return 1;
    }
    recipe *r = calloc(1, sizeof *r);
    if (!r || !(r->sorted = calloc(AMP_AMAX_HISTORY_MAX, sizeof *r->sorted))) {
        host->error(host->ctx, "out of memory");
        pct_fini(r);
        return 1;
    }
    r->percentile = 90.0;
    const char *amax_compute;
    r->base = host->base_policy(host->ctx, "fp8");
    if (!r->base || host->get_double(host->ctx, "percentile", &r->percentile) < 0) {
        pct_fini(r);
        return 1;
    }
    if (!(r->percentile > 0.0 && r->percentile <= 100.0)) {
        host->key_error(host->ctx, "percentile", "%g is not in (0, 100]", r->percentile);
        pct_fini(r);
        return 1;
    }
    if (host->get_string(host->ctx, "amax_compute", &amax_compute) > 0) {
        host->key_error(host->ctx, "amax_compute",
                        "fp8_percentile takes the percentile of the history instead; remove it");
        pct_fini(r);
        return 1;
    }
    *self = r;
    return 0;
}

/* Kept: fp8's formats per layer, its layer.<glob> keys included. */
static int pct_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    const amp_policy_base *b = ((const recipe *)self)->base;
    return b->vtable->resolve(b->self, layer, out);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Replaced: fp8's rule on a one-value history, the percentile of the
 * history's finite values (nearest rank: the smallest value with at least
 * p% of the values <= it); the scale in use when there is none. */
static int pct_scale_update(void *self, const amp_scale_stats *st, double *scale)
{
    const recipe *r = self;
    uint32_t n = 0;
    for (uint32_t i = 0; i < st->history_count && n < AMP_AMAX_HISTORY_MAX; i++)
        if (isfinite(st->history[i]))
            r->sorted[n++] = st->history[i];
    *scale = st->scale;
    if (n == 0)
        return 0;
    qsort(r->sorted, n, sizeof *r->sorted, cmp_double);
    uint32_t rank = (uint32_t)ceil(r->percentile / 100.0 * n);
    double amax = r->sorted[(rank ? rank : 1) - 1];
    amp_scale_stats one = *st;
    one.amax = amax;
    one.history = &amax;
    one.history_count = 1;
    return r->base->vtable->scale_update(r->base->self, &one, scale);
}

static const amp_precision_vtable vt = {(uint32_t)sizeof vt, pct_init, pct_fini, pct_resolve,
                                        NULL, NULL, pct_scale_update};

AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_PRECISION, "fp8_percentile", "2.0.0",
                            "the fp8 policy, its scale from a percentile of the amax history",
                            "percentile=90 (0..100] and fp8's keys but amax_compute: format "
                            "recipe amax_history_len margin op.<class> layer.<glob>",
                            &vt);
