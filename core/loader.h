/* Plugin loader: name -> file through the search order, dlopen, ABI checks
 * before any plugin code runs, and the host services table the plugin gets. */
#ifndef AMP_LOADER_H
#define AMP_LOADER_H

#include <limits.h>
#include <stddef.h>

#include "amptrain/plugin.h"
#include "io/config.h"

#define AMP_MAX_PLUGIN_DIRS 16

/* State behind the amp_host_api a plugin receives. */
typedef struct amp_plugin_host {
    amp_config *cfg;
    const char *section;    /* "precision" or "scaler" */
    const char *plugin;     /* the plugin's name, for log lines */
    const char *const *layers;
    int layer_count;
    char err[1024];         /* last message from host->error / key_error / a getter */
    amp_host_api api;
} amp_plugin_host;

typedef struct amp_plugin {
    void *handle;
    const amp_plugin_info *entry; /* in the plugin; read fields past ABI 1.0 with amp_plugin_keys */
    amp_plugin_kind kind;
    char path[PATH_MAX];
    void *self;             /* the plugin's state after init */
    amp_plugin_host host;
    /* The host's copy of the vtable: the plugin's struct_size bytes, the
     * rest NULL, so a plugin built with a lower ABI minor (a shorter vtable)
     * reads as "optional functions not provided". */
    union {
        amp_precision_vtable precision;
        amp_scaler_vtable scaler;
    } vt;
} amp_plugin;

/* The directories searched, in order: AMPTRAIN_PLUGIN_PATH entries, then the
 * build tree's plugins/ beside the executable, or <prefix>/lib/amptrain/plugins. */
int amp_plugin_search_dirs(char dirs[][PATH_MAX], int max);

/* The file name a plugin of this kind and name has: amp_<kind>_<name>.so */
void amp_plugin_file_name(char *out, size_t outlen, amp_plugin_kind kind, const char *name);
const char *amp_plugin_kind_name(amp_plugin_kind kind);

/* Opens `spec` (a name, or a path when it contains '/' or ends in .so;
 * relative paths are taken relative to base_dir) and checks its entry.
 * Runs no plugin code. 0 or -1 with err. */
int amp_plugin_open(amp_plugin *p, amp_plugin_kind kind, const char *spec, const char *base_dir,
                    char *err, size_t errlen);

/* Reads the entry of a file without keeping it open: for `amptrain plugins`.
 * 0 with *entry copied (fields the plugin's ABI minor lacks are NULL), -1
 * with the reason it is rejected. */
int amp_plugin_probe(const char *path, amp_plugin_info *entry, char *err, size_t errlen);

/* Calls the vtable's init with a host table over cfg's [section]. */
int amp_plugin_init(amp_plugin *p, amp_config *cfg, const char *section,
                    const char *const *layers, int layer_count, char *err, size_t errlen);

void amp_plugin_close(amp_plugin *p);

static inline const amp_precision_vtable *amp_plugin_precision(const amp_plugin *p) {
    return &p->vt.precision;
}
static inline const amp_scaler_vtable *amp_plugin_scaler(const amp_plugin *p) {
    return &p->vt.scaler;
}

/* The entry's `keys` (ABI 1.1), or NULL when the plugin predates it. */
static inline const char *amp_plugin_keys(const amp_plugin_info *e) {
    return e->struct_size >= offsetof(amp_plugin_info, keys) + sizeof e->keys ? e->keys : NULL;
}

#endif
