/* Configuration keys as data: one row per key (section, key, type, default,
 * range or choices, where the value is stored, one line of doc). The same
 * rows are read from a config (through the typed getters, so every message
 * keeps its "file:line: [section] key" form), written to the resolved
 * config.ini in row order, and printed as the INI reference
 * (`amptrain settings --markdown`, docs/settings.md). A table ends with a
 * row whose key is NULL. */
#ifndef AMP_SETTINGS_TABLE_H
#define AMP_SETTINGS_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/config.h"

typedef enum amp_setting_type {
    AMP_SETTING_INT,    /* stored as int or int64_t (by the field's size) */
    AMP_SETTING_DOUBLE, /* finite, inclusive range */
    AMP_SETTING_BOOL,   /* stored as int */
    AMP_SETTING_STRING, /* stored as const char * (valid until amp_config_free) */
    AMP_SETTING_CHOICE  /* stored as int: the choice's index, or values[index] */
} amp_setting_type;

/* Which given values are paths, made absolute against the config's folder
 * (so config.ini names the same file from anywhere). */
typedef enum amp_setting_path {
    AMP_SETTING_NOT_PATH = 0,
    AMP_SETTING_PATH,              /* any given value */
    AMP_SETTING_PATH_UNLESS_DEFAULT, /* any given value but the default word ("default") */
    AMP_SETTING_PLUGIN_SPEC        /* a plugin path (amp_plugin_spec_is_path), else a name */
} amp_setting_path;

/* Keys the A/B comparison lets differ between arms (the arm's label, what
 * the runner sets); a whole plugin section is marked on its `plugin` row. */
#define AMP_SETTING_AB_FREE 1u
#define AMP_SETTING_AB_FREE_SECTION 2u

typedef struct amp_setting {
    const char *section, *key;
    amp_setting_type type;
    const char *def;                /* the default, as an INI value (CHOICE: NULL, the first) */
    int64_t imin, imax;             /* INT range */
    double dmin, dmax;              /* DOUBLE range */
    const char *const *choices;     /* CHOICE: NULL-terminated */
    const char *const *(*choices_of)(void); /* CHOICE: or these, known at run time */
    const int *values;              /* CHOICE: stored instead of the index, or NULL */
    size_t offset, size;            /* where the value goes (AMP_SETTING_AT) */
    /* Read only when another key of the same section ("dataset=tiny|text")
     * or of another ("data.dataset=text") has one of these values; NULL:
     * always. A key set for another choice is explained, not unknown. */
    const char *when;
    /* Another default under one choice ("name=adamw"), or NULL. */
    const char *alt_when, *alt_def;
    amp_setting_path path;
    size_t given;                   /* AMP_SETTING_GIVEN: an int set to 1 when given, or 0 */
    unsigned flags;                 /* AMP_SETTING_AB_FREE... */
    /* Checks the value read against the others read so far (dst), or NULL:
     * 0, or -1 with "where: ..." in err. */
    int (*check)(const void *dst, amp_config *cfg, char *err, size_t errlen);
    const char *shown_default;      /* the docs' default when the stored one is a placeholder */
    const char *doc;                /* one line of Markdown */
} amp_setting;

#define AMP_SETTING_AT(type, field) .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)
/* A numeric macro as a default: AMP_SETTING_TEXT(AMP_TEXT_DEFAULT_BLOCK) is "256". */
#define AMP_SETTING_TEXT_(x) #x
#define AMP_SETTING_TEXT(x) AMP_SETTING_TEXT_(x)
#define AMP_SETTING_GIVEN(type, field) .given = offsetof(type, field) + 1

/* Reads every row of t whose condition holds into dst (a struct the rows'
 * offsets index), in row order, and explains the rows of the choices not
 * made. 0, or -1 with a "where: ..." message in err. */
int amp_settings_table_read(const amp_setting *t, void *dst, amp_config *cfg, char *err,
                            size_t errlen);

/* Explains every row of t as used by `used_by` and not by `because`
 * ("name=mlp"): the other models' keys. */
void amp_settings_table_explain(const amp_setting *t, amp_config *cfg, const char *because,
                                const char *used_by);

/* p made absolute as the reader makes relative paths: a value from the
 * command line (`where` is "--set section.key") against the working
 * directory, as a shell would; one from a file (or where NULL) against the
 * config's folder. 0, or -1 with errno set. */
int amp_settings_absolute_path(const amp_config *cfg, const char *where, const char *p, char *out,
                               size_t cap);

/* The row for (section, key), or NULL. */
const amp_setting *amp_settings_table_find(const amp_setting *t, const char *section,
                                           const char *key);

/* Checks t itself: each default parses, lies in its range or among its
 * choices and fits its field; each condition names a CHOICE row above it
 * and choices it has; no (section, key) twice; every row has its doc.
 * 0, or -1 with "[section] key: what is wrong" in err. */
int amp_settings_table_check(const amp_setting *t, char *err, size_t errlen);

/* The Markdown table of t's rows (a header and one line per row). Rows of
 * sections other than `section` are skipped unless section is NULL. */
void amp_settings_table_markdown(const amp_setting *t, const char *section, FILE *out);

#endif
