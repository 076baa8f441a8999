/* amp_scaler_hostmisuse.so: calls a host service with a NULL or bad
 * argument, chosen by its [scaler] key `misuse` (read with get_string, so
 * the key itself is a valid call). The host must refuse each call without
 * touching the bad argument and stop the run with a message naming the
 * plugin and the service, whether init then fails or succeeds; `at_update`
 * misuses host->log in update instead. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "amptrain/plugin.h"

/* The NULL formats are the point of this plugin. */
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-extra-args"

typedef struct hm_state {
    const amp_host_api *host;
} hm_state;

static const char *volatile no_text; /* NULL the compiler cannot see through */

static int hm_init(const amp_host_api *host, void **self)
{
    const char *how = "";
    host->get_string(host->ctx, "misuse", &how);
    hm_state *s = calloc(1, sizeof *s);
    if (!s)
        return 1;
    s->host = host;
    *self = s;
    double d;
    int64_t i;
    void *garbage = (void *)(uintptr_t)0x1234;
    if (!strcmp(how, "error_null"))
        host->error(host->ctx, no_text);
    else if (!strcmp(how, "error_null_init_ok"))
        host->error(host->ctx, no_text);
    else if (!strcmp(how, "log_null"))
        host->log(host->ctx, AMP_LOG_WARN, no_text);
    else if (!strcmp(how, "log_level"))
        host->log(host->ctx, 42, "level 42");
    else if (!strcmp(how, "key_error_null_key"))
        host->key_error(host->ctx, no_text, "bad");
    else if (!strcmp(how, "key_error_null"))
        host->key_error(host->ctx, "misuse", no_text);
    else if (!strcmp(how, "get_double_null_key"))
        host->get_double(host->ctx, no_text, &d);
    else if (!strcmp(how, "get_int_null_out"))
        host->get_int(host->ctx, "misuse", NULL);
    else if (!strcmp(how, "get_string_null_out"))
        host->get_string(host->ctx, "misuse", NULL);
    else if (!strcmp(how, "each_key_null_fn"))
        host->each_key(host->ctx, "", NULL, NULL);
    else if (!strcmp(how, "ctx_null"))
        host->error(NULL, "error with a NULL ctx");
    else if (!strcmp(how, "ctx_garbage"))
        host->get_double(garbage, "misuse", &d);
    else if (!strcmp(how, "at_update"))
        return 0;
    (void)i;
    /* error_null_init_ok and log_*: init claims success anyway; a failed
     * init frees its own state (the host calls no fini after it) */
    if (!strcmp(how, "error_null_init_ok") || !strncmp(how, "log_", 4))
        return 0;
    free(s);
    *self = NULL;
    return 1;
}

static void hm_fini(void *self) { free(self); }
static double hm_get_scale(void *self) { return 1.0; }

static int hm_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    hm_state *s = self;
    *skip = stats->found_inf != 0;
    s->host->log(s->host->ctx, AMP_LOG_INFO, no_text);
    return 0;
}

static const amp_scaler_vtable hm_vtable = {(uint32_t)sizeof(amp_scaler_vtable), hm_init, hm_fini,
                                            hm_get_scale, hm_update, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "hostmisuse", "1.0.0",
                  "test: host services called with NULL or bad arguments", &hm_vtable);
