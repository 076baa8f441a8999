/* Precision policy "fp8": the bf16 policy, plus per-tensor scaled FP8
 * operands on every GEMM/CONV layer (E4M3 inputs and weights, E5M2 or E4M3
 * output gradients), with delayed (Transformer Engine's DelayedScaling) or
 * current scaling, and this plugin's own scale_update. */
#include <math.h>
#include <stdlib.h>

#include "amptrain/plugin.h"
#include "policy_common.h"

#define FP8_KEYS                                                                            \
    "format=hybrid|e4m3 recipe=delayed|current amax_history_len=1024 (1..65536) "           \
    "amax_compute=max|most_recent margin=0 (0..64) op.<class>=f32|f16|bf16 "                 \
    "layer.<glob>=f32|f16|bf16 (no fp8 on that layer)"

typedef struct fp8_policy {
    amp_policy *base; /* first: the shared vtable adaptors take it */
    int most_recent;
    double margin_factor; /* 2^margin */
} fp8_policy;

static const char *const format_names[] = {"hybrid", "e4m3"};
static const char *const recipe_names[] = {"delayed", "current"};
static const char *const amax_names[] = {"max", "most_recent"};

static void fp8_fini(void *self)
{
    fp8_policy *f = self;
    if (!f)
        return;
    amp_policy_destroy(f->base);
    free(f);
}

static int fp8_init(const amp_host_api *host, void **self)
{
    fp8_policy *f = calloc(1, sizeof *f);
    if (!f) {
        host->error(host->ctx, "fp8: out of memory");
        return -1;
    }
    int format = 0, recipe = 0, amax = 0;
    int64_t history = 1024, margin = 0;
    /* every key is read before failing, so one run reports them all */
    int bad = amp_policy_create(host, AMP_DTYPE_BF16, &f->base) != 0;
    bad |= amp_policy_choice(host, "format", format_names, 2, &format) != 0;
    bad |= amp_policy_choice(host, "recipe", recipe_names, 2, &recipe) != 0;
    bad |= amp_policy_choice(host, "amax_compute", amax_names, 2, &amax) != 0;
    bad |= amp_policy_integer(host, "amax_history_len", 1, AMP_AMAX_HISTORY_MAX, &history) != 0;
    bad |= amp_policy_integer(host, "margin", 0, 64, &margin) != 0;
    if (!bad)
        bad = amp_policy_set_scaled(f->base,
                                    format == 0 ? AMP_FORMAT_F8_E5M2 : AMP_FORMAT_F8_E4M3,
                                    recipe == 0 ? AMP_SCALING_DELAYED : AMP_SCALING_CURRENT,
                                    (uint32_t)history) != 0;
    if (bad) {
        fp8_fini(f);
        return -1;
    }
    f->most_recent = amax == 1;
    f->margin_factor = ldexp(1.0, (int)margin);
    *self = f;
    return 0;
}

static int fp8_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    return amp_policy_resolve(((fp8_policy *)self)->base, layer, out);
}

/* scale = format_max / amax / 2^margin; amax from the history (delayed:
 * its max, or its newest value) or the tensor (current); an amax of 0 or
 * not finite keeps the previous scale. */
static int fp8_scale_update(void *self, const amp_scale_stats *st, double *scale)
{
    const fp8_policy *f = self;
    double amax = st->amax;
    if (st->scaling == AMP_SCALING_DELAYED && st->history_count > 0) {
        amax = st->history[0];
        for (uint32_t i = 1; !f->most_recent && i < st->history_count; i++)
            if (!(st->history[i] <= amax))
                amax = st->history[i]; /* a NaN wins, and keeps the scale */
    }
    *scale = amax > 0.0 && isfinite(amax) ? st->format_max / amax / f->margin_factor : st->scale;
    return 0;
}

static int fp8_requires_scaler(void *self)
{
    (void)self;
    return 0;
}

static const amp_precision_vtable fp8_vtable = {
    (uint32_t)sizeof(amp_precision_vtable), fp8_init, fp8_fini, fp8_resolve, fp8_requires_scaler,
    NULL, fp8_scale_update};

AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_PRECISION, "fp8", "1.0.0",
                            "FP8 GEMM operands (E4M3/E5M2, per-tensor delayed or current "
                            "scaling) over BF16 autocast",
                            FP8_KEYS, &fp8_vtable);
