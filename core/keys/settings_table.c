#include "settings_table.h"

#include "plugins/loader.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A relative path in a config is relative to the config's folder, one given
 * on the command line to the working directory: made absolute here, in the
 * resolved config too, so config.ini (written to the output folder) names
 * the same file. */
int amp_settings_absolute_path(const amp_config *cfg, const char *where, const char *p, char *out,
                               size_t cap) {
    char tmp[PATH_MAX], cwd[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", amp_config_path(cfg));
    const char *dir = where && strncmp(where, "--set ", 6) == 0 ? "." : dirname(tmp);
    int n;
    if (p[0] == '/')
        n = snprintf(out, cap, "%s", p);
    else if (dir[0] == '/')
        n = snprintf(out, cap, "%s/%s", dir, p);
    else if (getcwd(cwd, sizeof cwd))
        n = strcmp(dir, ".") == 0 ? snprintf(out, cap, "%s/%s", cwd, p)
                                  : snprintf(out, cap, "%s/%s/%s", cwd, dir, p);
    else
        return -1;
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

static int make_absolute(amp_config *cfg, const amp_setting *r, const char **path, char *err,
                         size_t errlen) {
    if (!*path || !(*path)[0] || (*path)[0] == '/') return 0;
    char abs[PATH_MAX];
    const char *where = NULL;
    amp_config_lookup(cfg, r->section, r->key, &where); /* read already: only its origin */
    if (amp_settings_absolute_path(cfg, where, *path, abs, sizeof abs) != 0) {
        snprintf(err, errlen, "[%s] %s = '%s': cannot make it an absolute path: %s", r->section,
                 r->key, *path, strerror(errno));
        return -1;
    }
    const char *stored = amp_config_rewrite(cfg, r->section, r->key, abs, err, errlen);
    if (!stored) return -1;
    *path = stored;
    return 0;
}

static const char *const *choices(const amp_setting *r) {
    return r->choices_of ? r->choices_of() : r->choices;
}

static const char *default_of(const amp_setting *r) {
    return r->def ? r->def : choices(r)[0];
}

static int is_path(const amp_setting *r, const char *value) {
    switch (r->path) {
    case AMP_SETTING_PATH: return 1;
    case AMP_SETTING_PATH_UNLESS_DEFAULT: return strcmp(value, default_of(r)) != 0;
    case AMP_SETTING_PLUGIN_SPEC: return amp_plugin_spec_is_path(value);
    case AMP_SETTING_NOT_PATH: break;
    }
    return 0;
}

const amp_setting *amp_settings_table_find(const amp_setting *t, const char *section,
                                           const char *key) {
    for (; t->key; t++)
        if (strcmp(t->section, section) == 0 && strcmp(t->key, key) == 0) return t;
    return NULL;
}

/* "dataset=tiny|text" (or "data.dataset=text") against row r: the chooser's
 * section and key, and the choices after '='. */
typedef struct condition {
    char section[32], key[32];
    const char *choices;
} condition;

static void condition_parse(condition *c, const amp_setting *r, const char *when) {
    const char *eq = strchr(when, '='), *dot = memchr(when, '.', (size_t)(eq - when));
    if (dot) {
        snprintf(c->section, sizeof c->section, "%.*s", (int)(dot - when), when);
        snprintf(c->key, sizeof c->key, "%.*s", (int)(eq - dot - 1), dot + 1);
    } else {
        snprintf(c->section, sizeof c->section, "%s", r->section);
        snprintf(c->key, sizeof c->key, "%.*s", (int)(eq - when), when);
    }
    c->choices = eq + 1;
}

static int choice_listed(const char *choices, const char *chosen) {
    size_t n = strlen(chosen);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, chosen, n) == 0) return 1;
        p += len + (bar != NULL);
    }
    return 0;
}

/* The value a CHOICE row before r in t resolved to (its stored index). */
static const char *chosen_value(const amp_setting *t, const void *dst, const condition *c) {
    const amp_setting *ch = amp_settings_table_find(t, c->section, c->key);
    if (!ch || ch->type != AMP_SETTING_CHOICE) return NULL;
    int v;
    memcpy(&v, (const char *)dst + ch->offset, sizeof v);
    const char *const *names = choices(ch);
    for (int i = 0; names[i]; i++)
        if ((ch->values ? ch->values[i] : i) == v) return names[i];
    return NULL;
}

static int holds(const amp_setting *t, const void *dst, const amp_setting *r, const char *when,
                 const char **chosen, condition *c) {
    condition_parse(c, r, when);
    *chosen = chosen_value(t, dst, c);
    return *chosen && choice_listed(c->choices, *chosen);
}

static void explain_unused(amp_config *cfg, const amp_setting *r, const char *because,
                           const char *choices) {
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        char used_by[64];
        snprintf(used_by, sizeof used_by, "%.*s", (int)len, p);
        amp_config_explain_unused(cfg, r->section, r->key, because, used_by);
        p += len + (bar != NULL);
    }
}

