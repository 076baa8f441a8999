/*
 * amptrain configuration: an INI file (parsed with inih) plus `--set`
 * overrides. Every entry remembers where it came from ("cfg.ini:12" or
 * "--set optim.lr") so every error reads `where: message`.
 *
 * Lifecycle: load (or new_empty), apply --set overrides, read every key with
 * the typed getters (core) or lookup/each (plugin sections), then call
 * amp_config_check_unread: any section or key nobody asked for is an error,
 * with a "did you mean" when a known name is close.
 *
 * Syntax: [section] headers (letters, digits, '_' and '-'), `key = value`
 * lines (inih also accepts `key: value`), full-line comments starting with
 * ';' or '#', inline comments starting with " ;" or " #" (whitespace before
 * the mark). Keys take letters, digits, '_', '.', '-' and the glob
 * characters * ? [ ] ! ^ (plugins match "layer.fc*" against layer names),
 * never '[' first. Leading whitespace is ignored (no multi-line values). Keys
 * and section names are case-sensitive. A line longer than inih's buffer is
 * an error, never split silently; a line is never held in memory past that
 * buffer, however long it is.
 *
 * Every value is one an INI line can hold, so the resolved config.ini reads
 * back as the same configuration: a value starting with ';' or '#', holding
 * ';' or '#' after a blank, or too long for a line is refused (by --set, and
 * by the parser for `key =;x`), naming the key.
 *
 * Cost: sections and keys are hashed, so loading, reading, checking and
 * writing n keys takes O(n) time (amp_config_compares counts the string
 * comparisons lookups make, for the test that keeps it so).
 *
 * Strings returned by the getters, lookup and each stay valid until
 * amp_config_free, or until amp_config_set replaces that same key.
 */
#ifndef AMP_CONFIG_H
#define AMP_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct amp_config amp_config;

/* Parses path. NULL on failure with "file:line: message" in err (an
 * unreadable file gives "path: cannot read: <strerror>"; a FIFO, device or
 * directory "path: cannot read: it is a FIFO (named pipe), not a regular
 * file"; a read error is never taken for the end of the file). An empty file
 * is valid: every key takes its default. */
amp_config *amp_config_load(const char *path, char *err, size_t errlen);
/* Parses len bytes of text (any bytes: NULs and binary are errors, not
 * crashes) exactly as amp_config_load parses a file; label stands in for the
 * path in messages ("label:line: message"). Used by tests and the fuzzer. */
amp_config *amp_config_parse(const char *label, const char *text, size_t len, char *err,
                             size_t errlen);
/* A config with no entries; label stands in for the path in messages.
 * NULL when out of memory. */
amp_config *amp_config_new_empty(const char *label);
void amp_config_free(amp_config *cfg);

/* Applies one "section.key=value" from --set: replaces the value the file
 * gave (the entry is then located as "--set section.key") or adds the entry.
 * The key may contain dots ("precision.layer.fc1=bf16"); the section may not.
 * Returns 0, or -1 with a usage message in err when malformed. */
int amp_config_set(amp_config *cfg, const char *assignment, char *err, size_t errlen);
/* amp_config_set with the entry located as `origin` instead ("hf/config.json:
 * n_layer"): a key another file implies. */
int amp_config_set_from(amp_config *cfg, const char *assignment, const char *origin, char *err,
                        size_t errlen);

/* Typed getters for core keys. Each records (section, key) as known and the
 * resolved value (the default when absent) for amp_config_write_resolved.
 * Return 1 found, 0 absent (*out = def), -1 error with
 * "where: [section] key = 'value': what is wrong; expected ..." in err. */
int amp_config_get_int(amp_config *cfg, const char *section, const char *key, int64_t def,
                       int64_t min, int64_t max, int64_t *out, char *err, size_t errlen);
/* Finite values only; the range is inclusive. */
int amp_config_get_double(amp_config *cfg, const char *section, const char *key, double def,
                          double min, double max, double *out, char *err, size_t errlen);
