/* A precision plugin built on another (plugin ABI 1.4, host->base_policy):
 * the host loads the base by name, runs its init with the calling plugin's
 * own host table (so the base reads its keys from the same section and
 * reports through it), hands back its functions with the host's defaults
 * where it leaves optional ones out, and unloads it after the caller's
 * fini. One base per plugin; a base takes none. */
#ifndef AMP_BASE_POLICY_H
#define AMP_BASE_POLICY_H

#include "amptrain/plugin.h"
#include "loader.h"

typedef struct amp_base_policy {
    amp_plugin plugin;       /* the base, opened by name, its init run */
    amp_precision_vtable vt; /* what the caller gets: init/fini NULL, defaults filled */
    amp_policy_base info;    /* what base_policy returns */
} amp_base_policy;

/* The host service amp_host_api.base_policy (its contract is in plugin.h). */
const amp_policy_base *amp_base_policy_take(void *ctx, const char *name);

/* Finalises and unloads b (its init's state, the file) and frees it; NULL
 * does nothing. Called by amp_plugin_close after the caller's fini. */
void amp_base_policy_free(amp_base_policy *b);

#endif
