/* Plugin loader: name -> file through the search order, the trust checks,
 * dlopen, the ABI checks, and the host services table the plugin gets.
 *
 * What runs when: the trust checks (owner and modes of the file and of every
 * folder up to /, see amp_plugin_check_trust) and the ELF check come first
 * and run no plugin code. dlopen then runs the file's ELF constructors, and
 * those of the libraries it links, as any dlopen does: a file that passed
 * the trust checks is code the user chose to run. After dlopen the host
 * only reads data: the entry and its vtable are checked (every pointer and
 * size against the plugin's own loaded image) before any vtable function
 * is called, and none is called before amp_plugin_init. */
#ifndef AMP_LOADER_H
#define AMP_LOADER_H

#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "amptrain/plugin.h"
#include "io/config.h"

/* The longest entry string (name, version, description, keys) believed. */
#define AMP_PLUGIN_TEXT_MAX 4096
/* The largest vtable struct_size believed (a few dozen pointers today). */
#define AMP_PLUGIN_STRUCT_MAX 4096

/* State behind the amp_host_api a plugin receives. */
typedef struct amp_plugin_host {
    amp_config *cfg;
    const char *section;    /* "precision" or "scaler" */
    const char *plugin;     /* the plugin's name, for log lines */
    const char *const *layers;
    int layer_count;
    const unsigned *layer_classes; /* [layer_count] op class bits, or NULL (none known) */
    amp_plugin_kind kind;   /* the plugin's kind */
    int in_init;            /* inside the plugin's init (base_policy may be called) */
    int base_busy;          /* inside its base policy's init (it may take none) */
    struct amp_base_policy *base; /* the precision policy it builds on, or NULL (owned) */
    char err[1024];         /* last message from host->error / key_error / a getter */
    char misuse[512];       /* the first host call with a NULL or bad argument, or "" */
    struct amp_plugin_host *next_live; /* the hosts of plugins between init and close */
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

/* The directories searched, in order, each once: AMPTRAIN_PLUGIN_PATH
 * entries (as many as it has), then the build tree's plugins/ beside the
 * executable, or <prefix>/lib/amptrain/plugins. Entries that are no folder
 * are skipped here (the CLI refuses them first: amp_env_check). */
typedef struct amp_plugin_dirs {
    char **dir; /* [n] real paths, malloc'd */
    int n;
} amp_plugin_dirs;
/* 0, or -1 when out of memory (d then empty). Free with amp_plugin_dirs_free. */
int amp_plugin_search_dirs(amp_plugin_dirs *d);
void amp_plugin_dirs_free(amp_plugin_dirs *d);

/* The file name a plugin of this kind and name has: amp_<kind>_<name>.so */
void amp_plugin_file_name(char *out, size_t outlen, amp_plugin_kind kind, const char *name);
const char *amp_plugin_kind_name(amp_plugin_kind kind);

/* Whether a plugin spec is a path (it contains '/' or ends in .so), not a name. */
int amp_plugin_spec_is_path(const char *spec);

/* Opens `spec` (a name, or a path when it contains '/' or ends in .so;
 * relative paths are taken relative to base_dir) and checks its entry. The
 * file's ELF constructors run (dlopen), after the trust checks; no vtable
 * function is called. 0 or -1 with err. */
int amp_plugin_open(amp_plugin *p, amp_plugin_kind kind, const char *spec, const char *base_dir,
                    char *err, size_t errlen);

/* Reads the entry of a file without keeping it open: for `amptrain plugins`.
 * The same checks as amp_plugin_open, so the same code runs: the file's ELF
 * constructors, only when it passed the trust checks. 0 with *entry copied
 * (fields the plugin's ABI minor lacks are NULL; the strings are static
 * copies, valid until the next call), -1 with the reason it is rejected. */
int amp_plugin_probe(const char *path, amp_plugin_info *entry, char *err, size_t errlen);

/* The trust rules (sshd's StrictModes): the plugin file, the folder holding
 * it and every folder above, up to /, must belong to root or to the user;
 * the file and its folder must not be writable by group or others (a sticky
 * shared folder such as /tmp included: anyone can create files there); a
 * folder above may be group/world-writable only when sticky, or
 * group-writable when its group holds its owner alone (a user private
 * group: umask 002 on Debian; Debian's sshd allows it too). Checked for
 * the path as given (a symlink's folder) and for its target. 0, or -1 with
 * a message naming the path and the fix: `chmod go-w PATH` only where the
 * user owns PATH and it is not a sticky shared folder, else "move the
 * plugin". */
int amp_plugin_check_trust(const char *path, char *err, size_t errlen);

typedef enum amp_trust_role {
    AMP_TRUST_FILE,     /* the plugin file */
    AMP_TRUST_FOLDER,   /* the folder holding it */
    AMP_TRUST_ANCESTOR, /* a folder above that */
} amp_trust_role;

/* One step of amp_plugin_check_trust: judges path's stat for its role, for
 * the user uid me; group_private says that the group of path holds no one
 * but path's owner (amp_group_only_owner; used for AMP_TRUST_ANCESTOR only).
 * 0 trusted, -1 with the message. Exposed for tests. */
int amp_plugin_trust_judge(const char *path, const struct stat *st, amp_trust_role role,
                           uid_t me, int group_private, char *err, size_t errlen);

/* Whether group gid has the user owner as its only member (primary or
 * supplementary), as Debian's sshd decides that a group-writable file is
 * safe. 0 when the group is unknown or has no member. */
int amp_group_only_owner(gid_t gid, uid_t owner);

/* The host behind a plugin's ctx for `service`, or NULL after recording
 * the misuse (a ctx that is not host->ctx, or `value`, the argument named
 * `arg`, NULL). For host services kept out of this file. */
amp_plugin_host *amp_plugin_host_args(void *ctx, const char *service, const char *arg,
                                      const void *value);

/* Calls the vtable's init with a host table over cfg's [section]. */
int amp_plugin_init(amp_plugin *p, amp_config *cfg, const char *section,
                    const char *const *layers, int layer_count, char *err, size_t errlen);

/* Calls fini, then closes the base policy the plugin took, then the file. */
void amp_plugin_close(amp_plugin *p);

/* The first host service call of p's plugin with a NULL or bad argument
 * (a NULL format or key, a NULL out pointer, a ctx that is not host->ctx, a
 * log level out of range), naming the plugin and the service; NULL when
 * there was none. The host refuses such a call without touching the bad
 * argument; amp_plugin_init fails on it, the session checks it after each
 * plugin call. */
const char *amp_plugin_misuse(const amp_plugin *p);

/* Why p's last call failed: what it said through host->error (or a
 * getter's message), else "(the plugin gave no reason)". */
static inline const char *amp_plugin_reason(const amp_plugin *p) {
    return p->host.err[0] ? p->host.err : "(the plugin gave no reason)";
}

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
