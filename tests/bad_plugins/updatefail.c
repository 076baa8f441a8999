/* amp_scaler_updatefail.so: update fails at the second step with a reason
 * given through host->error. The run must stop there (exit 1) with that
 * reason and the plugin's name, and write no output as if it had succeeded. */
#include <stdlib.h>

#include "amptrain/plugin.h"

typedef struct uf_state {
    const amp_host_api *host;
    int updates;
} uf_state;

static int uf_init(const amp_host_api *host, void **self)
{
    uf_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "out of memory");
        return 1;
    }
    s->host = host;
    *self = s;
    return 0;
}

static void uf_fini(void *self) { free(self); }
static double uf_get_scale(void *self) { return 1.0; }

static int uf_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    uf_state *s = self;
    *skip = stats->found_inf != 0;
    if (++s->updates == 2) {
        s->host->error(s->host->ctx, "updatefail: the scale table is exhausted (test reason)");
        return 1;
    }
    return 0;
}

static const amp_scaler_vtable uf_vtable = {(uint32_t)sizeof(amp_scaler_vtable), uf_init, uf_fini,
                                            uf_get_scale, uf_update, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "updatefail", "1.0.0", "test: update fails at step 1",
                  &uf_vtable);
