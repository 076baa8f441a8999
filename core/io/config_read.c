/* The config's getters (typed, with ranges and "did you mean" for choices),
 * the record of why a key is not read, and the check that every key in the
 * file was read (config_internal.h). */
#include "io/config.h"
#include "io/config_internal.h"
#include "util/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- getters */

/* The entry for (section, key) or NULL; either way the key becomes known and
 * the entry read. */
static cfg_item *get_entry(amp_config *cfg, const char *section, const char *key)
{
    amp_cfg_known_note(cfg, section, key, NULL, NULL);
    cfg_item *it = amp_cfg_find_entry(cfg, section, key);
    if (it)
        it->read = 1;
    return it;
}

static int value_err(char *err, size_t errlen, const cfg_item *it, const char *what,
                     const char *expected)
{
    amp_set_err(err, errlen, "%s: [%s] %s = '%s': %s; expected %s", it->where, it->section, it->key,
            it->value, what, expected);
    return -1;
}

int amp_config_get_int(amp_config *cfg, const char *section, const char *key, int64_t def,
                       int64_t min, int64_t max, int64_t *out, char *err, size_t errlen)
{
    char text[64], expected[96];
    snprintf(expected, sizeof expected, "an integer in [%lld, %lld]", (long long)min,
             (long long)max);
    cfg_item *it = get_entry(cfg, section, key);
    if (!it) {
        *out = def;
        snprintf(text, sizeof text, "%lld", (long long)def);
        amp_cfg_known_note(cfg, section, key, text, "default");
        return 0;
    }
    const char *s = it->value;
    if (!*s)
        return value_err(err, errlen, it, "empty value", expected);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end)
        return value_err(err, errlen, it, "not an integer", expected);
    if (errno == ERANGE)
        return value_err(err, errlen, it,
                         v < 0 ? "too small for a 64-bit integer" : "too large for a 64-bit integer",
                         expected);
    if (v < min || v > max)
        return value_err(err, errlen, it, "out of range", expected);
    *out = v;
    snprintf(text, sizeof text, "%lld", v);
    amp_cfg_known_note(cfg, section, key, text, it->where);
    return 1;
}

int amp_config_get_double(amp_config *cfg, const char *section, const char *key, double def,
                          double min, double max, double *out, char *err, size_t errlen)
{
    char text[64], lo[32], hi[32], expected[96];
    amp_cfg_fmt_double(lo, sizeof lo, min);
    amp_cfg_fmt_double(hi, sizeof hi, max);
    snprintf(expected, sizeof expected, "a number in [%s, %s]", lo, hi);
    cfg_item *it = get_entry(cfg, section, key);
    if (!it) {
        *out = def;
        amp_cfg_fmt_double(text, sizeof text, def);
        amp_cfg_known_note(cfg, section, key, text, "default");
        return 0;
    }
    const char *s = it->value;
    if (!*s)
        return value_err(err, errlen, it, "empty value", expected);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end)
        return value_err(err, errlen, it, "not a number", expected);
    if (!isfinite(v))
        return value_err(err, errlen, it,
                         errno == ERANGE ? "too large for a double" : "not a finite number",
                         expected);
    /* Underflow to a subnormal is still a usable value; to zero it is not. */
    if (errno == ERANGE && v == 0.0)
        return value_err(err, errlen, it, "too small for a double (it would be 0)", expected);
    if (!(v >= min && v <= max))
        return value_err(err, errlen, it, "out of range", expected);
    *out = v;
    amp_cfg_fmt_double(text, sizeof text, v);
    amp_cfg_known_note(cfg, section, key, text, it->where);
    return 1;
}

int amp_config_get_bool(amp_config *cfg, const char *section, const char *key, int def,
                        int *out, char *err, size_t errlen)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    cfg_item *it = get_entry(cfg, section, key);
    if (!it) {
        *out = def ? 1 : 0;
        amp_cfg_known_note(cfg, section, key, def ? "true" : "false", "default");
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(it->value, yes[i]) == 0 || strcasecmp(it->value, no[i]) == 0) {
            *out = strcasecmp(it->value, yes[i]) == 0;
            amp_cfg_known_note(cfg, section, key, *out ? "true" : "false", it->where);
            return 1;
        }
    }
    return value_err(err, errlen, it, it->value[0] ? "not a boolean" : "empty value",
                     "true/false, yes/no, on/off or 1/0");
}

