/* A small fake amp_host_api for driving plugins directly in tests: a
 * key/value table for the plugin's section (tracking which keys were read),
 * a list of layer names, and the last error/log message kept for asserts.
 * Header-only; include from exactly one test file each. */
#ifndef AMP_TESTS_PLUGIN_TEST_HOST_H
#define AMP_TESTS_PLUGIN_TEST_HOST_H

#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amptrain/plugin.h"

#define TH_MAX_KEYS 32
#define TH_MAX_LAYERS 8

typedef struct th_kv {
    const char *key;
    const char *value;
    int read;
} th_kv;

typedef struct test_host {
    amp_host_api api;
    th_kv kv[TH_MAX_KEYS];
    int nkv;
    const char *layers[TH_MAX_LAYERS];
    unsigned classes[TH_MAX_LAYERS]; /* op class bits per layer (layer_op_classes) */
    int nlayers;
    int nerrors;         /* error + key_error calls */
    char error[512];     /* the last one */
    char error_key[128]; /* key of the last key_error ("" for error) */
    int nwarn;           /* log calls at WARN or worse */
    char log[512];
} test_host;

static int th_failures;

/* Prints a failed check with its location; the test keeps going so one run
 * shows every failure. */
#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            th_failures++;                                                                   \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
        }                                                                                    \
    } while (0)

static inline th_kv *th_find(test_host *h, const char *key)
{
    for (int i = 0; i < h->nkv; i++)
        if (strcmp(h->kv[i].key, key) == 0)
            return &h->kv[i];
    return NULL;
}

static void th_log(void *ctx, int level, const char *fmt, ...)
{
    test_host *h = ctx;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->log, sizeof h->log, fmt, ap);
    va_end(ap);
    if (level <= AMP_LOG_WARN)
        h->nwarn++;
}

static void th_error(void *ctx, const char *fmt, ...)
{
    test_host *h = ctx;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->error, sizeof h->error, fmt, ap);
    va_end(ap);
    h->error_key[0] = '\0';
    h->nerrors++;
}

/* Prefixes the key like the real host ("file:line: [section] key: msg"). */
static void th_key_error(void *ctx, const char *key, const char *fmt, ...)
{
    test_host *h = ctx;
    char msg[360]; /* + key[128] + ": " fits error[512] */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(h->error_key, sizeof h->error_key, "%s", key ? key : "(null)");
    snprintf(h->error, sizeof h->error, "%s: %s", h->error_key, msg);
    h->nerrors++;
}

/* Like the real config: strtod/strtoll with an end check; -1 records an error. */
static int th_get_double(void *ctx, const char *key, double *out)
{
    test_host *h = ctx;
    th_kv *kv = th_find(h, key);
    if (!kv)
        return 0;
    kv->read = 1;
    char *end;
    errno = 0;
    double v = strtod(kv->value, &end);
    if (end == kv->value || *end != '\0') {
        th_key_error(h, key, "'%s' is not a number", kv->value);
        return -1;
    }
    *out = v;
    return 1;
}

static int th_get_int(void *ctx, const char *key, int64_t *out)
{
    test_host *h = ctx;
    th_kv *kv = th_find(h, key);
    if (!kv)
        return 0;
    kv->read = 1;
    char *end;
    errno = 0;
    long long v = strtoll(kv->value, &end, 10);
    if (end == kv->value || *end != '\0' || errno == ERANGE) {
        th_key_error(h, key, "'%s' is not an integer", kv->value);
        return -1;
    }
    *out = v;
    return 1;
}

static int th_get_string(void *ctx, const char *key, const char **out)
{
    test_host *h = ctx;
    th_kv *kv = th_find(h, key);
    if (!kv)
        return 0;
    kv->read = 1;
    *out = kv->value;
    return 1;
}

static int th_each_key(void *ctx, const char *prefix,
                       int (*fn)(void *user, const char *key, const char *value), void *user)
{
    test_host *h = ctx;
    size_t n = strlen(prefix);
    for (int i = 0; i < h->nkv; i++) {
        if (strncmp(h->kv[i].key, prefix, n) != 0)
            continue;
        h->kv[i].read = 1;
        int rc = fn(user, h->kv[i].key, h->kv[i].value);
        if (rc)
            return rc;
    }
    return 0;
}

