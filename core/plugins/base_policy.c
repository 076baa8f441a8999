#include "base_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "formats/scaled.h"

/* The host's defaults for the optional entries a base leaves out, so the
 * caller can call every entry it is handed. */
static int no_scaler(void *self) {
    (void)self;
    return 0;
}

static int no_tf32(void *self) {
    (void)self;
    return 0;
}

static int default_scale(void *self, const amp_scale_stats *st, double *scale) {
    (void)self;
    int kept;
    *scale = amp_scaled_default_rule(st, &kept);
    return 0;
}

/* Why h may not take a base now, or NULL. */
static const char *refusal(const amp_plugin_host *h) {
    if (h->kind != AMP_PLUGIN_KIND_PRECISION) return "is for precision plugins";
    if (h->base_busy) return "was called by a base policy: a base cannot take a base of its own";
    if (!h->in_init) return "may be called from init only";
    if (h->base) return "may be called once: this plugin has its base already";
    return NULL;
}

const amp_policy_base *amp_base_policy_take(void *ctx, const char *name) {
    amp_plugin_host *h = amp_plugin_host_args(ctx, "base_policy", "name", name);
    if (!h) return NULL;
    const char *why = refusal(h);
    if (why) {
        snprintf(h->err, sizeof h->err, "host->base_policy(\"%s\") %s", name, why);
        return NULL;
    }
    if (amp_plugin_spec_is_path(name)) {
        snprintf(h->err, sizeof h->err,
                 "host->base_policy(\"%s\"): give the name of a precision plugin (fp8, mxfp8, "
                 "nvfp4, ...), not a path",
                 name);
        return NULL;
    }
    amp_base_policy *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(h->err, sizeof h->err, "out of memory loading the base policy '%s'", name);
        return NULL;
    }
    char err[sizeof h->err - 64];
    if (amp_plugin_open(&b->plugin, AMP_PLUGIN_KIND_PRECISION, name, NULL, err, sizeof err) != 0) {
        snprintf(h->err, sizeof h->err, "base policy: %s", err);
        free(b);
        return NULL;
    }
    const amp_precision_vtable *bv = amp_plugin_precision(&b->plugin);
    h->err[0] = '\0';
    h->base_busy = 1;
    int rc = bv->init(&h->api, &b->plugin.self);
    h->base_busy = 0;
    if (rc != 0) {
        b->plugin.self = NULL; /* its key errors are the caller's: same section, same host */
        if (!h->err[0])
            snprintf(h->err, sizeof h->err, "the base policy '%s' failed to initialise (it gave no "
                     "reason)", name);
        amp_base_policy_free(b);
        return NULL;
    }
    b->vt = *bv;
    b->vt.init = NULL;
    b->vt.fini = NULL;
    if (!b->vt.requires_scaler) b->vt.requires_scaler = no_scaler;
    if (!b->vt.allow_tf32) b->vt.allow_tf32 = no_tf32;
    if (!b->vt.scale_update) b->vt.scale_update = default_scale;
    b->vt.struct_size = sizeof b->vt;
    b->info.struct_size = sizeof b->info;
    b->info.name = b->plugin.entry->name;
    b->info.version = b->plugin.entry->version;
    b->info.vtable = &b->vt;
    b->info.self = b->plugin.self;
    h->base = b;
    amp_log(AMP_LOG_DEBUG, "%s plugin '%s' builds on the precision plugin '%s' %s (%s)", h->section,
            h->plugin, b->info.name, b->info.version, b->plugin.path);
    return &b->info;
}

void amp_base_policy_free(amp_base_policy *b) {
    if (!b) return;
    amp_plugin_close(&b->plugin);
    free(b);
}
