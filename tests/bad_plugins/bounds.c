/* Entries whose sizes or pointers lie (issue 15): the host must check each
 * against the plugin's own image before following it. One define per file:
 *   BOUND_ENTRY_SIZE    entry struct_size 0xFFFFFFFF (crashed `plugins -v`)
 *   BOUND_VTABLE_SIZE   vtable struct_size 0xFFFFFFFF
 *   BOUND_WILD_NAME     name points to address 16
 *   BOUND_BAD_NAME      name "Bad/Name" (would become a file name)
 *   BOUND_CTRL_VERSION  version with a newline (would break listings)
 *   BOUND_WILD_VTABLE   vtable points to address 4096
 * The functions are never called: every variant must be refused first. */
#include <stdint.h>
#include <stdlib.h>

#include "amptrain/plugin.h"

static int b_init(const amp_host_api *host, void **self)
{
    (void)host;
    (void)self;
    abort(); /* refused before any call */
}
static void b_fini(void *self) { (void)self; }
static double b_get_scale(void *self)
{
    (void)self;
    return 1.0;
}
static int b_update(void *self, const amp_scaler_stats *st, int *skip)
{
    (void)self;
    (void)st;
    *skip = 0;
    return 0;
}

#ifdef BOUND_VTABLE_SIZE
#define VT_SIZE 0xFFFFFFFFu
#else
#define VT_SIZE ((uint32_t)sizeof(amp_scaler_vtable))
#endif
__attribute__((unused)) static const amp_scaler_vtable vt = {VT_SIZE, b_init, b_fini, b_get_scale, b_update, NULL, NULL};

#if defined BOUND_ENTRY_SIZE
#define E_SIZE 0xFFFFFFFFu
#define E_NAME "hugesize"
#elif defined BOUND_VTABLE_SIZE
#define E_NAME "hugevtable"
#elif defined BOUND_WILD_NAME
#define E_NAME ((const char *)(uintptr_t)16)
#elif defined BOUND_BAD_NAME
#define E_NAME "Bad/Name"
#elif defined BOUND_CTRL_VERSION
#define E_NAME "ctrlversion"
#define E_VERSION "1.0\n"
#elif defined BOUND_WILD_VTABLE
#define E_NAME "wildvtable"
#define E_VTABLE ((const void *)(uintptr_t)4096)
#endif
#ifndef E_SIZE
#define E_SIZE ((uint32_t)sizeof(amp_plugin_info))
#endif
#ifndef E_VERSION
#define E_VERSION "1.0.0"
#endif
#ifndef E_VTABLE
#define E_VTABLE (&vt)
#endif

AMP_PLUGIN_EXPORT extern const amp_plugin_info amp_plugin_entry;
const amp_plugin_info amp_plugin_entry = {AMP_PLUGIN_ABI_MAJOR, AMP_PLUGIN_ABI_MINOR, E_SIZE,
                                          AMP_PLUGIN_KIND_SCALER, E_NAME, E_VERSION,
                                          "test: an entry that lies", E_VTABLE, NULL};