static int th_layer_count(void *ctx) { return ((test_host *)ctx)->nlayers; }

static const char *th_layer_name(void *ctx, int i)
{
    test_host *h = ctx;
    return i >= 0 && i < h->nlayers ? h->layers[i] : NULL;
}

static unsigned th_layer_op_classes(void *ctx, int i)
{
    test_host *h = ctx;
    return i >= 0 && i < h->nlayers ? h->classes[i] : 0u;
}

static inline void th_init(test_host *h)
{
    memset(h, 0, sizeof *h);
    h->api.struct_size = (uint32_t)sizeof(amp_host_api);
    h->api.ctx = h;
    h->api.log = th_log;
    h->api.error = th_error;
    h->api.key_error = th_key_error;
    h->api.get_double = th_get_double;
    h->api.get_int = th_get_int;
    h->api.get_string = th_get_string;
    h->api.each_key = th_each_key;
    h->api.layer_count = th_layer_count;
    h->api.layer_name = th_layer_name;
    h->api.layer_op_classes = th_layer_op_classes;
}

static inline void th_set(test_host *h, const char *key, const char *value)
{
    th_kv *kv = th_find(h, key);
    if (!kv) {
        if (h->nkv == TH_MAX_KEYS) {
            fprintf(stderr, "test_host: too many keys\n");
            exit(2);
        }
        kv = &h->kv[h->nkv++];
        kv->key = key;
    }
    kv->value = value;
    kv->read = 0;
}

/* The first key nobody asked for, or NULL. */
static inline const char *th_unread(const test_host *h)
{
    for (int i = 0; i < h->nkv; i++)
        if (!h->kv[i].read)
            return h->kv[i].key;
    return NULL;
}

/* Opens AMP_TEST_PLUGIN_DIR/<file> and returns its checked entry (NULL after
 * printing why). The handle is left open for the life of the test. */
static inline const amp_plugin_info *th_open_plugin(const char *file, uint32_t kind,
                                                      const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", AMP_TEST_PLUGIN_DIR, file);
    void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "cannot load %s: %s (build the plugin targets first)\n", path,
                dlerror());
        th_failures++;
        return NULL;
    }
    const amp_plugin_info *e = dlsym(so, AMP_PLUGIN_ENTRY_SYMBOL);
    if (!e) {
        fprintf(stderr, "%s: no %s symbol: %s\n", path, AMP_PLUGIN_ENTRY_SYMBOL, dlerror());
        th_failures++;
        return NULL;
    }
    CHECK(e->abi_major == AMP_PLUGIN_ABI_MAJOR, "%s: abi_major %u", file, e->abi_major);
    CHECK(e->abi_minor == AMP_PLUGIN_ABI_MINOR, "%s: abi_minor %u", file, e->abi_minor);
    CHECK(e->struct_size >= sizeof(amp_plugin_info), "%s: struct_size %u", file,
          e->struct_size);
    CHECK(e->kind == kind, "%s: kind %u, expected %u", file, e->kind, kind);
    CHECK(e->name && strcmp(e->name, name) == 0, "%s: name '%s', expected '%s'", file,
          e->name ? e->name : "(null)", name);
    CHECK(e->version && *e->version, "%s: no version", file);
    CHECK(e->description && *e->description, "%s: no description", file);
    CHECK(e->vtable != NULL, "%s: no vtable", file);
    int ok = e->abi_major == AMP_PLUGIN_ABI_MAJOR && e->kind == kind && e->vtable;
    return ok ? e : NULL;
}

/* A precision policy under test: its host (outlives self), vtable, state. */
typedef struct th_policy {
    test_host h;
    const amp_precision_vtable *vt;
    void *self;
} th_policy;

/* Sets kv (NULL-terminated key, value pairs) on p->h, already th_init'ed
 * with its layers, and runs the policy's init. Its status. */
static inline int th_policy_init(th_policy *p, const amp_precision_vtable *vt,
                                 const char *const *kv)
{
    for (int i = 0; kv && kv[i]; i += 2)
        th_set(&p->h, kv[i], kv[i + 1]);
    p->vt = vt;
    p->self = NULL;
    return vt->init(&p->h.api, &p->self);
}

static inline void th_policy_free(th_policy *p)
{
    if (p->self)
        p->vt->fini(p->self);
    p->self = NULL;
}

#endif
