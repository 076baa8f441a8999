/* Reads a TensorBoard event file back on its own terms, for the
 * tensorboard tests: every record's framing (uint64 length, masked CRC-32C
 * of the length, data, masked CRC-32C of the data), every Event protobuf
 * (wall_time 1, step 2, file_version 3, summary 5 { value 1 { tag 1,
 * simple_value 2 } }, unknown fields skipped by wire type), and then
 * compares it with the run's metrics.jsonl: event k+1 is line k, at its
 * step, with exactly the scalars the line holds (train/<key> for a step
 * line, eval/<key> for an evaluation line, true/false as 1/0, null left
 * out; per "fp8" operand underflow/<layer>/<role> = flushed and
 * saturation/<layer>/<role> = saturated), each equal to the line's number
 * as a float. With a metrics.csv it checks that too: the header, then one
 * row per line with the line's numbers.
 * usage: tb_decode EVENTS METRICS.jsonl [METRICS.csv] [--dump]
 * (EVENTS "-": metrics.csv alone; --dump prints "step tag value" lines)
 * Exit 0 when all of it holds, 1 naming the first thing that does not. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json_read.h"

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* CRC-32C with a table (the writer computes it bit by bit). */
static uint32_t crc_table[256];
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[i] = c;
    }
}
static uint32_t masked_crc(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    c ^= 0xffffffffu;
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

typedef struct scalar { char tag[256]; float value; int seen; } scalar;
typedef struct event {
    double wall;
    int64_t step;
    char version[64];
    scalar *v;
    size_t nv;
} event;

static uint64_t varint(const uint8_t **p, const uint8_t *end) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) die("a varint runs past its message");
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    die("a varint longer than 10 bytes");
    return 0;
}

/* Skips a field of wire type w; *p after it. */
static void skip(const uint8_t **p, const uint8_t *end, unsigned w) {
    uint64_t n = w == 0 ? (varint(p, end), 0) : w == 1 ? 8 : w == 5 ? 4 : w == 2 ? varint(p, end) : ~0ull;
    if (n == ~0ull) die("unknown wire type %u", w);
    if ((uint64_t)(end - *p) < n) die("a field runs past its message (%llu bytes)", (unsigned long long)n);
    *p += n;
}

static void decode_value(const uint8_t *p, const uint8_t *end, event *e) {
    scalar s = {"", 0.0f, 0};
    int has_tag = 0, has_value = 0;
    while (p < end) {
        uint64_t k = varint(&p, end);
        unsigned f = (unsigned)(k >> 3), w = (unsigned)(k & 7);
        if (f == 1 && w == 2) {
            uint64_t n = varint(&p, end);
            if (n >= sizeof s.tag || (uint64_t)(end - p) < n) die("bad tag length %llu", (unsigned long long)n);
            memcpy(s.tag, p, n);
            s.tag[n] = '\0';
            p += n;
            has_tag = 1;
        } else if (f == 2 && w == 5) {
            if (end - p < 4) die("simple_value cut short");
            uint32_t bits = (uint32_t)le(p, 4);
            memcpy(&s.value, &bits, 4);
            p += 4;
            has_value = 1;
        } else
            skip(&p, end, w);
    }
    if (!has_tag || !has_value) die("a Value without %s", has_tag ? "simple_value" : "tag");
    e->v = realloc(e->v, (e->nv + 1) * sizeof *e->v);
    e->v[e->nv++] = s;
}

