/* Scaler "none": scale 1 always. Steps with non-finite gradients are still
 * skipped, so a stray inf/NaN never reaches the weights. */
#include <stdlib.h>

#include "amptrain/plugin.h"
#include "scaler_common.h"

typedef struct none_state {
    const amp_host_api *host;
} none_state;

static int none_init(const amp_host_api *host, void **self)
{
    none_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "none scaler: out of memory");
        return -1;
    }
    s->host = host;
    *self = s;
    return 0;
}

static void none_fini(void *self) { free(self); }

static double none_get_scale(void *self) { return 1.0; }

static int none_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    none_state *s = self;
    return amp_scaler_update_begin(s->host, stats, skip, "none");
}

/* The scale is a constant, so the record is only magic + version: enough
 * for a checkpoint of another scaler to be refused instead of ignored. */
#define NONE_STATE_VERSION 1u
#define NONE_STATE_SIZE (4 + 4)
static const char none_magic[4] = {'a', 'm', 'p', 'N'};

static int none_state_save(void *self, void *buf, size_t cap, size_t *len)
{
    none_state *s = self;
    int rc = amp_scaler_save_begin(s->host, buf, cap, len, NONE_STATE_SIZE);
    if (rc <= 0)
        return rc;
    unsigned char *p = buf;
    memcpy(p, none_magic, 4);
    amp_le_put_u32(p + 4, NONE_STATE_VERSION);
    return 0;
}

static int none_state_load(void *self, const void *buf, size_t len)
{
    none_state *s = self;
    return amp_scaler_load_check(s->host, buf, len, NONE_STATE_SIZE, none_magic,
                                 NONE_STATE_VERSION, "none");
}

static const amp_scaler_vtable none_vtable = {
    (uint32_t)sizeof(amp_scaler_vtable), none_init, none_fini, none_get_scale, none_update,
    none_state_save, none_state_load};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "none", "1.0.0",
                  "no loss scaling (scale 1); skips steps with non-finite gradients",
                  &none_vtable);
