/* A precision policy whose FP8 recipe is broken: every GEMM layer's
 * operands in E4M3 (delayed, history 4; current scaling with
 * BAD_RECIPE_CURRENT), and a scale_update that returns -1 (default), NaN
 * (BAD_RECIPE_NAN), +inf (BAD_RECIPE_INF) or fails (BAD_RECIPE_FAIL), from
 * step BAD_RECIPE_STEP on (default 1). With BAD_RECIPE_NORM the norm layers
 * get them too (which the host refuses: a norm runs no GEMM or
 * convolution). */
#include <math.h>
#include <string.h>

#include "amptrain/plugin.h"

#ifdef BAD_RECIPE_NORM
#define ALSO (1u << AMP_OP_NORM)
#else
#define ALSO 0u
#endif

#ifdef BAD_RECIPE_CURRENT
#define SCALING AMP_SCALING_CURRENT, 0
#else
#define SCALING AMP_SCALING_DELAYED, 4
#endif

#ifndef BAD_RECIPE_STEP
#define BAD_RECIPE_STEP 1
#endif

typedef struct { const amp_host_api *host; unsigned classes[256]; int n; } state;
static state the_state;

static int br_init(const amp_host_api *host, void **self)
{
    state *s = &the_state;
    s->host = host;
    s->n = host->layer_count(host->ctx);
    for (int i = 0; i < s->n && i < 256; i++) s->classes[i] = host->layer_op_classes(host->ctx, i);
    *self = s;
    return 0;
}

static void br_fini(void *self) { (void)self; }

static int br_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    state *s = self;
    for (int c = 0; c < AMP_OP_COUNT; c++) out->compute[c] = AMP_DTYPE_F32;
    out->activation = out->param = AMP_DTYPE_F32;
    for (int i = 0; i < s->n && i < 256; i++)
        if (strcmp(layer, s->host->layer_name(s->host->ctx, i)) == 0 &&
            (s->classes[i] & ((1u << AMP_OP_GEMM) | (1u << AMP_OP_CONV) | ALSO)))
            for (int r = 0; r < AMP_ROLE_COUNT; r++)
                out->operand[r] = (amp_operand_format){AMP_FORMAT_F8_E4M3, SCALING, 0};
    return 0;
}

static int br_scale_update(void *self, const amp_scale_stats *st, double *scale)
{
    state *s = self;
    if (st->step < BAD_RECIPE_STEP) {
        *scale = 1.0;
        return 0;
    }
#if defined(BAD_RECIPE_FAIL)
    s->host->error(s->host->ctx, "the recipe gave up on layer %s", st->layer);
    return 1;
#elif defined(BAD_RECIPE_NAN)
    (void)s;
    *scale = NAN;
#elif defined(BAD_RECIPE_INF)
    (void)s;
    *scale = INFINITY;
#else
    (void)s;
    *scale = -1.0;
#endif
    return 0;
}

static const amp_precision_vtable br_vtable = {(uint32_t)sizeof(amp_precision_vtable), br_init,
                                               br_fini, br_resolve, NULL, NULL, br_scale_update};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, BAD_RECIPE_NAME, "1.0.0",
                  "test: an FP8 recipe that returns a bad scale", &br_vtable);
