/* A valid scaler (scale 1, state saved) whose entry name is PLUGIN_NAME,
 * given by the build: 63 characters (the limit: it must train, checkpoint
 * and resume) and 64 (one more: the loader must refuse it). */
#include <string.h>

#include "amptrain/plugin.h"

static int nl_init(const amp_host_api *host, void **self)
{
    (void)host;
    *self = NULL;
    return 0;
}
static void nl_fini(void *self) { (void)self; }
static double nl_get_scale(void *self) { (void)self; return 1.0; }
static int nl_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    (void)self;
    *skip = stats->found_inf != 0;
    return 0;
}
static int nl_save(void *self, void *buf, size_t cap, size_t *len)
{
    (void)self;
    *len = 4;
    if (buf && cap >= 4) memcpy(buf, "nlen", 4);
    return 0;
}
static int nl_load(void *self, const void *buf, size_t len)
{
    (void)self;
    return len == 4 && memcmp(buf, "nlen", 4) == 0 ? 0 : 1;
}

static const amp_scaler_vtable nl_vtable = {(uint32_t)sizeof(amp_scaler_vtable), nl_init, nl_fini,
                                            nl_get_scale, nl_update, nl_save, nl_load};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, PLUGIN_NAME, "1.0.0", "test: a name at the length limit",
                  &nl_vtable);
