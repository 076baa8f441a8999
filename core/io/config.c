/*
 * INI configuration with locations, strict reading and "did you mean".
 *
 * inih does the key/value splitting; we feed it through our own reader so we
 * know the line number of every callback (Debian's libinih is built without
 * INI_HANDLER_LINENO) and can refuse what inih would accept silently: lines
 * longer than its buffer (it would split them), indented lines (it would
 * glue them to the previous value: INI_ALLOW_MULTILINE is on), NUL and
 * control bytes, '#' inline comments (it only knows " ;"). Section headers
 * are parsed here too, so an empty or duplicate section has a line.
 */
#include "io/config.h"
#include "io/config_internal.h"
#include "io/file.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
/* ------------------------------------------------------------- small utils */

/* Appends to a bounded buffer; truncates quietly (messages only). */
void amp_cfg_buf_add(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void amp_cfg_buf_add(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

char *amp_cfg_str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *amp_cfg_str_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static char *str_dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Trims blanks in place; returns the first non-blank. */
static char *trim(char *s)
{
    while (is_blank(*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && is_blank(s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int valid_section_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return 0;
    return 1;
}

/* Dots are allowed in keys for plugin sub-keys such as "layer.fc1", and the
 * glob characters * ? [ ] ! ^ for patterns over them ("layer.h.*.attn",
 * "layer.fc[12]"); a key never starts with '[' (that line would be a section
 * header when config.ini is read back). */
static int valid_key_name(const char *s)
{
    if (!*s || *s == '[')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_-.*?[]!^", *s))
            return 0;
    return 1;
}

#define KEY_CHARS "letters, digits, '_', '.', '-' and the glob characters * ? [ ] ! ^ (not first: '[')"

/* Shortest "%g" text that reads back as the same double. */
void amp_cfg_fmt_double(char *buf, size_t cap, double v)
{
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* ------------------------------------------------------- what a line holds */


/* Why `key = value` cannot be written as one INI line that reads back as the
 * same value, or NULL when it can. The reader trims blanks around values and
 * takes ';' or '#' after a blank (or first in the value) as a comment. */
const char *amp_cfg_value_unwritable(const char *key, const char *value, char *why, size_t cap)
{
    if (*value == ';' || *value == '#') {
        snprintf(why, cap, "a value cannot start with '%c': after 'key = ' it reads as a comment",
                 *value);
        return why;
    }
    for (const char *p = value; *p; p++) {
        if ((*p == ';' || *p == '#') && p > value && is_blank(p[-1])) {
            snprintf(why, cap,
                     "a value cannot hold '%c' after a blank: in an INI line that starts a "
                     "comment (config.ini could not hold the value); drop the blank before it",
                     *p);
            return why;
        }
    }
    size_t n = strlen(key) + 3 + strlen(value); /* as config.ini writes it */
    if (n > LINE_MAX_CHARS) {
        snprintf(why, cap,
                 "too long for an INI line (%zu characters as 'key = value'; the limit is %d)", n,
                 LINE_MAX_CHARS);
        return why;
    }
    return NULL;
}

/* ------------------------------------------------------------ suggestions */

/* Optimal-string-alignment (restricted Damerau-Levenshtein) distance; long
 * names are not worth comparing. */
static int name_distance(const char *a, const char *b)
{
    enum { MAXN = 64 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAXN || m >= MAXN)
        return 1000;
    int d[MAXN + 1][MAXN + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

void amp_cfg_suggest_init(suggester *s, const char *name)
{
    s->name = name;
    s->best = NULL;
    s->best_score = 1 << 30;
}

/* A candidate qualifies when it differs only in case, is within distance 2
 * (and closer than the shorter name is long, so "x" never suggests "lr"), or
 * one name is a prefix of the other ("lr_rate" -> "lr"). Closest wins; ties
 * go to the first candidate offered. */
void amp_cfg_suggest_consider(suggester *s, const char *cand)
{
    if (!cand || strcmp(cand, s->name) == 0)
        return;
    size_t ln = strlen(s->name), lc = strlen(cand);
    size_t shorter = ln < lc ? ln : lc;
    int score;
    if (strcasecmp(cand, s->name) == 0) {
        score = 0;
    } else {
        int d = name_distance(s->name, cand);
        int prefix = shorter >= 2 && strncmp(s->name, cand, shorter) == 0;
        if (!(d <= 2 && (size_t)d < shorter) && !prefix)
            return;
        score = d;
    }
    if (score < s->best_score) {
        s->best = cand;
        s->best_score = score;
    }
}

/* ---------------------------------------------------------------- storage */

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static uint64_t hash_pair(size_t sec, const char *key)
{
    return hash_str((0xcbf29ce484222325ULL ^ (uint64_t)sec) * 0x100000001b3ULL, key);
}

typedef int (*index_eq)(amp_config *cfg, size_t idx, size_t sec, const char *key);

/* The index stored for (sec, key) with hash h, or NONE. */
static size_t index_find(amp_config *cfg, const cfg_index *ix, uint64_t h, index_eq eq,
                         size_t sec, const char *key)
{
    if (!ix->cap)
        return NONE;
    for (size_t i = (size_t)h & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        if (!ix->slot[i])
            return NONE;
        if (ix->hash[i] == h && eq(cfg, ix->slot[i] - 1, sec, key))
            return ix->slot[i] - 1;
    }
}

static int index_put_raw(cfg_index *ix, uint64_t h, size_t idx)
{
    size_t i = (size_t)h & (ix->cap - 1);
    while (ix->slot[i])
        i = (i + 1) & (ix->cap - 1);
    ix->hash[i] = h;
    ix->slot[i] = idx + 1;
    ix->n++;
    return 0;
}

/* Adds idx under hash h (the caller checked it is absent); load <= 1/2. */
static int index_put(cfg_index *ix, uint64_t h, size_t idx)
{
    if (2 * (ix->n + 1) > ix->cap) {
        size_t cap = ix->cap ? 2 * ix->cap : 64;
        cfg_index nx = {calloc(cap, sizeof *nx.hash), calloc(cap, sizeof *nx.slot), cap, 0};
        if (!nx.hash || !nx.slot) {
            free(nx.hash);
            free(nx.slot);
            return -1;
        }
        for (size_t i = 0; i < ix->cap; i++)
            if (ix->slot[i])
                index_put_raw(&nx, ix->hash[i], ix->slot[i] - 1);
        free(ix->hash);
        free(ix->slot);
        *ix = nx;
    }
    return index_put_raw(ix, h, idx);
}

static void index_free(cfg_index *ix)
{
    free(ix->hash);
    free(ix->slot);
    memset(ix, 0, sizeof *ix);
}

static int sec_eq(amp_config *cfg, size_t idx, size_t sec, const char *name)
{
    (void)sec;
    cfg->compares++;
    return strcmp(cfg->secs[idx].name, name) == 0;
}

static int item_eq(amp_config *cfg, size_t idx, size_t sec, const char *key)
{
    cfg->compares++;
    return cfg->items[idx].sec == sec && strcmp(cfg->items[idx].key, key) == 0;
}

static int known_eq(amp_config *cfg, size_t idx, size_t sec, const char *key)
{
    cfg->compares++;
    return cfg->known[idx].sec == sec && strcmp(cfg->known[idx].key, key) == 0;
}

size_t amp_cfg_sec_find(amp_config *cfg, const char *name)
{
    return index_find(cfg, &cfg->sec_index, hash_str(0xcbf29ce484222325ULL, name), sec_eq, 0,
                      name);
}

/* The section's index, created when absent; NONE when out of memory. */
static size_t sec_get(amp_config *cfg, const char *name)
{
    size_t s = amp_cfg_sec_find(cfg, name);
    if (s != NONE)
        return s;
    if (cfg->n_secs == cfg->cap_secs) {
        size_t cap = cfg->cap_secs ? 2 * cfg->cap_secs : 16;
        cfg_sec *p = realloc(cfg->secs, cap * sizeof *p);
        if (!p)
            return NONE;
        cfg->secs = p;
        cfg->cap_secs = cap;
    }
    cfg_sec *sc = &cfg->secs[cfg->n_secs];
    sc->name = strdup(name);
    if (!sc->name)
        return NONE;
    sc->header = sc->known_null = NONE;
    sc->known_head = sc->known_tail = sc->item_head = sc->item_tail = NONE;
    if (index_put(&cfg->sec_index, hash_str(0xcbf29ce484222325ULL, name), cfg->n_secs) != 0) {
        free(sc->name);
        return NONE;
    }
    return cfg->n_secs++;
}

static cfg_item *item_add(amp_config *cfg, const char *section, const char *key,
                          const char *value, const char *where, int line)
{
    size_t sec = sec_get(cfg, section);
    if (sec == NONE)
        return NULL;
    if (cfg->n_items == cfg->cap_items) {
        size_t cap = cfg->cap_items ? 2 * cfg->cap_items : 16;
        cfg_item *p = realloc(cfg->items, cap * sizeof *p);
        if (!p)
            return NULL;
        cfg->items = p;
        cfg->cap_items = cap;
    }
    cfg_item it = {0};
    it.section = strdup(section);
    it.key = key ? strdup(key) : NULL;
    it.value = value ? strdup(value) : NULL;
    it.where = strdup(where);
    it.line = line;
    it.sec = sec;
    it.next = NONE;
    size_t idx = cfg->n_items;
    if (!it.section || (key && !it.key) || (value && !it.value) || !it.where ||
        (key && index_put(&cfg->item_index, hash_pair(sec, key), idx) != 0)) {
        free(it.section);
        free(it.key);
        free(it.value);
        free(it.where);
        return NULL;
    }
    cfg->items[idx] = it;
    cfg->n_items++;
    cfg_sec *sc = &cfg->secs[sec];
    if (!key) {
        sc->header = idx;
    } else {
        if (sc->item_tail == NONE)
            sc->item_head = idx;
        else
            cfg->items[sc->item_tail].next = idx;
        sc->item_tail = idx;
    }
    return &cfg->items[idx];
}

static cfg_item *find_section_item(amp_config *cfg, const char *section)
{
    size_t sec = amp_cfg_sec_find(cfg, section);
    return sec == NONE || cfg->secs[sec].header == NONE ? NULL : &cfg->items[cfg->secs[sec].header];
}

cfg_item *amp_cfg_find_entry(amp_config *cfg, const char *section, const char *key)
{
    size_t sec = amp_cfg_sec_find(cfg, section);
    if (sec == NONE)
        return NULL;
    size_t i = index_find(cfg, &cfg->item_index, hash_pair(sec, key), item_eq, sec, key);
    return i == NONE ? NULL : &cfg->items[i];
}

size_t amp_cfg_known_find(amp_config *cfg, size_t sec, const char *key)
{
    if (!key)
        return cfg->secs[sec].known_null;
    return index_find(cfg, &cfg->known_index, hash_pair(sec, key), known_eq, sec, key);
}

/* Whether known[k] is the first record of its section (lists each once). */
int amp_cfg_first_of_section(const amp_config *cfg, size_t k)
{
    return cfg->secs[cfg->known[k].sec].known_head == k;
}

/* Records (section, key) as known; with value, also what it resolved to
 * (replacing an earlier record). Failure only sets cfg->oom: the getters'
 * results stay right, check_unread reports it. */
void amp_cfg_known_note(amp_config *cfg, const char *section, const char *key,
                       const char *value, const char *origin)
{
    size_t sec = sec_get(cfg, section);
    if (sec == NONE) {
        cfg->oom = 1;
        return;
    }
    size_t ki = amp_cfg_known_find(cfg, sec, key);
    cfg_known *k;
    if (ki == NONE) {
        if (cfg->n_known == cfg->cap_known) {
            size_t cap = cfg->cap_known ? 2 * cfg->cap_known : 32;
            cfg_known *p = realloc(cfg->known, cap * sizeof *p);
            if (!p) {
                cfg->oom = 1;
                return;
            }
            cfg->known = p;
            cfg->cap_known = cap;
        }
        ki = cfg->n_known;
        k = &cfg->known[ki];
        memset(k, 0, sizeof *k);
        k->section = strdup(section);
        k->key = key ? strdup(key) : NULL;
        k->sec = sec;
        k->next = NONE;
        if (!k->section || (key && !k->key) ||
            (key && index_put(&cfg->known_index, hash_pair(sec, key), ki) != 0)) {
            free(k->section);
            free(k->key);
            cfg->oom = 1;
            return;
        }
        cfg->n_known++;
        cfg_sec *sc = &cfg->secs[sec];
        if (!key)
            sc->known_null = ki;
        if (sc->known_tail == NONE)
            sc->known_head = ki;
        else
            cfg->known[sc->known_tail].next = ki;
        sc->known_tail = ki;
    }
    k = &cfg->known[ki];
    if (value) {
        char *v = strdup(value), *o = strdup(origin);
        if (!v || !o) {
            free(v);
            free(o);
            cfg->oom = 1;
            return;
        }
        free(k->value);
        free(k->origin);
        k->value = v;
        k->origin = o;
    }
}

size_t amp_config_compares(const amp_config *cfg) { return cfg->compares; }

/* ---------------------------------------------------------------- parsing */

typedef struct parse_state {
    amp_config *cfg;
    FILE *f;
    char *line; /* the current line, at most line_cap bytes kept */
    size_t line_cap;
    int lineno;
    const char *section; /* current section (owned by its item), NULL before the first */
    char *pending;       /* key line handed to inih; the handler clears it */
    int err_line;        /* first error we found; -1 read error */
    char msg[512];
} parse_state;

static void parse_fail(parse_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void parse_fail(parse_state *st, const char *fmt, ...)
{
    if (st->err_line)
        return;
    st->err_line = st->lineno;
    int n = snprintf(st->msg, sizeof st->msg, "%s:%d: ", st->cfg->path, st->lineno);
    if (n < 0 || (size_t)n >= sizeof st->msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->msg + n, sizeof st->msg - (size_t)n, fmt, ap);
    va_end(ap);
}

/* A content line inih did not call the handler for has no '=' or ':'. */
static void parse_check_pending(parse_state *st)
{
    if (st->pending && !st->err_line)
        parse_fail(st, "cannot parse '%s': expected '[section]', 'key = value' or a comment",
                   st->pending);
    free(st->pending);
    st->pending = NULL;
}

static void parse_section(parse_state *st, char *s)
{
    char *close = strchr(s, ']');
    if (!close) {
        parse_fail(st, "section header '%s' has no closing ']'", s);
        return;
    }
    char *rest = close + 1;
    while (is_blank(*rest))
        rest++;
    if (*rest && *rest != ';' && *rest != '#') {
        parse_fail(st, "unexpected '%s' after the section header", rest);
        return;
    }
    *close = '\0';
    char *name = trim(s + 1);
    if (!valid_section_name(name)) {
        parse_fail(st, "bad section name [%s]: use letters, digits, '_' and '-'", name);
        return;
    }
    const cfg_item *first = find_section_item(st->cfg, name);
    if (first) {
        parse_fail(st, "duplicate section [%s]; first at line %d", name, first->line);
        return;
    }
    char *w = amp_cfg_str_printf("%s:%d", st->cfg->path, st->lineno);
    cfg_item *it = w ? item_add(st->cfg, name, NULL, NULL, w, st->lineno) : NULL;
    free(w);
    if (!it) {
        parse_fail(st, "out of memory");
        return;
    }
    st->section = it->section;
}

/* Strips an inline comment: ';' or '#' after a blank. */
static void strip_inline_comment(char *s)
{
    for (char *p = s + 1; *p; p++) {
        if ((*p == ';' || *p == '#') && is_blank(p[-1])) {
            *p = '\0';
            break;
        }
    }
}

/* Past this many bytes a long line is not counted further. */
#define LINE_COUNT_MAX (1u << 20)

/* Reads one line without its '\n': the first st->line_cap bytes into
 * st->line, the rest only counted (*total, up to LINE_COUNT_MAX + 1, where
 * reading stops), so that no line, not even an endless one, costs more
 * memory or time than that. 1: a
 * line; 0: the end of the file; -1: a read error (errno set). A read error
 * is never taken for the end of the file. */
static int read_line(parse_state *st, size_t *kept, size_t *total, int *cr)
{
    size_t n = 0, all = 0;
    int c, last = 0;
    errno = 0;
    while ((c = getc(st->f)) != EOF) {
        if (c == '\n')
            break;
        last = c;
        if (n < st->line_cap)
            st->line[n++] = (char)c;
        if (++all > LINE_COUNT_MAX)
            break; /* the caller refuses the line and stops: no need to read on */
    }
    if (c == EOF && ferror(st->f)) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    if (c == EOF && all == 0)
        return 0;
    st->line[n] = '\0';
    *kept = n;
    *total = all;
    *cr = last == '\r' && all <= LINE_COUNT_MAX;
    return 1;
}

/* fgets-style reader for ini_parse_stream: hands inih one normalised line
 * (comment and section lines become empty) and returns NULL to stop at our
 * first error. */
static char *parse_reader(char *buf, int num, void *stream)
{
    parse_state *st = stream;
    parse_check_pending(st);
    if (st->err_line)
        return NULL;
    if (num < 4) {
        parse_fail(st, "inih's line buffer is too small (%d bytes)", num);
        return NULL;
    }
    if (!st->line) {
        /* inih's buffer must also hold "\r\n\0"; longer lines it would
         * split. Two more bytes: a '\r' and one byte too many. */
        st->line_cap = (size_t)num - 1;
        st->line = malloc(st->line_cap + 1);
        if (!st->line) {
            parse_fail(st, "out of memory");
            return NULL;
        }
    }
    size_t len = 0, total = 0;
    int cr = 0;
    int got = read_line(st, &len, &total, &cr);
    if (got <= 0) {
        if (got < 0) {
            st->err_line = -1;
            snprintf(st->msg, sizeof st->msg, "%s: cannot read: %s", st->cfg->path,
                     strerror(errno));
        }
        return NULL;
    }
    st->lineno++;
    char *s = st->line;
    if (cr) { /* CRLF */
        if (len == total)
            len--;
        total--;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            parse_fail(st, "control byte 0x%02x at column %zu: this is not a text INI file", c,
                       i + 1);
            return NULL;
        }
    }
    s[len] = '\0';
    if (st->lineno == 1 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
        s += 3;
        len -= 3;
        total -= 3;
    }
    if (total > (size_t)num - 3) {
        if (total > LINE_COUNT_MAX)
            parse_fail(st, "line too long (more than %u characters; the limit is %d)",
                       LINE_COUNT_MAX, num - 3);
        else
            parse_fail(st, "line too long (%zu characters; the limit is %d)", total, num - 3);
        return NULL;
    }
    /* Leading blanks are dropped so inih never sees a continuation line. */
    while (is_blank(*s))
        s++;
    const char *out = "";
    if (*s == '[') {
        parse_section(st, s);
        if (st->err_line)
            return NULL;
    } else if (*s && *s != ';' && *s != '#') {
        strip_inline_comment(s);
        trim(s);
        st->pending = strdup(s);
        if (!st->pending) {
            parse_fail(st, "out of memory");
            return NULL;
        }
        out = s;
    }
    snprintf(buf, (size_t)num, "%s\n", out);
    return buf;
}

static int parse_handler(void *user, const char *section, const char *name, const char *value)
{
    parse_state *st = user;
    (void)section; /* ours is exact; inih truncates long names */
    free(st->pending);
    st->pending = NULL;
    if (st->err_line)
        return 1;
    if (!*name) {
        parse_fail(st, "missing key name before '='");
        return 0;
    }
    if (!valid_key_name(name)) {
        parse_fail(st, "bad key name '%s': use " KEY_CHARS, name);
        return 0;
    }
    if (!st->section) {
        parse_fail(st, "key '%s' comes before any [section] header", name);
        return 0;
    }
    char why[160];
    if (amp_cfg_value_unwritable(name, value, why, sizeof why)) {
        parse_fail(st, "[%s] %s = '%s': %s", st->section, name, value, why);
        return 0;
    }
    const cfg_item *first = amp_cfg_find_entry(st->cfg, st->section, name);
    if (first) {
        parse_fail(st, "duplicate key '%s' in [%s]; first set at line %d", name, st->section,
                   first->line);
        return 0;
    }
    char *w = amp_cfg_str_printf("%s:%d", st->cfg->path, st->lineno);
    cfg_item *it = w ? item_add(st->cfg, st->section, name, value, w, st->lineno) : NULL;
    free(w);
    if (!it) {
        parse_fail(st, "out of memory");
        return 0;
    }
    return 1;
}

amp_config *amp_config_new_empty(const char *label)
{
    amp_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return NULL;
    cfg->path = strdup(label ? label : "(config)");
    if (!cfg->path) {
        free(cfg);
        return NULL;
    }
    return cfg;
}

/* Parses the stream f (closed here) into a config labelled `path`. */
static amp_config *parse_stream(FILE *f, const char *path, char *err, size_t errlen)
{
    amp_config *cfg = amp_config_new_empty(path);
    if (!cfg) {
        fclose(f);
        amp_set_err(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    parse_state st = {0};
    st.cfg = cfg;
    st.f = f;
    int rc = ini_parse_stream(parse_reader, &st, parse_handler, &st);
    parse_check_pending(&st); /* the last line */
    free(st.line);
    fclose(f);
    if (st.err_line) {
        amp_set_err(err, errlen, "%s", st.msg);
    } else if (rc != 0) {
        /* Our checks mirror inih's; this is a backstop. */
        if (rc > 0)
            amp_set_err(err, errlen, "%s:%d: syntax error", path, rc);
        else
            amp_set_err(err, errlen, "%s: out of memory", path);
    } else {
        return cfg;
    }
    amp_config_free(cfg);
    return NULL;
}

amp_config *amp_config_load(const char *path, char *err, size_t errlen)
{
    /* Regular files only: a FIFO would hang the read, /dev/zero never ends. */
    FILE *f = amp_file_fopen_read(path, NULL, err, errlen);
    if (!f)
        return NULL;
    return parse_stream(f, path, err, errlen);
}

amp_config *amp_config_parse(const char *label, const char *text, size_t len, char *err,
                             size_t errlen)
{
    if (!label)
        label = "(config)";
    if (len == 0) { /* fmemopen refuses a zero size; an empty config is valid */
        amp_config *cfg = amp_config_new_empty(label);
        if (!cfg)
            amp_set_err(err, errlen, "%s: out of memory", label);
        return cfg;
    }
    /* fmemopen does not write to a "r" stream; the cast only drops const. */
    FILE *f = fmemopen((void *)(uintptr_t)text, len, "r");
    if (!f) {
        amp_set_err(err, errlen, "%s: cannot read: %s", label, strerror(errno));
        return NULL;
    }
    return parse_stream(f, label, err, errlen);
}

void amp_config_free(amp_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n_items; i++) {
        free(cfg->items[i].section);
        free(cfg->items[i].key);
        free(cfg->items[i].value);
        free(cfg->items[i].where);
    }
    for (size_t i = 0; i < cfg->n_known; i++) {
        free(cfg->known[i].section);
        free(cfg->known[i].key);
        free(cfg->known[i].value);
        free(cfg->known[i].origin);
    }
    for (size_t i = 0; i < cfg->n_secs; i++)
        free(cfg->secs[i].name);
    for (size_t i = 0; i < cfg->n_unused; i++) {
        free(cfg->unused[i].section);
        free(cfg->unused[i].key);
        free(cfg->unused[i].chosen);
        free(cfg->unused[i].used_by);
    }
    free(cfg->unused);
    free(cfg->items);
    free(cfg->known);
    free(cfg->secs);
    index_free(&cfg->sec_index);
    index_free(&cfg->item_index);
    index_free(&cfg->known_index);
    free(cfg->path);
    free(cfg);
}

const char *amp_config_path(const amp_config *cfg) { return cfg->path; }

/* --------------------------------------------------------------- --set */

/* amp_config_set with the entry located as `origin` (NULL: "--set section.key"). */
static int set_entry(amp_config *cfg, const char *assignment, const char *origin, char *err,
                     size_t errlen)
{
    static const char usage[] = "expected section.key=value, e.g. --set optim.lr=0.01";
    for (const char *p = assignment; *p; p++) {
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f) {
            amp_set_err(err, errlen, "--set: control character in the assignment; %s", usage);
            return -1;
        }
    }
    const char *eq = strchr(assignment, '=');
    if (!eq) {
        amp_set_err(err, errlen, "--set '%s': no '='; %s", assignment, usage);
        return -1;
    }
    char *lhs_buf = str_dup_n(assignment, (size_t)(eq - assignment));
    char *val_buf = strdup(eq + 1);
    char *where = NULL;
    int rc = -1;
    if (!lhs_buf || !val_buf) {
        amp_set_err(err, errlen, "--set: out of memory");
        goto out;
    }
    char *lhs = trim(lhs_buf), *value = trim(val_buf);
    char *dot = strchr(lhs, '.');
    if (!dot || dot == lhs || !dot[1]) {
        amp_set_err(err, errlen, "--set '%s': '%s' is not section.key; %s", assignment, lhs, usage);
        goto out;
    }
    *dot = '\0';
    const char *section = lhs, *key = dot + 1;
    if (!valid_section_name(section)) {
        amp_set_err(err, errlen, "--set '%s': bad section name '%s': use letters, digits, '_' and '-'",
                assignment, section);
        goto out;
    }
    if (!valid_key_name(key)) {
        amp_set_err(err, errlen, "--set '%s': bad key name '%s': use " KEY_CHARS,
                assignment, key);
        goto out;
    }
    char why[160];
    if (amp_cfg_value_unwritable(key, value, why, sizeof why)) {
        amp_set_err(err, errlen, "--set %s.%s: [%s] %s = '%s': %s", section, key, section, key,
                    value, why);
        goto out;
    }
    where = origin ? amp_cfg_str_printf("%s", origin)
                   : amp_cfg_str_printf("--set %s.%s", section, key);
    if (!where) {
        amp_set_err(err, errlen, "--set: out of memory");
        goto out;
    }
    cfg_item *it = amp_cfg_find_entry(cfg, section, key);
    if (it) {
        char *v = strdup(value), *w = strdup(where);
        if (!v || !w) {
            free(v);
            free(w);
            amp_set_err(err, errlen, "--set: out of memory");
            goto out;
        }
        free(it->value);
        free(it->where);
        it->value = v;
        it->where = w;
        it->line = 0;
    } else if ((!find_section_item(cfg, section) &&
                !item_add(cfg, section, NULL, NULL, where, 0)) ||
               !item_add(cfg, section, key, value, where, 0)) {
        amp_set_err(err, errlen, "--set: out of memory");
        goto out;
    }
    rc = 0;
out:
    free(lhs_buf);
    free(val_buf);
    free(where);
    return rc;
}

int amp_config_set(amp_config *cfg, const char *assignment, char *err, size_t errlen)
{
    return set_entry(cfg, assignment, NULL, err, errlen);
}

int amp_config_set_from(amp_config *cfg, const char *assignment, const char *origin, char *err,
                        size_t errlen)
{
    return set_entry(cfg, assignment, origin, err, errlen);
}
