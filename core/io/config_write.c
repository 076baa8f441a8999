/* The resolved config: every key read, with its value and where it came
 * from (the file's line, --set or the default), written as an INI file that
 * reads back as the same values (config_internal.h). */
#include "io/config.h"
#include "io/config_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- writing */

/* Every line written below reads back (config.ini must re-run the same
 * configuration): no line is longer than the reader takes, comments carry
 * no control bytes (a path may hold a newline), and values are the ones
 * amp_cfg_value_unwritable let in. */

/* The text of a comment line: control bytes as '?', cut to fit a line. */
static void comment_text(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void comment_text(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

/* "key = value  ; origin" on one line when it fits, else the origin on the
 * line before ("key = value" fits: amp_cfg_value_unwritable). */
static void write_entry(FILE *out, const char *key, const char *value, const char *origin,
                        const char *note)
{
    char o[LINE_MAX_CHARS - 1]; /* "; " + o fits a line */
    comment_text(o, sizeof o, "%s%s", origin, note);
    size_t kv = strlen(key) + 3 + strlen(value);
    if (kv + 4 + strlen(o) <= LINE_MAX_CHARS) {
        fprintf(out, "%s = %s  ; %s\n", key, value, o);
        return;
    }
    fprintf(out, "; %s\n", o);
    fprintf(out, "%s = %s\n", key, value);
}

/* The lookups only count comparisons: cfg is otherwise left as it is. */
static void write_section(const amp_config *ccfg, FILE *out, size_t sec)
{
    amp_config *cfg = (amp_config *)ccfg;
    const cfg_sec *sc = &cfg->secs[sec];
    fprintf(out, "\n[%s]\n", sc->name);
    for (size_t k = sc->known_head; k != NONE; k = cfg->known[k].next) {
        const cfg_known *kn = &cfg->known[k];
        if (!kn->key)
            continue;
        if (kn->value) {
            write_entry(out, kn->key, kn->value, kn->origin, "");
        } else {
            char c[LINE_MAX_CHARS - 1];
            comment_text(c, sizeof c, "%s is not set", kn->key);
            fprintf(out, "; %s\n", c);
        }
    }
    for (size_t i = sc->item_head; i != NONE; i = cfg->items[i].next) {
        const cfg_item *it = &cfg->items[i];
        if (amp_cfg_known_find(cfg, sec, it->key) == NONE)
            write_entry(out, it->key, it->value, it->where, ", not read");
    }
}

int amp_config_write_resolved(const amp_config *cfg, FILE *out)
{
    char head[LINE_MAX_CHARS - 1];
    comment_text(head, sizeof head, "amptrain resolved configuration (defaults included) from %s",
                 cfg->path);
    fprintf(out, "; %s\n", head);
    /* Known sections in the order they were first asked for, then the file's
     * sections nobody asked for. */
    for (size_t k = 0; k < cfg->n_known; k++)
        if (amp_cfg_first_of_section(cfg, k))
            write_section(cfg, out, cfg->known[k].sec);
    for (size_t i = 0; i < cfg->n_items; i++) {
        const cfg_item *it = &cfg->items[i];
        if (!it->key && cfg->secs[it->sec].known_head == NONE)
            write_section(cfg, out, it->sec);
    }
    if (fflush(out) != 0 || ferror(out))
        return -1;
    return 0;
}

int amp_config_each_resolved(const amp_config *cfg,
                             int (*fn)(void *user, const char *section, const char *key,
                                       const char *value, const char *origin),
                             void *user)
{
    for (size_t k = 0; k < cfg->n_known; k++) {
        const cfg_known *kn = &cfg->known[k];
        if (!kn->key || !kn->value)
            continue;
        int rc = fn(user, kn->section, kn->key, kn->value, kn->origin);
        if (rc)
            return rc;
    }
    return 0;
}