static void decode_event(const uint8_t *p, const uint8_t *end, event *e) {
    memset(e, 0, sizeof *e);
    while (p < end) {
        uint64_t k = varint(&p, end);
        unsigned f = (unsigned)(k >> 3), w = (unsigned)(k & 7);
        if (f == 1 && w == 1) {
            uint64_t bits = le(p, 8);
            memcpy(&e->wall, &bits, 8);
            p += 8;
        } else if (f == 2 && w == 0) {
            e->step = (int64_t)varint(&p, end);
        } else if (f == 3 && w == 2) {
            uint64_t n = varint(&p, end);
            if (n >= sizeof e->version || (uint64_t)(end - p) < n) die("bad file_version length %llu", (unsigned long long)n);
            memcpy(e->version, p, n);
            p += n;
        } else if (f == 5 && w == 2) {
            uint64_t n = varint(&p, end);
            if ((uint64_t)(end - p) < n) die("summary runs past the event (%llu)", (unsigned long long)n);
            const uint8_t *q = p, *qend = p + n;
            while (q < qend) { /* Summary: repeated Value value = 1 */
                uint64_t kk = varint(&q, qend);
                if ((kk >> 3) == 1 && (kk & 7) == 2) {
                    uint64_t m = varint(&q, qend);
                    if ((uint64_t)(qend - q) < m) die("a Value runs past the summary (%llu)", (unsigned long long)m);
                    decode_value(q, q + m, e);
                    q += m;
                } else
                    skip(&q, qend, (unsigned)(kk & 7));
            }
            p = qend;
        } else
            skip(&p, end, w);
    }
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open %s", path);
    size_t cap = 1 << 16;
    uint8_t *b = malloc(cap);
    *n = 0;
    size_t got;
    while ((got = fread(b + *n, 1, cap - *n, f)) > 0) {
        *n += got;
        if (*n == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    return b;
}

static void expect(event *e, const char *tag, double want, long long line) {
    for (size_t i = 0; i < e->nv; i++)
        if (strcmp(e->v[i].tag, tag) == 0) {
            if (e->v[i].seen) die("the event of metrics.jsonl line %lld has %s twice", line, tag);
            e->v[i].seen = 1;
            if (e->v[i].value != (float)want && !(isnan(e->v[i].value) && isnan(want))) {
                fprintf(stderr, "FAIL: line %lld: %s is %.9g in the event file, %.9g in metrics.jsonl\n",
                        line, tag, (double)e->v[i].value, want);
                exit(1);
            }
            return;
        }
    die("the event file has no scalar %s for metrics.jsonl line %lld", tag, line);
}

/* The scalars line `line` (1-based) must have in e. */
static size_t check_line(event *e, const amp_jval *j, long long line) {
    const amp_jval *step = amp_json_get_type(j, "step", AMP_JNUM);
    if (!step) die("metrics.jsonl line %lld has no step", line);
    if (e->step != (int64_t)step->num) {
        fprintf(stderr, "FAIL: line %lld is step %lld, its event step %lld\n", line,
                (long long)step->num, (long long)e->step);
        exit(1);
    }
    const char *group = amp_json_get(j, "loss") ? "train" : "eval";
    size_t n = 0;
    for (size_t k = 0; k < j->n; k++) {
        const char *key = j->keys[k];
        const amp_jval *v = &j->items[k];
        char tag[256];
        if (strcmp(key, "step") == 0 || strcmp(key, "epoch") == 0) continue;
        if (strcmp(key, "fp8") == 0) {
            for (size_t i = 0; i < v->n; i++) {
                const amp_jval *op = &v->items[i];
                const char *layer = amp_json_get(op, "layer")->str, *role = amp_json_get(op, "role")->str;
                snprintf(tag, sizeof tag, "underflow/%s/%s", layer, role);
                expect(e, tag, amp_json_get(op, "flushed")->num, line);
                snprintf(tag, sizeof tag, "saturation/%s/%s", layer, role);
                expect(e, tag, amp_json_get(op, "saturated")->num, line);
                n += 2;
            }
            continue;
        }
        if (v->type == AMP_JNULL) continue;
        if (v->type != AMP_JNUM && v->type != AMP_JBOOL) die("metrics.jsonl line %lld: %s is not a number", line, key);
        snprintf(tag, sizeof tag, "%s/%s", group, key);
        expect(e, tag, v->type == AMP_JNUM ? v->num : v->b, line);
        n++;
    }
    for (size_t i = 0; i < e->nv; i++)
        if (!e->v[i].seen) die("the event of metrics.jsonl line %lld has %s, which the line has not", line, e->v[i].tag);
    return n;
}

/* metrics.csv: the header, then row k = line k. */
static void check_csv(const char *path, amp_jval **lines, size_t nlines) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open %s", path);
    char row[8192], *cols[64];
    int ncol = 0;
    if (!fgets(row, sizeof row, f)) die("%s is empty", path);
    row[strcspn(row, "\n")] = '\0';
    static char header[8192];
    strcpy(header, row);
    for (char *t = strtok(header, ","); t && ncol < 64; t = strtok(NULL, ",")) cols[ncol++] = t;
    for (size_t l = 0; l < nlines; l++) {
        const amp_jval *j = lines[l];
        for (size_t k = 0; k < j->n; k++) { /* every key has a column */
            int found = strcmp(j->keys[k], "fp8") == 0;
            for (int c = 0; c < ncol && !found; c++) found = strcmp(cols[c], j->keys[k]) == 0;
            if (!found) die("metrics.csv has no column for the metrics.jsonl key %s (line %lld)", j->keys[k], (long long)l + 1);
        }
        if (!fgets(row, sizeof row, f)) die("metrics.csv ends before the row of line %lld", (long long)l + 1);
        row[strcspn(row, "\n")] = '\0';
        char *p = row;
        for (int c = 0; c < ncol; c++) {
            char *comma = strchr(p, ',');
            if (!comma && c + 1 < ncol) die("metrics.csv row %lld has too few cells", (long long)l + 2);
            if (comma) *comma = '\0';
            const amp_jval *v = amp_json_get(j, cols[c]);
            char want[64] = "";
            int ok;
            if (v && v->type == AMP_JNUM) {
                char *e;
                double got = strtod(p, &e);
                ok = *p && !*e && got == v->num;
                snprintf(want, sizeof want, "%.17g", v->num);
            } else if (v && v->type == AMP_JBOOL) {
                snprintf(want, sizeof want, "%s", v->b ? "true" : "false");
                ok = strcmp(p, want) == 0;
            } else
                ok = *p == '\0';
            if (!ok) {
                fprintf(stderr, "FAIL: metrics.csv row %zu, column %s: '%s', metrics.jsonl has '%s'\n", l + 2, cols[c], p, want);
                exit(1);
            }
            p = comma ? comma + 1 : p + strlen(p);
        }
    }
    if (fgets(row, sizeof row, f)) die("metrics.csv has rows beyond metrics.jsonl's lines: %s", row);
    fclose(f);
}

/* Everything main holds, freed before a normal exit (the sanitizer build's
 * leak check runs this decoder too). */
static void release(event *ev, size_t nev, amp_jval **lines, size_t nlines, char *text) {
    for (size_t i = 0; i < nev; i++) free(ev[i].v);
    free(ev);
    for (size_t l = 0; l < nlines; l++) amp_json_free(lines[l]);
    free(lines);
    free(text);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: tb_decode EVENTS METRICS.jsonl [METRICS.csv] [--dump]\n");
        return 2;
    }
    const char *csv = argc > 3 && strcmp(argv[3], "--dump") != 0 ? argv[3] : NULL;
    int dump = strcmp(argv[argc - 1], "--dump") == 0;
    crc_init();
    int no_events = strcmp(argv[1], "-") == 0; /* metrics.csv alone */
    size_t n = 0;
    uint8_t *b = no_events ? NULL : slurp(argv[1], &n);
    event *ev = NULL;
    size_t nev = 0, nscalars = 0;
    for (size_t at = 0; at < n;) {
        if (n - at < 12) die("the file ends inside a record's header at byte %zu", at);
        uint64_t len = le(b + at, 8);
        if ((uint32_t)le(b + at + 8, 4) != masked_crc(b + at, 8))
            die("record at byte %zu: the length's CRC does not match", at);
        if (n - at - 12 < len + 4) die("the file ends inside the record at byte %zu", at);
        const uint8_t *data = b + at + 12;
        if ((uint32_t)le(data + len, 4) != masked_crc(data, len))
            die("record at byte %zu: the data's CRC does not match", at);
        ev = realloc(ev, (nev + 1) * sizeof *ev);
        decode_event(data, data + len, &ev[nev]);
        nscalars += ev[nev].nv;
        if (dump)
            for (size_t i = 0; i < ev[nev].nv; i++)
                printf("%lld %s %.9g\n", (long long)ev[nev].step, ev[nev].v[i].tag, (double)ev[nev].v[i].value);
        nev++;
        at += 12 + len + 4;
    }
    free(b);
    if (!no_events && (nev == 0 || strcmp(ev[0].version, "brain.Event:2") != 0 || ev[0].nv != 0))
        die("the first record is not the file_version event \"brain.Event:2\" (%s, %lld values)",
            nev ? ev[0].version : "no records", nev ? (long long)ev[0].nv : 0);
    size_t jn;
    char *text = (char *)slurp(argv[2], &jn);
    amp_jval **lines = NULL;
    size_t nlines = 0, checked = 0;
    for (size_t at = 0; at < jn;) {
        char *nl = memchr(text + at, '\n', jn - at);
        size_t len = nl ? (size_t)(nl - text - at) : jn - at;
        char err[512];
        amp_jval *j = amp_json_parse(text + at, len, argv[2], (int)nlines + 1, err, sizeof err);
        if (!j) die("%s", err);
        lines = realloc(lines, (nlines + 1) * sizeof *lines);
        lines[nlines++] = j;
        at += len + 1;
    }
    if (no_events) {
        if (!csv) die("give metrics.csv to check without an event file");
        check_csv(csv, lines, nlines);
        printf("metrics.csv: the header and a row per line of metrics.jsonl's %zu, equal\n", nlines);
        release(ev, nev, lines, nlines, text);
        return 0;
    }
    if (nev != nlines + 1) {
        fprintf(stderr, "FAIL: %zu events after the file_version one, %zu lines in metrics.jsonl\n", nev - 1, nlines);
        return 1;
    }
    for (size_t l = 0; l < nlines; l++) checked += check_line(&ev[l + 1], lines[l], (long long)l + 1);
    if (csv) check_csv(csv, lines, nlines);
    printf("%zu records, CRCs good; %zu events, %zu scalars, every one equal to metrics.jsonl's %zu lines%s\n",
           nev, nev - 1, nscalars, nlines, csv ? "; metrics.csv: the header and a row per line, equal" : "");
    (void)checked;
    release(ev, nev, lines, nlines, text);
    return 0;
}
