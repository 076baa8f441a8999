/* What the config reader's files share (config.c: storage, parsing and
 * --set; config_read.c: the getters and the unread-key check;
 * config_write.c: the resolved config): the records and their indexes.
 * Not for use outside core/io/config*.c. */
#ifndef AMP_IO_CONFIG_INTERNAL_H
#define AMP_IO_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <ini.h>

#include "io/config.h"

/* The longest line the reader takes (inih's buffer less "\r\n\0"); every
 * line write_resolved writes fits, so config.ini always reads back. */
#define LINE_MAX_CHARS (INI_MAX_LINE - 3)

/* A section header (key == NULL) or a key = value entry, in file order, then
 * --set order. */
typedef struct cfg_item {
    char *section;
    char *key;
    char *value;
    char *where; /* "path:line" or "--set section.key" */
    int line;    /* file line; 0 when it came from --set */
    int read;
    size_t sec;  /* index in amp_config.secs */
    size_t next; /* the section's next key entry, in order; NONE at the end */
} cfg_item;

/* A (section, key) somebody asked for (key NULL: the section itself), with
 * the value it resolved to, for write_resolved and for suggestions. */
typedef struct cfg_known {
    char *section;
    char *key;
    char *value;  /* NULL: absent and no default */
    char *origin; /* "default", or the entry's where */
    size_t sec;
    size_t next;  /* the section's next known record, in order */
} cfg_known;

#define NONE SIZE_MAX

/* Every section named by an entry or a lookup, with its records chained in
 * order, so no operation scans the whole config per key: parsing, reading
 * and checking n keys costs O(n) (a 40k-key file must not take seconds). */
typedef struct cfg_sec {
    char *name;
    size_t header;                 /* its [section] item, or NONE */
    size_t known_null;             /* its known record with key NULL, or NONE */
    size_t known_head, known_tail; /* known records; known_head NONE: unknown section */
    size_t item_head, item_tail;   /* key entries */
} cfg_sec;

/* Open addressing over indices into one of the arrays; slot 0 = empty. */
typedef struct cfg_index {
    uint64_t *hash;
    size_t *slot; /* index + 1 */
    size_t cap, n;
} cfg_index;

/* Why a key is not read in this run (amp_config_explain_unused). */
typedef struct cfg_unused {
    char *section, *key, *chosen;
    char *used_by; /* "cosine" or "fashion_mnist, text" */
} cfg_unused;

struct amp_config {
    char *path;
    cfg_unused *unused; /* few (the core's conditional keys): scanned */
    size_t n_unused;
    cfg_item *items;
    size_t n_items, cap_items;
    cfg_known *known;
    size_t n_known, cap_known;
    cfg_sec *secs;
    size_t n_secs, cap_secs;
    cfg_index sec_index;   /* name -> secs */
    cfg_index item_index;  /* (sec, key) -> items, key entries only */
    cfg_index known_index; /* (sec, key) -> known, key != NULL */
    size_t compares;       /* string comparisons made by lookups (amp_config_compares) */
    int oom; /* recording a known key failed; reported by check_unread */
};

typedef struct suggester {
    const char *name;
    const char *best;
    int best_score;
} suggester;

/* Appends to a bounded buffer; truncates quietly (messages only). */
void amp_cfg_buf_add(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cfg_item *amp_cfg_find_entry(amp_config *cfg, const char *section, const char *key);
/* Whether known[k] is the first record of its section. */
int amp_cfg_first_of_section(const amp_config *cfg, size_t k);
/* Shortest "%g" text that reads back as the same double. */
void amp_cfg_fmt_double(char *buf, size_t cap, double v);
size_t amp_cfg_known_find(amp_config *cfg, size_t sec, const char *key);
/* Records (section, key) as asked for, with what it resolved to. */
void amp_cfg_known_note(amp_config *cfg, const char *section, const char *key, const char *value, const char *origin);
/* Lookups by name; NONE / NULL when absent. */
size_t amp_cfg_sec_find(amp_config *cfg, const char *name);
/* A malloc'd formatted string, NULL when out of memory. */
char *amp_cfg_str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void amp_cfg_suggest_consider(suggester *s, const char *cand);
/* "did you mean": offer candidates, the closest wins */
void amp_cfg_suggest_init(suggester *s, const char *name);
/* Why `key = value` cannot be one INI line that reads back, or NULL. */
const char *amp_cfg_value_unwritable(const char *key, const char *value, char *why, size_t cap);

#endif