int amp_config_get_string(amp_config *cfg, const char *section, const char *key,
                          const char *def, const char **out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    cfg_item *it = get_entry(cfg, section, key);
    if (!it) {
        *out = def;
        if (def)
            amp_cfg_known_note(cfg, section, key, def, "default");
        return 0;
    }
    *out = it->value;
    amp_cfg_known_note(cfg, section, key, it->value, it->where);
    return 1;
}

int amp_config_get_choice(amp_config *cfg, const char *section, const char *key,
                          const char *def, const char *const *choices, int *out_index,
                          char *err, size_t errlen)
{
    cfg_item *it = get_entry(cfg, section, key);
    const char *want = it ? it->value : def;
    if (!want) {
        *out_index = -1;
        return 0;
    }
    for (int i = 0; choices[i]; i++) {
        if (strcmp(choices[i], want) == 0) {
            *out_index = i;
            amp_cfg_known_note(cfg, section, key, choices[i], it ? it->where : "default");
            return it ? 1 : 0;
        }
    }
    if (!it) {
        amp_set_err(err, errlen, "[%s] %s: the default '%s' is not one of its choices (a bug)",
                section, key, def);
        return -1;
    }
    char expected[256] = "one of ";
    suggester sg;
    amp_cfg_suggest_init(&sg, want);
    for (int i = 0; choices[i]; i++) {
        amp_cfg_buf_add(expected, sizeof expected, "%s%s", i ? ", " : "", choices[i]);
        amp_cfg_suggest_consider(&sg, choices[i]);
    }
    if (sg.best)
        amp_cfg_buf_add(expected, sizeof expected, "; did you mean '%s'?", sg.best);
    return value_err(err, errlen, it, want[0] ? "not a known choice" : "empty value", expected);
}

const char *amp_config_lookup(amp_config *cfg, const char *section, const char *key,
                              const char **where)
{
    cfg_item *it = get_entry(cfg, section, key);
    if (where)
        *where = it ? it->where : NULL;
    if (!it)
        return NULL;
    amp_cfg_known_note(cfg, section, key, it->value, it->where);
    return it->value;
}

int amp_config_each(amp_config *cfg, const char *section, const char *prefix,
                    int (*fn)(void *user, const char *key, const char *value,
                              const char *where),
                    void *user)
{
    size_t plen = prefix ? strlen(prefix) : 0;
    size_t sec = amp_cfg_sec_find(cfg, section);
    for (size_t i = sec == NONE ? NONE : cfg->secs[sec].item_head; i != NONE;
         i = cfg->items[i].next) {
        cfg_item *it = &cfg->items[i];
        if (plen && strncmp(it->key, prefix, plen) != 0)
            continue;
        it->read = 1;
        amp_cfg_known_note(cfg, section, it->key, it->value, it->where);
        int rc = fn(user, it->key, it->value, it->where);
        if (rc)
            return rc;
    }
    return 0;
}

void amp_config_declare_section(amp_config *cfg, const char *section)
{
    amp_cfg_known_note(cfg, section, NULL, NULL, NULL);
}

const char *amp_config_rewrite(amp_config *cfg, const char *section, const char *key,
                               const char *value, char *err, size_t errlen)
{
    size_t sec = amp_cfg_sec_find(cfg, section);
    size_t ki = sec == NONE ? NONE : amp_cfg_known_find(cfg, sec, key);
    if (ki == NONE || !cfg->known[ki].value) {
        amp_set_err(err, errlen, "[%s] %s: rewritten before it was read (a bug)", section, key);
        return NULL;
    }
    char why[160];
    char *origin = strdup(cfg->known[ki].origin);
    if (!origin) {
        amp_set_err(err, errlen, "%s: out of memory", cfg->path);
        return NULL;
    }
    const char *stored = NULL;
    if (amp_cfg_value_unwritable(key, value, why, sizeof why)) {
        amp_set_err(err, errlen, "%s: [%s] %s = '%s': %s", origin, section, key, value, why);
    } else {
        amp_cfg_known_note(cfg, section, key, value, origin);
        if (cfg->oom)
            amp_set_err(err, errlen, "%s: out of memory", cfg->path);
        else
            stored = cfg->known[ki].value;
    }
    free(origin);
    return stored;
}