static void store_int(void *at, size_t size, int64_t v) {
    if (size == sizeof(int)) {
        int i = (int)v;
        memcpy(at, &i, sizeof i);
    } else {
        memcpy(at, &v, sizeof v);
    }
}

static int read_row(const amp_setting *t, const amp_setting *r, void *dst, amp_config *cfg,
                    char *err, size_t errlen) {
    const char *def = default_of(r);
    if (r->alt_when) {
        const char *chosen;
        condition c;
        if (holds(t, dst, r, r->alt_when, &chosen, &c)) def = r->alt_def;
    }
    void *at = (char *)dst + r->offset;
    int found = 0;
    switch (r->type) {
    case AMP_SETTING_INT: {
        int64_t v;
        found = amp_config_get_int(cfg, r->section, r->key, strtoll(def, NULL, 10), r->imin, r->imax,
                                   &v, err, errlen);
        if (found >= 0) store_int(at, r->size, v);
        break;
    }
    case AMP_SETTING_DOUBLE: {
        double v;
        found = amp_config_get_double(cfg, r->section, r->key, strtod(def, NULL), r->dmin, r->dmax, &v,
                                      err, errlen);
        if (found >= 0) memcpy(at, &v, sizeof v);
        break;
    }
    case AMP_SETTING_BOOL: {
        int v;
        found = amp_config_get_bool(cfg, r->section, r->key, strcmp(def, "true") == 0, &v, err, errlen);
        if (found >= 0) memcpy(at, &v, sizeof v);
        break;
    }
    case AMP_SETTING_STRING: {
        const char *v;
        found = amp_config_get_string(cfg, r->section, r->key, def, &v, err, errlen);
        if (found > 0 && is_path(r, v) && make_absolute(cfg, r, &v, err, errlen) != 0) return -1;
        if (found >= 0) memcpy(at, &v, sizeof v);
        break;
    }
    case AMP_SETTING_CHOICE: {
        int idx;
        found = amp_config_get_choice(cfg, r->section, r->key, def, choices(r), &idx, err, errlen);
        if (found >= 0) store_int(at, sizeof(int), r->values ? r->values[idx] : idx);
        break;
    }
    }
    if (found < 0) return -1;
    if (r->given) store_int((char *)dst + r->given - 1, sizeof(int), found);
    return r->check ? r->check(dst, cfg, err, errlen) : 0;
}

int amp_settings_table_read(const amp_setting *t, void *dst, amp_config *cfg, char *err,
                            size_t errlen) {
    for (const amp_setting *r = t; r->key; r++) {
        const char *chosen = NULL;
        condition c;
        if (r->when && !holds(t, dst, r, r->when, &chosen, &c)) {
            /* a key of another section's choice is explained by its own section's
             * choices ([model] block_size by the model's name) */
            if (strcmp(c.section, r->section) == 0) {
                char because[96];
                snprintf(because, sizeof because, "%s=%s", c.key, chosen ? chosen : "?");
                explain_unused(cfg, r, because, c.choices);
            }
            continue;
        }
        if (read_row(t, r, dst, cfg, err, errlen) != 0) return -1;
    }
    return 0;
}

void amp_settings_table_explain(const amp_setting *t, amp_config *cfg, const char *because,
                                const char *used_by) {
    for (; t->key; t++) amp_config_explain_unused(cfg, t->section, t->key, because, used_by);
}

/* ------------------------------------------------------------ the table's own check */

static int check_value(const amp_setting *r, const char *v, char *err, size_t errlen) {
    char *end = NULL;
    const char *const *names = choices(r);
    switch (r->type) {
    case AMP_SETTING_INT: {
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || errno || x < r->imin || x > r->imax) break;
        return r->size == sizeof(int) || r->size == sizeof(int64_t) ? 0 : -2;
    }
    case AMP_SETTING_DOUBLE: {
        double x = strtod(v, &end);
        if (end == v || *end || !(x >= r->dmin && x <= r->dmax)) break;
        return r->size == sizeof(double) ? 0 : -2;
    }
    case AMP_SETTING_BOOL:
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) break;
        return r->size == sizeof(int) ? 0 : -2;
    case AMP_SETTING_STRING: return r->size == sizeof(const char *) ? 0 : -2;
    case AMP_SETTING_CHOICE:
        for (int i = 0; names && names[i]; i++)
            if (strcmp(names[i], v) == 0) return r->size == sizeof(int) ? 0 : -2;
        break;
    }
    snprintf(err, errlen, "[%s] %s: the default '%s' is not a valid value of the row", r->section,
             r->key, v);
    return -1;
}

static int check_condition(const amp_setting *t, const amp_setting *r, const char *when, char *err,
                           size_t errlen) {
    const char *eq = strchr(when, '=');
    condition c;
    if (eq && eq[1]) {
        condition_parse(&c, r, when);
        const amp_setting *ch = amp_settings_table_find(t, c.section, c.key);
        int ok = ch && ch < r && ch->type == AMP_SETTING_CHOICE;
        for (const char *p = c.choices; ok && *p;) {
            const char *bar = strchr(p, '|');
            size_t len = bar ? (size_t)(bar - p) : strlen(p);
            int found = 0;
            for (const char *const *n = choices(ch); *n && !found; n++)
                found = strlen(*n) == len && strncmp(*n, p, len) == 0;
            ok = found;
            p += len + (bar != NULL);
        }
        if (ok) return 0;
    }
    snprintf(err, errlen, "[%s] %s: the condition '%s' names no choice row above it, or a choice "
             "that row does not have", r->section, r->key, when);
    return -1;
}

