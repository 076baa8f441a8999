/* libFuzzer target: the INI layer (core/io/config.c) and the core's reading of
 * it (core/config/settings.c).
 *
 * Input: INI text, optionally followed by NUL-separated --set assignments
 * ("[train]\nsteps = 3\0train.steps=abc\0optim.lr=1"). A NUL can never be part
 * of a valid INI file, so the split costs the parser nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/config.h"
#include "config/settings.h"

static int each_key(void *user, const char *key, const char *value, const char *where)
{
    size_t *total = user;
    *total += strlen(key) + strlen(value) + strlen(where);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t ini_len = nul ? (size_t)(nul - text) : size;

    char err[1024] = "";
    amp_config *cfg = amp_config_parse("fuzz.ini", text, ini_len, err, sizeof err);
    if (!cfg) {
        if (!err[0]) /* every failure must say why */
            abort();
        return 0;
    }
    /* The --set assignments: copied so each is a C string of its own. */
    size_t pos = ini_len;
    while (pos < size) {
        pos++; /* the NUL */
        const char *a = text + pos;
        size_t n = strnlen(a, size - pos);
        char *assign = malloc(n + 1);
        if (!assign)
            abort();
        memcpy(assign, a, n);
        assign[n] = '\0';
        err[0] = '\0';
        if (amp_config_set(cfg, assign, err, sizeof err) != 0 && !err[0])
            abort();
        free(assign);
        pos += n;
    }

    /* What `amptrain train` does with it before any plugin is loaded. */
    amp_settings s;
    err[0] = '\0';
    if (amp_settings_read(&s, cfg, err, sizeof err) != 0 && !err[0])
        abort();
    size_t total = 0;
    amp_config_each(cfg, "precision", "", each_key, &total);
    amp_config_each(cfg, "scaler", "layer.", each_key, &total);
    const char *where = NULL;
    amp_config_lookup(cfg, "scaler", "init_scale", &where);
    amp_config_declare_section(cfg, "precision");
    amp_config_declare_section(cfg, "scaler");
    err[0] = '\0';
    if (amp_config_check_unread(cfg, err, sizeof err) != 0 && !err[0])
        abort();
    amp_config_write_resolved(cfg, sink);
    amp_config_free(cfg);
    return 0;
}
