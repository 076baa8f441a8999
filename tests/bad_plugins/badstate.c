/* A scaler whose state_save lies about lengths, built three times:
 *   -DBAD_STATE_GROW    -> amp_scaler_stategrow.so: asks for 8 bytes, then
 *                          reports 4096 for the same state (the host used
 *                          to store 4096 bytes of an 8-byte buffer)
 *   -DBAD_STATE_HUGE    -> amp_scaler_statehuge.so: asks for SIZE_MAX bytes
 *   -DBAD_STATE_OVERRUN -> amp_scaler_stateoverrun.so: asks for 8 bytes and
 *                          writes 16 */
#include <stdint.h>
#include <string.h>

#include "amptrain/plugin.h"

static int bs_init(const amp_host_api *host, void **self)
{
    (void)host;
    *self = NULL;
    return 0;
}
static void bs_fini(void *self) { (void)self; }
static double bs_get_scale(void *self) { (void)self; return 1.0; }
static int bs_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    (void)self;
    *skip = stats->found_inf != 0;
    return 0;
}

static int bs_save(void *self, void *buf, size_t cap, size_t *len)
{
    (void)self;
#if defined(BAD_STATE_HUGE)
    (void)buf;
    (void)cap;
    *len = SIZE_MAX;
#elif defined(BAD_STATE_OVERRUN)
    *len = 8;
    if (buf) memset(buf, 0x11, cap + 8);
#else
    *len = buf ? 4096 : 8;
    if (buf) memset(buf, 0x11, cap);
#endif
    return 0;
}
static int bs_load(void *self, const void *buf, size_t len)
{
    (void)self;
    (void)buf;
    (void)len;
    return 0;
}

static const amp_scaler_vtable bs_vtable = {(uint32_t)sizeof(amp_scaler_vtable), bs_init, bs_fini,
                                            bs_get_scale, bs_update, bs_save, bs_load};

#if defined(BAD_STATE_HUGE)
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "statehuge", "1.0.0", "test: state of SIZE_MAX bytes",
                  &bs_vtable);
#elif defined(BAD_STATE_OVERRUN)
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "stateoverrun", "1.0.0", "test: writes past cap",
                  &bs_vtable);
#else
AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "stategrow", "1.0.0",
                  "test: state_save reports 8 bytes, then 4096", &bs_vtable);
#endif