/* true/false, yes/no, on/off, 1/0 (any case). */
int amp_config_get_bool(amp_config *cfg, const char *section, const char *key, int def,
                        int *out, char *err, size_t errlen);
/* def may be NULL (then *out is NULL when absent). */
int amp_config_get_string(amp_config *cfg, const char *section, const char *key,
                          const char *def, const char **out, char *err, size_t errlen);
/* choices is NULL-terminated; *out_index indexes it (-1 when absent and def
 * is NULL). def must be one of choices or NULL. */
int amp_config_get_choice(amp_config *cfg, const char *section, const char *key,
                          const char *def, const char *const *choices, int *out_index,
                          char *err, size_t errlen);

/* Schema-less lookup for plugin sections: marks the key known and read.
 * Returns the raw value or NULL; *where (when where is not NULL) is the
 * entry's location ("cfg.ini:12", "--set scaler.scale") or NULL. */
const char *amp_config_lookup(amp_config *cfg, const char *section, const char *key,
                              const char **where);

/* Calls fn for every key of section starting with prefix ("" for all), in
 * file order, marking each read. Stops when fn returns non-zero and returns
 * that value; 0 otherwise. fn must not call amp_config_set. */
int amp_config_each(amp_config *cfg, const char *section, const char *prefix,
                    int (*fn)(void *user, const char *key, const char *value,
                              const char *where),
                    void *user);

/* Declares a section known even when none of its keys is asked for. */
void amp_config_declare_section(amp_config *cfg, const char *section);

/* Says that (section, key) is not used in this run because of a choice
 * made ("schedule=constant") and that another choice uses it ("cosine"):
 * when the key is set and nobody reads it, check_unread then reports
 * "'min_lr' in [optim] is not used by schedule=constant (used by: cosine)"
 * instead of an unknown key. Calls for the same key add to its used-by
 * list. Out of memory only drops the explanation. */
void amp_config_explain_unused(amp_config *cfg, const char *section, const char *key,
                               const char *chosen, const char *used_by);

/* After everything was read: the first problem in file order (then --set
 * order): an unknown section, or a key nobody read, with a suggestion among
 * the known names. Returns 0 when clean, -1 with the message in err. */
int amp_config_check_unread(amp_config *cfg, char *err, size_t errlen);

/* Writes the resolved configuration as INI: every key a getter asked for
 * (defaults included), every key read by lookup/each, then keys that were
 * set but not read, each with a comment saying where its value came from.
 * Returns 0, or -1 with errno set when writing failed. */
int amp_config_write_resolved(const amp_config *cfg, FILE *out);

/* Replaces what (section, key), already read, resolved to (a relative path
 * made absolute), keeping where it came from, so config.ini names the same
 * file from any folder. Returns the stored copy (valid until
 * amp_config_free), or NULL with "where: [section] key = 'value': why" in err
 * when no INI line can hold the value or memory ran out. */
const char *amp_config_rewrite(amp_config *cfg, const char *section, const char *key,
                               const char *value, char *err, size_t errlen);

/* The string comparisons the hash lookups of cfg made so far (each lookup
 * compares the few entries whose hash matches). For tests. */
size_t amp_config_compares(const amp_config *cfg);

/* The path given to load, or the label given to new_empty. */
const char *amp_config_path(const amp_config *cfg);

/* Calls fn for every (section, key) that a getter, lookup or each resolved
 * to a value (defaults included), in the order they were first asked for,
 * with where the value came from ("default", "cfg.ini:12", "--set a.b").
 * Used to compare two configs' effective settings. Stops when fn returns
 * non-zero and returns that value; 0 otherwise. */
int amp_config_each_resolved(const amp_config *cfg,
                             int (*fn)(void *user, const char *section, const char *key,
                                       const char *value, const char *origin),
                             void *user);

#endif