int amp_settings_table_check(const amp_setting *t, char *err, size_t errlen) {
    for (const amp_setting *r = t; r->key; r++) {
        if (!r->section || !r->doc || !r->doc[0] || (r->type == AMP_SETTING_CHOICE && !choices(r)) ||
            (!r->def && r->type != AMP_SETTING_CHOICE) || !r->alt_when != !r->alt_def) {
            snprintf(err, errlen, "[%s] %s: a row needs a section, a doc line, a default (or "
                     "choices) and alt_when with alt_def", r->section ? r->section : "?", r->key);
            return -1;
        }
        if (amp_settings_table_find(t, r->section, r->key) != r) {
            snprintf(err, errlen, "[%s] %s: two rows", r->section, r->key);
            return -1;
        }
        int rc = check_value(r, default_of(r), err, errlen);
        if (rc == 0 && r->alt_def) rc = check_value(r, r->alt_def, err, errlen);
        if (rc == -2)
            snprintf(err, errlen, "[%s] %s: the field's size does not fit the type", r->section, r->key);
        if (rc != 0) return -1;
        if (r->when && check_condition(t, r, r->when, err, errlen) != 0) return -1;
        if (r->alt_when && check_condition(t, r, r->alt_when, err, errlen) != 0) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ the reference */

static const char *type_name(const amp_setting *r) {
    if (r->path == AMP_SETTING_PATH) return "path";
    if (r->path == AMP_SETTING_PATH_UNLESS_DEFAULT) return "path or `default`";
    if (r->path == AMP_SETTING_PLUGIN_SPEC) return "plugin name or path";
    switch (r->type) {
    case AMP_SETTING_INT: return "integer";
    case AMP_SETTING_DOUBLE: return "number";
    case AMP_SETTING_BOOL: return "bool";
    case AMP_SETTING_STRING: return "string";
    case AMP_SETTING_CHOICE: return "choice";
    }
    return "?";
}

/* Bounds at or above INT64_MAX / 2 mean "no bound a run can reach". */
static void range_text(const amp_setting *r, char *out, size_t cap) {
    out[0] = '\0';
    if (r->type == AMP_SETTING_INT) {
        if (r->imax >= INT64_MAX / 2)
            snprintf(out, cap, "≥ %" PRId64, r->imin);
        else
            snprintf(out, cap, "%" PRId64 "..%" PRId64, r->imin, r->imax);
    } else if (r->type == AMP_SETTING_DOUBLE) {
        snprintf(out, cap, "%.15g..%.15g", r->dmin, r->dmax);
    } else if (r->type == AMP_SETTING_BOOL) {
        snprintf(out, cap, "true/false");
    } else if (r->type == AMP_SETTING_CHOICE) {
        size_t n = 0;
        const char *const *names = choices(r);
        for (int i = 0; names[i] && n < cap; i++)
            n += (size_t)snprintf(out + n, cap - n, "%s`%s`", i ? ", " : "", names[i]);
    }
}

static void print_condition(const char *when, FILE *out) {
    const char *eq = strchr(when, '=');
    fprintf(out, "*only %.*s = ", (int)(eq - when), when);
    for (const char *p = eq + 1; *p; p++) {
        if (*p == '|')
            fputs(", ", out);
        else
            fputc(*p, out);
    }
    fputs(":* ", out);
}

/* A '|' would end the table cell, inside backticks too (GitHub's tables). */
static void cell(const char *text, FILE *out) {
    for (const char *p = text; *p; p++) {
        if (*p == '|') fputc('\\', out);
        fputc(*p, out);
    }
}

void amp_settings_table_markdown(const amp_setting *t, const char *section, FILE *out) {
    fputs("| key | type | default | range | meaning |\n|---|---|---|---|---|\n", out);
    for (const amp_setting *r = t; r->key; r++) {
        if (section && strcmp(r->section, section) != 0) continue;
        char range[256];
        range_text(r, range, sizeof range);
        fprintf(out, "| `[%s] %s` | %s | ", r->section, r->key, type_name(r));
        if (r->shown_default) {
            cell(r->shown_default, out);
        } else {
            fputc('`', out);
            cell(default_of(r)[0] ? default_of(r) : "(empty)", out);
            fputc('`', out);
        }
        if (r->alt_when) fprintf(out, "; %s: `%s`", strchr(r->alt_when, '=') + 1, r->alt_def);
        fprintf(out, " | %s | ", range);
        if (r->when) print_condition(r->when, out);
        cell(r->doc, out);
        fputs(" |\n", out);
    }
}
