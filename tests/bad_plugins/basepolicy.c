/* amp_precision_basepolicy.so: a precision plugin on a base policy
 * (host->base_policy, plugin ABI 1.4), driven by its [precision] keys
 * base = NAME (fp8) and mode =
 *   delegate  every entry is the base's; init logs what the base's
 *             requires_scaler, allow_tf32 and scale_update give (the last
 *             for a made-up E4M3 history {2, 4}: 448 / 4 = 112 by the
 *             host's rule), so the host's stand-ins for the entries a base
 *             leaves NULL show
 *   twice     takes the base twice
 *   resolve   takes it again from resolve
 *   nested    (with base = basepolicy) the base takes a base of its own
 * Built as a scaler too (BASEPOLICY_SCALER): base_policy is for precision
 * plugins. */
#include <stdlib.h>
#include <string.h>

#include "amptrain/plugin.h"

typedef struct bp_state {
    const amp_host_api *host;
    const amp_policy_base *base;
    const char *name, *mode;
} bp_state;

static void bp_fini(void *self) { free(self); }

static int bp_init(const amp_host_api *host, void **self)
{
    if (host->struct_size < AMP_HOST_API_SIZE_1_4) {
        host->error(host->ctx, "basepolicy needs plugin ABI 1.4");
        return 1;
    }
    bp_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "out of memory");
        return 1;
    }
    s->host = host;
    s->name = "fp8";
    s->mode = "delegate";
    if (host->get_string(host->ctx, "base", &s->name) < 0 ||
        host->get_string(host->ctx, "mode", &s->mode) < 0) {
        free(s);
        return 1;
    }
    s->base = host->base_policy(host->ctx, s->name);
    if (!s->base || (strcmp(s->mode, "twice") == 0 && !host->base_policy(host->ctx, s->name))) {
        free(s);
        return 1;
    }
    const amp_precision_vtable *v = s->base->vtable;
    double history[2] = {2.0, 4.0}, scale = 0.0;
    amp_scale_stats st = {sizeof st, "fc1", AMP_ROLE_INPUT, AMP_FORMAT_F8_E4M3,
                          AMP_SCALING_DELAYED, 0, 448.0, 1.0, 2.0, 0, 0, history, 2, 16};
    if (v->scale_update(s->base->self, &st, &scale) != 0) {
        free(s);
        return 1;
    }
    host->log(host->ctx, AMP_LOG_INFO,
              "on %s %s: requires_scaler %d allow_tf32 %d scale_update %g (init %s fini %s)",
              s->base->name, s->base->version, v->requires_scaler(s->base->self),
              v->allow_tf32(s->base->self), scale, v->init ? "set" : "NULL",
              v->fini ? "set" : "NULL");
    *self = s;
    return 0;
}

#ifdef BASEPOLICY_SCALER
static double bp_get_scale(void *self)
{
    (void)self;
    return 1.0;
}

static int bp_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    (void)self;
    *skip = stats->found_inf != 0;
    return 0;
}

static const amp_scaler_vtable bp_vtable = {(uint32_t)sizeof(amp_scaler_vtable), bp_init, bp_fini,
                                            bp_get_scale, bp_update, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "basepolicy", "1.0.0",
                  "test: a scaler asking for a base policy", &bp_vtable);
#else
static int bp_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    bp_state *s = self;
    if (strcmp(s->mode, "resolve") == 0 && !s->host->base_policy(s->host->ctx, s->name))
        return 1;
    return s->base->vtable->resolve(s->base->self, layer, out);
}

static int bp_requires_scaler(void *self)
{
    const amp_policy_base *b = ((bp_state *)self)->base;
    return b->vtable->requires_scaler(b->self);
}

static int bp_allow_tf32(void *self)
{
    const amp_policy_base *b = ((bp_state *)self)->base;
    return b->vtable->allow_tf32(b->self);
}

static int bp_scale_update(void *self, const amp_scale_stats *st, double *scale)
{
    const amp_policy_base *b = ((bp_state *)self)->base;
    return b->vtable->scale_update(b->self, st, scale);
}

static const amp_precision_vtable bp_vtable = {
    (uint32_t)sizeof(amp_precision_vtable), bp_init, bp_fini, bp_resolve, bp_requires_scaler,
    bp_allow_tf32, bp_scale_update};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, "basepolicy", "1.0.0",
                  "test: a precision plugin on a base policy", &bp_vtable);
#endif