static cfg_unused *unused_find(amp_config *cfg, const char *section, const char *key)
{
    for (size_t i = 0; i < cfg->n_unused; i++)
        if (strcmp(cfg->unused[i].section, section) == 0 && strcmp(cfg->unused[i].key, key) == 0)
            return &cfg->unused[i];
    return NULL;
}

void amp_config_explain_unused(amp_config *cfg, const char *section, const char *key,
                               const char *chosen, const char *used_by)
{
    cfg_unused *u = unused_find(cfg, section, key);
    if (u) {
        char *more = amp_cfg_str_printf("%s, %s", u->used_by, used_by);
        if (more) {
            free(u->used_by);
            u->used_by = more;
        }
        return;
    }
    cfg_unused *p = realloc(cfg->unused, (cfg->n_unused + 1) * sizeof *p);
    if (!p)
        return;
    cfg->unused = p;
    cfg_unused n = {strdup(section), strdup(key), strdup(chosen), strdup(used_by)};
    if (!n.section || !n.key || !n.chosen || !n.used_by) {
        free(n.section);
        free(n.key);
        free(n.chosen);
        free(n.used_by);
        return;
    }
    cfg->unused[cfg->n_unused++] = n;
}

/* ------------------------------------------------------------- checking */

int amp_config_check_unread(amp_config *cfg, char *err, size_t errlen)
{
    if (cfg->oom) {
        amp_set_err(err, errlen, "%s: out of memory while reading the config", cfg->path);
        return -1;
    }
    for (size_t i = 0; i < cfg->n_items; i++) {
        const cfg_item *it = &cfg->items[i];
        if (!it->key) {
            if (cfg->secs[it->sec].known_head != NONE)
                continue;
            suggester sg;
            amp_cfg_suggest_init(&sg, it->section);
            char known[256] = "";
            for (size_t k = 0; k < cfg->n_known; k++) {
                if (!amp_cfg_first_of_section(cfg, k))
                    continue;
                amp_cfg_suggest_consider(&sg, cfg->known[k].section);
                amp_cfg_buf_add(known, sizeof known, "%s[%s]", known[0] ? ", " : "",
                        cfg->known[k].section);
            }
            if (sg.best)
                amp_set_err(err, errlen, "%s: unknown section [%s]; did you mean [%s]?", it->where,
                        it->section, sg.best);
            else if (known[0])
                amp_set_err(err, errlen, "%s: unknown section [%s]; known sections: %s", it->where,
                        it->section, known);
            else
                amp_set_err(err, errlen, "%s: unknown section [%s]", it->where, it->section);
            return -1;
        }
        if (it->read || cfg->secs[it->sec].known_head == NONE)
            continue;
        const cfg_unused *u = unused_find(cfg, it->section, it->key);
        if (u) {
            amp_set_err(err, errlen, "%s: '%s' in [%s] is not used by %s (used by: %s)", it->where,
                        it->key, it->section, u->chosen, u->used_by);
            return -1;
        }
        suggester sg;
        amp_cfg_suggest_init(&sg, it->key);
        char known[256] = "";
        for (size_t k = cfg->secs[it->sec].known_head; k != NONE; k = cfg->known[k].next) {
            const cfg_known *kn = &cfg->known[k];
            if (!kn->key)
                continue;
            amp_cfg_suggest_consider(&sg, kn->key);
            amp_cfg_buf_add(known, sizeof known, "%s%s", known[0] ? ", " : "", kn->key);
        }
        if (sg.best)
            amp_set_err(err, errlen, "%s: unknown key '%s' in [%s]; did you mean '%s'?", it->where,
                    it->key, it->section, sg.best);
        else if (known[0])
            amp_set_err(err, errlen, "%s: unknown key '%s' in [%s]; known keys: %s", it->where,
                    it->key, it->section, known);
        else
            amp_set_err(err, errlen, "%s: unknown key '%s' in [%s]; nothing reads keys from [%s]",
                    it->where, it->key, it->section, it->section);
        return -1;
    }
    return 0;
}
