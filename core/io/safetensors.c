/* Hugging Face safetensors reader and writer (see safetensors.h).
 *
 * What amp_safetensors_open checks, in order, each failure naming the file:
 *   - the file is a regular file of at least 8 bytes;
 *   - header length N <= 100 MB and 8 + N <= file size;
 *   - the header is valid UTF-8 and strict JSON of exactly the shape the format
 *     uses: an object of tensor objects {"dtype": string, "shape": [ints],
 *     "data_offsets": [int, int]} plus an optional "__metadata__" object of
 *     string -> string. No floats, booleans, nulls, unknown keys, duplicate
 *     keys or trailing bytes (space padding is fine: it is JSON whitespace).
 *     Syntax errors give the byte offset in the file;
 *   - each dtype is known, shape entries are non-negative, product(shape) *
 *     dtype size (no overflow) == end - begin;
 *   - sorted by offset, the tensors start at 0, touch without gaps or overlap,
 *     and end exactly at the end of the file.
 * The parser decodes strings in place in its copy of the header, so names and
 * metadata are C strings pointing into that buffer.
 */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/kernels/convert.h"
#include "io/out_file.h"

#define ST_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- dtypes ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    unsigned bits; /* sub-byte types (F4, F6) pack; a tensor must fill whole bytes */
} st_dtype;

enum { ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64 }; /* the first entries of st_dtypes */

static const st_dtype st_dtypes[] = {
    {"F64", 64},    {"F32", 32},     {"F16", 16},     {"BF16", 16},    {"I64", 64},
    {"I32", 32},    {"I16", 16},     {"I8", 8},       {"U64", 64},     {"U32", 32},
    {"U16", 16},    {"U8", 8},       {"BOOL", 8},     {"F8_E5M2", 8},  {"F8_E4M3", 8},
    {"F8_E8M0", 8}, {"F6_E2M3", 6},  {"F6_E3M2", 6},  {"F4", 4},       {"C64", 64},
};
#define ST_NDTYPES ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

static int dtype_find(const char *s) {
    for (int i = 0; i < ST_NDTYPES; i++)
        if (strcmp(st_dtypes[i].name, s) == 0) return i;
    return -1;
}

/* ---- small helpers --------------------------------------------------------- */

static int ST_PRINTF(4, 5) st_fail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
    if (err && errlen) {
        int n = snprintf(err, errlen, "%s: ", path ? path : "(null)");
        if (n < 0) n = 0;
        if ((size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* Grows *p (of *cap elements of size el) to hold at least need elements. */
static int grow(void **p, size_t *cap, size_t need, size_t el) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, nc * el);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* Offset of the first byte that is not valid UTF-8 (overlongs, surrogates and
 * code points above U+10FFFF are invalid), or n when all of s is valid. */
static size_t utf8_check(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            cp = c & 0x1fu;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0fu;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            cp = c & 0x07u;
        } else {
            return i;
        }
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += len;
    }
    return n;
}

/* "[10, 20]"; long shapes end in "...". */
static void shape_format(char *buf, size_t len, int ndim, const int64_t *shape) {
    size_t n = 0;
    int w = snprintf(buf, len, "[");
    n = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < ndim && n + 24 < len; i++) {
        w = snprintf(buf + n, len - n, "%s%" PRId64, i ? ", " : "", shape[i]);
        if (w > 0) n += (size_t)w;
        if (i + 1 < ndim && n + 28 >= len) {
            snprintf(buf + n, len - n, ", ...");
            n = strlen(buf);
            break;
        }
    }
    if (n + 2 <= len) snprintf(buf + n, len - n, "]");
}

static int pread_full(int fd, void *buf, size_t n, uint64_t off) {
    unsigned char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) {
            errno = 0; /* end of file: the caller says "shrank" */
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static uint64_t load_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---- the open file ---------------------------------------------------------- */

typedef struct {
    const char *name;
    int dtype;
    int ndim;
    size_t dim0;        /* first dimension in amp_safetensors.dims */
    uint64_t begin, end; /* relative to the data buffer */
    size_t at;          /* header byte of the name, for messages */
} st_entry;

typedef struct {
    const char *key, *val;
    size_t at;
} st_meta;

struct amp_safetensors {
    char *path;
    int fd;
    char *header;
    uint64_t data_start, data_size;
    st_entry *t;
    size_t count, cap;
    int64_t *dims;
    size_t ndims, capdims;
    const st_entry **by_name; /* sorted by name, for lookup */
    st_meta *meta;            /* sorted by key */
    size_t nmeta, capmeta;
};

/* ---- strict JSON, only what the header needs ----------------------------- */

typedef struct {
    char *s;
    size_t n, pos;
    const char *path;
    char *err;
    size_t errlen;
} st_json;

/* Positions in messages are file offsets (header byte + 8), what a hex dump shows. */
static int ST_PRINTF(3, 4) jfail(st_json *j, size_t at, const char *fmt, ...) {
    if (j->err && j->errlen) {
        int n = snprintf(j->err, j->errlen, "%s: header, byte %zu: ", j->path, at + 8);
        if (n < 0) n = 0;
        if ((size_t)n < j->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(j->err + n, j->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static int jpeek(const st_json *j) { return j->pos < j->n ? (unsigned char)j->s[j->pos] : -1; }

static void jws(st_json *j) {
    while (j->pos < j->n) {
        char c = j->s[j->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        j->pos++;
    }
}

/* Describes what sits at pos for "expected X but found Y" messages. */
static const char *jfound(const st_json *j, char *buf, size_t len) {
    int c = jpeek(j);
    if (c < 0) return "the end of the header";
    if (c >= 0x21 && c < 0x7f)
        snprintf(buf, len, "'%c'", c);
    else
        snprintf(buf, len, "byte 0x%02x", (unsigned)c);
    return buf;
}

static int jexpect(st_json *j, char c) {
    jws(j);
    if (jpeek(j) == (unsigned char)c) {
        j->pos++;
        return 0;
    }
    char b[16];
    return jfail(j, j->pos, "expected '%c' but found %s", c, jfound(j, b, sizeof b));
}

static int jhex4(st_json *j, size_t at, uint32_t *out) {
    if (j->n - at < 4) return jfail(j, at, "truncated \\u escape");
    uint32_t v = 0;
    for (size_t i = 0; i < 4; i++) {
        char c = j->s[at + i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return jfail(j, at + i, "bad hex digit in \\u escape");
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* Reads a string at pos, decoding escapes in place (the output never outruns
 * the input) and NUL-terminating it; *out points into the header. */
static int jstring(st_json *j, char **out) {
    jws(j);
    if (jpeek(j) != '"') {
        char b[16];
        return jfail(j, j->pos, "expected a string but found %s", jfound(j, b, sizeof b));
    }
    size_t start = j->pos, r = start + 1, w = start + 1;
    char *s = j->s;
    for (;;) {
        if (r >= j->n) return jfail(j, start, "unterminated string");
        unsigned char c = (unsigned char)s[r];
        if (c == '"') break;
        if (c < 0x20) return jfail(j, r, "control character 0x%02x in a string (escape it)", c);
        if (c != '\\') {
            s[w++] = (char)c; /* UTF-8 was validated over the whole header */
            r++;
            continue;
        }
        if (r + 1 >= j->n) return jfail(j, start, "unterminated string");
        char e = s[r + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            s[w++] = map[simple - "\"\\/bfnrt"];
            r += 2;
            continue;
        }
        if (e != 'u') return jfail(j, r, "invalid escape '\\%c'", e >= 0x21 && e < 0x7f ? e : '?');
        uint32_t cp;
        if (jhex4(j, r + 2, &cp)) return -1;
        size_t esc = r;
        r += 6;
        if (cp >= 0xdc00 && cp <= 0xdfff) return jfail(j, esc, "unpaired low surrogate in \\u escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
            uint32_t lo;
            if (r + 1 >= j->n || s[r] != '\\' || s[r + 1] != 'u')
                return jfail(j, esc, "unpaired high surrogate in \\u escape");
            if (jhex4(j, r + 2, &lo)) return -1;
            if (lo < 0xdc00 || lo > 0xdfff) return jfail(j, esc, "unpaired high surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            r += 6;
        }
        if (cp == 0) return jfail(j, esc, "\\u0000 in a string (names cannot hold NUL)");
        if (cp < 0x80) {
            s[w++] = (char)cp;
        } else if (cp < 0x800) {
            s[w++] = (char)(0xc0 | cp >> 6);
            s[w++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            s[w++] = (char)(0xe0 | cp >> 12);
            s[w++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            s[w++] = (char)(0x80 | (cp & 0x3f));
        } else {
            s[w++] = (char)(0xf0 | cp >> 18);
            s[w++] = (char)(0x80 | ((cp >> 12) & 0x3f));
            s[w++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            s[w++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    s[w] = '\0'; /* w <= r, the closing quote, which is consumed below */
    j->pos = r + 1;
    *out = s + start + 1;
    return 0;
}

/* A JSON integer (optional '-', no leading zeros, no fraction or exponent)
 * that fits in int64. Negative values are returned for the caller to reject
 * with a message that names the tensor. */
static int jint(st_json *j, int64_t *out) {
    jws(j);
    size_t start = j->pos;
    int neg = jpeek(j) == '-';
    if (neg) j->pos++;
    int c = jpeek(j);
    if (c < '0' || c > '9') {
        char b[16];
        return jfail(j, j->pos, "expected an integer but found %s", jfound(j, b, sizeof b));
    }
    uint64_t v = 0;
    if (c == '0') {
        j->pos++;
        c = jpeek(j);
        if (c >= '0' && c <= '9') return jfail(j, start, "integer with a leading zero");
    } else {
        while ((c = jpeek(j)) >= '0' && c <= '9') {
            if (v > ((uint64_t)INT64_MAX - (uint64_t)(c - '0')) / 10)
                return jfail(j, start, "integer out of range");
            v = v * 10 + (uint64_t)(c - '0');
            j->pos++;
        }
    }
    if (c == '.' || c == 'e' || c == 'E')
        return jfail(j, start, "only integers are allowed here (found a fraction or exponent)");
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* [int, ...] with at most max entries. */
static int jint_array(st_json *j, int64_t *vals, int max, int *count, const char *tname,
                      const char *what) {
    jws(j);
    size_t start = j->pos;
    if (jexpect(j, '[')) return -1;
    *count = 0;
    jws(j);
    if (jpeek(j) == ']') {
        j->pos++;
        return 0;
    }
    for (;;) {
        int64_t v = 0;
        if (*count == max)
            return jfail(j, start, "tensor '%s': \"%s\" has more than %d entries", tname, what, max);
        size_t at = (jws(j), j->pos);
        if (jint(j, &v)) return -1;
        if (v < 0)
            return jfail(j, at, "tensor '%s': %s entry %" PRId64 " is negative", tname, what, v);
        vals[(*count)++] = v;
        jws(j);
        int c = jpeek(j);
        if (c != ',' && c != ']') {
            char b[16];
            return jfail(j, j->pos, "expected ',' or ']' but found %s", jfound(j, b, sizeof b));
        }
        j->pos++;
        if (c == ']') return 0;
    }
}

/* After a member: ',' (returns 1, more) or '}' (returns 0, done). */
static int jnext(st_json *j) {
    jws(j);
    int c = jpeek(j);
    if (c == ',' || c == '}') {
        j->pos++;
        return c == ',';
    }
    char b[16];
    jfail(j, j->pos, "expected ',' or '}' but found %s", jfound(j, b, sizeof b));
    return -1;
}

static int parse_meta(amp_safetensors *st, st_json *j) {
    if (jexpect(j, '{')) return -1;
    jws(j);
    if (jpeek(j) == '}') {
        j->pos++;
        return 0;
    }
    for (int more = 1; more == 1;) {
        char *k, *v;
        size_t at = (jws(j), j->pos);
        if (jstring(j, &k) || jexpect(j, ':')) return -1;
        jws(j);
        if (jpeek(j) != '"') return jfail(j, j->pos, "__metadata__ values must be strings");
        if (jstring(j, &v)) return -1;
        if (grow((void **)&st->meta, &st->capmeta, st->nmeta + 1, sizeof *st->meta))
            return jfail(j, at, "out of memory");
        st->meta[st->nmeta++] = (st_meta){k, v, at};
        more = jnext(j);
        if (more < 0) return -1;
    }
    return 0;
}

static int parse_tensor(amp_safetensors *st, st_json *j, const char *name, size_t name_at) {
    int64_t shape[AMP_ST_MAX_RANK], off[3];
    int ndim = 0, noff = 0, dt = -1, have_shape = 0, have_off = 0;
    if (jexpect(j, '{')) return -1;
    jws(j);
    if (jpeek(j) == '}') return jfail(j, name_at, "tensor '%s' is an empty object", name);
    for (int more = 1; more == 1;) {
        char *k;
        size_t at = (jws(j), j->pos);
        if (jstring(j, &k) || jexpect(j, ':')) return -1;
        if (strcmp(k, "dtype") == 0) {
            char *d;
            if (dt >= 0) return jfail(j, at, "tensor '%s': duplicate key \"dtype\"", name);
            size_t vat = (jws(j), j->pos);
            if (jstring(j, &d)) return -1;
            dt = dtype_find(d);
            if (dt < 0)
                return jfail(j, vat, "tensor '%s': unknown dtype \"%s\" (known: F64 F32 F16 BF16 "
                                     "I64 I32 I16 I8 U64 U32 U16 U8 BOOL F8_* F6_* F4 C64)",
                             name, d);
        } else if (strcmp(k, "shape") == 0) {
            if (have_shape) return jfail(j, at, "tensor '%s': duplicate key \"shape\"", name);
            if (jint_array(j, shape, AMP_ST_MAX_RANK, &ndim, name, "shape")) return -1;
            have_shape = 1;
        } else if (strcmp(k, "data_offsets") == 0) {
            if (have_off) return jfail(j, at, "tensor '%s': duplicate key \"data_offsets\"", name);
            size_t vat = (jws(j), j->pos);
            if (jint_array(j, off, 3, &noff, name, "data_offsets")) return -1;
            if (noff != 2)
                return jfail(j, vat, "tensor '%s': data_offsets has %d entries, not 2 [begin, end]",
                             name, noff);
            if (off[1] < off[0])
                return jfail(j, vat, "tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] end before they begin",
                             name, off[0], off[1]);
            have_off = 1;
        } else {
            return jfail(j, at, "tensor '%s': unknown key \"%s\" (expected dtype, shape, data_offsets)",
                         name, k);
        }
        more = jnext(j);
        if (more < 0) return -1;
    }
    if (dt < 0 || !have_shape || !have_off)
        return jfail(j, name_at, "tensor '%s' has no \"%s\"", name,
                     dt < 0 ? "dtype" : !have_shape ? "shape" : "data_offsets");

    /* Size check with overflow: bytes = product(shape) * bits / 8. */
    uint64_t numel = 1, bits;
    char sh[256];
    shape_format(sh, sizeof sh, ndim, shape);
    for (int i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(numel, (uint64_t)shape[i], &numel))
            return jfail(j, name_at, "tensor '%s': shape %s overflows", name, sh);
    if (__builtin_mul_overflow(numel, (uint64_t)st_dtypes[dt].bits, &bits))
        return jfail(j, name_at, "tensor '%s': shape %s overflows", name, sh);
    if (bits % 8)
        return jfail(j, name_at, "tensor '%s': %" PRIu64 " elements of %s are not a whole number of bytes",
                     name, numel, st_dtypes[dt].name);
    uint64_t span = (uint64_t)off[1] - (uint64_t)off[0];
    if (bits / 8 != span)
        return jfail(j, name_at,
                     "tensor '%s': shape %s of %s needs %" PRIu64 " bytes but data_offsets [%" PRId64
                     ", %" PRId64 "] span %" PRIu64,
                     name, sh, st_dtypes[dt].name, bits / 8, off[0], off[1], span);

    if (grow((void **)&st->t, &st->cap, st->count + 1, sizeof *st->t) ||
        grow((void **)&st->dims, &st->capdims, st->ndims + (size_t)ndim, sizeof *st->dims))
        return jfail(j, name_at, "out of memory");
    if (ndim) memcpy(st->dims + st->ndims, shape, (size_t)ndim * sizeof *shape);
    st->t[st->count++] = (st_entry){name, dt, ndim, st->ndims, (uint64_t)off[0], (uint64_t)off[1], name_at};
    st->ndims += (size_t)ndim;
    return 0;
}

static int parse_header(amp_safetensors *st, st_json *j) {
    int seen_meta = 0;
    jws(j);
    if (jpeek(j) != '{') {
        char b[16];
        return jfail(j, j->pos, "the header must be a JSON object, found %s", jfound(j, b, sizeof b));
    }
    j->pos++;
    jws(j);
    if (jpeek(j) == '}') {
        j->pos++;
    } else {
        for (int more = 1; more == 1;) {
            char *key;
            size_t at = (jws(j), j->pos);
            if (jstring(j, &key) || jexpect(j, ':')) return -1;
            if (strcmp(key, "__metadata__") == 0) {
                if (seen_meta) return jfail(j, at, "duplicate key \"__metadata__\"");
                seen_meta = 1;
                if (parse_meta(st, j)) return -1;
            } else if (parse_tensor(st, j, key, at)) {
                return -1;
            }
            more = jnext(j);
            if (more < 0) return -1;
        }
    }
    jws(j);
    if (j->pos != j->n) return jfail(j, j->pos, "trailing data after the header object");
    return 0;
}

static int cmp_entry_name(const void *a, const void *b) {
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    return strcmp(x->name, y->name);
}

static int cmp_entry_offset(const void *a, const void *b) {
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x < y ? -1 : x > y; /* same array: header order breaks ties */
}

static int cmp_meta(const void *a, const void *b) {
    return strcmp(((const st_meta *)a)->key, ((const st_meta *)b)->key);
}

/* Duplicate names, and the data layout against the file. */
static int check_layout(amp_safetensors *st, st_json *j) {
    const char *path = st->path;
    char *err = j->err;
    size_t errlen = j->errlen;
    if (st->count) {
        st->by_name = malloc(st->count * sizeof *st->by_name);
        if (!st->by_name) return st_fail(err, errlen, path, "out of memory");
        for (size_t i = 0; i < st->count; i++) st->by_name[i] = &st->t[i];
        qsort(st->by_name, st->count, sizeof *st->by_name, cmp_entry_name);
        for (size_t i = 1; i < st->count; i++)
            if (strcmp(st->by_name[i - 1]->name, st->by_name[i]->name) == 0) {
                const st_entry *e = st->by_name[i - 1]->at > st->by_name[i]->at ? st->by_name[i - 1]
                                                                                 : st->by_name[i];
                return jfail(j, e->at, "duplicate tensor name '%s'", e->name);
            }
    }
    if (st->nmeta) {
        qsort(st->meta, st->nmeta, sizeof *st->meta, cmp_meta);
        for (size_t i = 1; i < st->nmeta; i++)
            if (strcmp(st->meta[i - 1].key, st->meta[i].key) == 0) {
                size_t at = st->meta[i - 1].at > st->meta[i].at ? st->meta[i - 1].at : st->meta[i].at;
                return jfail(j, at, "duplicate __metadata__ key \"%s\"", st->meta[i].key);
            }
    }

    const st_entry **order = NULL;
    if (st->count) {
        order = malloc(st->count * sizeof *order);
        if (!order) return st_fail(err, errlen, path, "out of memory");
        for (size_t i = 0; i < st->count; i++) order[i] = &st->t[i];
        qsort(order, st->count, sizeof *order, cmp_entry_offset);
    }
    uint64_t at = 0;
    const st_entry *prev = NULL;
    int rc = 0;
    for (size_t i = 0; i < st->count && !rc; i++) {
        const st_entry *e = order[i];
        if (e->begin < at)
            rc = st_fail(err, errlen, path,
                         "tensor '%s' data_offsets [%" PRIu64 ", %" PRIu64 "] overlap tensor '%s' [%" PRIu64
                         ", %" PRIu64 "]",
                         e->name, e->begin, e->end, prev->name, prev->begin, prev->end);
        else if (e->begin > at && prev)
            rc = st_fail(err, errlen, path,
                         "gap in the data: tensor '%s' starts at %" PRIu64 " but tensor '%s' ends at %" PRIu64,
                         e->name, e->begin, prev->name, at);
        else if (e->begin > at)
            rc = st_fail(err, errlen, path,
                         "gap in the data: the first tensor '%s' starts at %" PRIu64 ", not 0", e->name,
                         e->begin);
        else if (e->end > st->data_size)
            rc = st_fail(err, errlen, path,
                         "tensor '%s' data_offsets [%" PRIu64 ", %" PRIu64 "] run past the %" PRIu64
                         " data bytes after the header (truncated file?)",
                         e->name, e->begin, e->end, st->data_size);
        at = e->end;
        prev = e;
    }
    free(order);
    if (!rc && at != st->data_size)
        rc = st_fail(err, errlen, path,
                     "the tensors cover %" PRIu64 " bytes but the file holds %" PRIu64
                     " data bytes after the header (trailing bytes)",
                     at, st->data_size);
    return rc;
}

int amp_safetensors_open(amp_safetensors **out, const char *path, char *err, size_t errlen) {
    if (!out || !path) return st_fail(err, errlen, path, "amp_safetensors_open: NULL argument");
    *out = NULL;
    amp_safetensors *st = calloc(1, sizeof *st);
    if (!st) return st_fail(err, errlen, path, "out of memory");
    st->fd = -1;
    st->path = strdup(path);
    if (!st->path) {
        free(st);
        return st_fail(err, errlen, path, "out of memory");
    }
    int rc = -1;
    struct stat sb;
    unsigned char len8[8];
    st->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not hang us */
    if (st->fd < 0) {
        st_fail(err, errlen, path, "cannot open: %s", strerror(errno));
        goto done;
    }
    if (fstat(st->fd, &sb) != 0) {
        st_fail(err, errlen, path, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st_fail(err, errlen, path, "not a regular file");
        goto done;
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (size == 0) {
        st_fail(err, errlen, path, "empty file (0 bytes); a safetensors file starts with an 8-byte header length");
        goto done;
    }
    if (size < 8) {
        st_fail(err, errlen, path, "file is %" PRIu64 " bytes, too short for the 8-byte header length", size);
        goto done;
    }
    if (pread_full(st->fd, len8, 8, 0)) {
        st_fail(err, errlen, path, "cannot read: %s", errno ? strerror(errno) : "file shrank while reading");
        goto done;
    }
    uint64_t n = load_le64(len8);
    if (n > AMP_ST_MAX_HEADER) {
        st_fail(err, errlen, path, "header length %" PRIu64 " exceeds the 100 MB limit (not a safetensors file?)",
                n);
        goto done;
    }
    if (n > size - 8) {
        st_fail(err, errlen, path, "header length %" PRIu64 " exceeds the file size %" PRIu64, n, size);
        goto done;
    }
    if (n < 2) {
        st_fail(err, errlen, path, "header length %" PRIu64 " is too small for a JSON object", n);
        goto done;
    }
    st->header = malloc((size_t)n + 1);
    if (!st->header) {
        st_fail(err, errlen, path, "out of memory for a %" PRIu64 "-byte header", n);
        goto done;
    }
    if (pread_full(st->fd, st->header, (size_t)n, 8)) {
        st_fail(err, errlen, path, "cannot read: %s", errno ? strerror(errno) : "file shrank while reading");
        goto done;
    }
    st->header[n] = '\0';
    st->data_start = 8 + n;
    st->data_size = size - 8 - n;
    st_json j = {st->header, (size_t)n, 0, st->path, err, errlen};
    size_t bad = utf8_check((const unsigned char *)st->header, (size_t)n);
    if (bad != (size_t)n) {
        jfail(&j, bad, "invalid UTF-8");
        goto done;
    }
    if (parse_header(st, &j) || check_layout(st, &j)) goto done;
    rc = 0;
done:
    if (rc) {
        amp_safetensors_close(st);
        return -1;
    }
    *out = st;
    return 0;
}

/* The entry's shape. A file of scalars only never allocates dims, and
 * NULL + 0 is undefined behaviour in C (found by fuzz_safetensors). */
static const int64_t *entry_shape(const amp_safetensors *st, const st_entry *e) {
    static const int64_t no_dims[1];
    return e->ndim ? st->dims + e->dim0 : no_dims;
}

int amp_safetensors_count(const amp_safetensors *st) { return st ? (int)st->count : 0; }

const char *amp_safetensors_name(const amp_safetensors *st, int i) {
    if (!st || i < 0 || (size_t)i >= st->count) return NULL;
    return st->t[i].name;
}

int amp_safetensors_info(const amp_safetensors *st, int i, const char **dtype, int *ndim,
                         const int64_t **shape) {
    if (!st || i < 0 || (size_t)i >= st->count) return -1;
    const st_entry *e = &st->t[i];
    if (dtype) *dtype = st_dtypes[e->dtype].name;
    if (ndim) *ndim = e->ndim;
    if (shape) *shape = entry_shape(st, e);
    return 0;
}

const char *amp_safetensors_meta(const amp_safetensors *st, const char *key) {
    if (!st || !key || !st->nmeta) return NULL;
    st_meta k = {key, NULL, 0};
    const st_meta *m = bsearch(&k, st->meta, st->nmeta, sizeof *st->meta, cmp_meta);
    return m ? m->val : NULL;
}

static const st_entry *find(const amp_safetensors *st, const char *name) {
    if (!st->count) return NULL;
    st_entry k = {0};
    k.name = name;
    const st_entry *kp = &k;
    const st_entry **e = bsearch(&kp, st->by_name, st->count, sizeof *st->by_name, cmp_entry_name);
    return e ? *e : NULL;
}

/* Levenshtein distance, capped: names longer than 255 bytes count as far. */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255 || lb > 255) return (size_t)-1;
    size_t row[256];
    for (size_t x = 0; x <= lb; x++) row[x] = x;
    for (size_t y = 1; y <= la; y++) {
        size_t diag = row[0];
        row[0] = y;
        for (size_t x = 1; x <= lb; x++) {
            size_t up = row[x];
            size_t best = diag + (a[y - 1] != b[x - 1]);
            if (row[x - 1] + 1 < best) best = row[x - 1] + 1;
            if (up + 1 < best) best = up + 1;
            row[x] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int missing(const amp_safetensors *st, const char *name, char *err, size_t errlen) {
    char list[512];
    size_t n = 0;
    list[0] = '\0';
    size_t shown = 0;
    for (; shown < st->count && shown < 6; shown++) {
        int w = snprintf(list + n, sizeof list - n, "%s%s", shown ? ", " : "", st->t[shown].name);
        if (w < 0 || (size_t)w >= sizeof list - n) break;
        n += (size_t)w;
    }
    if (shown < st->count) snprintf(list + n, sizeof list - n, ", ... %zu more", st->count - shown);

    /* A near miss: small edit distance, or the file name has an extra prefix
     * such as "model." (a checkpoint saved from a wrapper module). */
    const char *hint = NULL;
    size_t best = (size_t)-1, limit = strlen(name) / 4 + 1, ln = strlen(name);
    for (size_t i = 0; i < st->count; i++) {
        const char *c = st->t[i].name;
        size_t lc = strlen(c);
        if (lc > ln && c[lc - ln - 1] == '.' && strcmp(c + lc - ln, name) == 0) {
            hint = c; /* beats any typo: the exact name under a prefix */
            break;
        }
        size_t d = edit_distance(name, c);
        if (d <= limit && d < best) {
            best = d;
            hint = c;
        }
    }
    if (hint)
        return st_fail(err, errlen, st->path, "no tensor '%s'; did you mean '%s'? (the file has: %s)", name, hint,
                       list);
    return st_fail(err, errlen, st->path, "no tensor '%s' (the file has: %s)", name,
                   st->count ? list : "no tensors");
}

int amp_safetensors_get_f32(const amp_safetensors *st, const char *name, int ndim, const int64_t *shape,
                            float *dst, char *err, size_t errlen) {
    if (!st || !name || ndim < 0 || (ndim > 0 && !shape))
        return st_fail(err, errlen, st ? st->path : NULL, "amp_safetensors_get_f32: bad arguments");
    const st_entry *e = find(st, name);
    if (!e) return missing(st, name, err, errlen);
    const int64_t *fs = entry_shape(st, e);
    int same = ndim == e->ndim;
    for (int i = 0; same && i < ndim; i++) same = fs[i] == shape[i];
    if (!same) {
        char a[256], b[256];
        shape_format(a, sizeof a, e->ndim, fs);
        shape_format(b, sizeof b, ndim, shape);
        int transposed = ndim == 2 && e->ndim == 2 && fs[0] == shape[1] && fs[1] == shape[0];
        return st_fail(err, errlen, st->path, "'%s' has shape %s but the model expects %s%s", name, a, b,
                       transposed ? " (PyTorch nn.Linear layout [out, in])" : "");
    }
    int dt = e->dtype;
    if (dt != ST_F32 && dt != ST_F16 && dt != ST_BF16 && dt != ST_F64 && dt != ST_I64)
        return st_fail(err, errlen, st->path,
                       "'%s' has dtype %s; only F32, F16, BF16, F64 and I64 load as float32", name,
                       st_dtypes[dt].name);
    size_t el = st_dtypes[dt].bits / 8;
    uint64_t bytes = e->end - e->begin;
    if (bytes && !dst) return st_fail(err, errlen, st->path, "amp_safetensors_get_f32: NULL dst for '%s'", name);

    /* Chunks of whole elements; decoding bytes explicitly keeps this correct
     * on big-endian hosts too. */
    unsigned char buf[1 << 16];
    uint64_t off = st->data_start + e->begin;
    size_t k = 0;
    while (bytes) {
        size_t n = bytes < sizeof buf ? (size_t)bytes : sizeof buf;
        if (pread_full(st->fd, buf, n, off))
            return st_fail(err, errlen, st->path, "reading '%s': %s", name,
                           errno ? strerror(errno) : "the file shrank since it was opened");
        for (size_t i = 0; i < n; i += el, k++) {
            const unsigned char *p = buf + i;
            switch (dt) {
            case ST_F32:
                dst[k] = amp_f32_from_bits((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                                           (uint32_t)p[3] << 24);
                break;
            case ST_F16:
                dst[k] = amp_half_to_float((uint16_t)(p[0] | p[1] << 8));
                break;
            case ST_BF16:
                dst[k] = amp_bf16_to_float((uint16_t)(p[0] | p[1] << 8));
                break;
            case ST_I64: { /* PyTorch's num_batches_tracked: exact up to 2^24 */
                int64_t v = (int64_t)load_le64(p);
                if (v > (1 << 24) || v < -(1 << 24))
                    return st_fail(err, errlen, st->path,
                                   "'%s' holds the integer %lld, which float32 cannot hold exactly",
                                   name, (long long)v);
                dst[k] = (float)v;
                break;
            }
            default: { /* F64 */
                uint64_t u = load_le64(p);
                double d;
                memcpy(&d, &u, sizeof d);
                dst[k] = (float)d;
            }
            }
        }
        bytes -= n;
        off += n;
    }
    return 0;
}

void amp_safetensors_close(amp_safetensors *st) {
    if (!st) return;
    if (st->fd >= 0) close(st->fd);
    free(st->path);
    free(st->header);
    free(st->t);
    free(st->dims);
    free(st->by_name);
    free(st->meta);
    free(st);
}

/* ---- writer --------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} st_buf;

static void sb_put(st_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (grow((void **)&b->p, &b->cap, b->n + n + 1, 1)) {
        b->oom = 1;
        return;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_str(st_buf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void ST_PRINTF(2, 3) sb_printf(st_buf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        b->oom = 1; /* only used for numbers; cannot happen */
        return;
    }
    sb_put(b, tmp, (size_t)n);
}

static void sb_json_string(st_buf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': sb_str(b, "\\\""); break;
        case '\\': sb_str(b, "\\\\"); break;
        case '\n': sb_str(b, "\\n"); break;
        case '\r': sb_str(b, "\\r"); break;
        case '\t': sb_str(b, "\\t"); break;
        case '\b': sb_str(b, "\\b"); break;
        case '\f': sb_str(b, "\\f"); break;
        default:
            if (c < 0x20)
                sb_printf(b, "\\u%04x", c);
            else
                sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names are valid, non-empty UTF-8; returns the first duplicate in *dup. */
static int names_check(const char **names, size_t n, const char **dup) {
    qsort(names, n, sizeof *names, cmp_str_ptr);
    for (size_t i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            *dup = names[i];
            return -1;
        }
    return 0;
}

/* Builds the header JSON, padded with spaces to a multiple of 8 bytes. */
static int header_build(st_buf *h, const char *path, const amp_st_tensor *t, int count,
                        const char *const *kv, char *err, size_t errlen) {
    int nmeta = 0;
    if (kv)
        for (; kv[2 * nmeta]; nmeta++)
            if (!kv[2 * nmeta + 1])
                return st_fail(err, errlen, path, "metadata key '%s' has no value", kv[2 * nmeta]);
    size_t nn = (size_t)(count > nmeta ? count : nmeta);
    const char **names = malloc((nn ? nn : 1) * sizeof *names);
    if (!names) return st_fail(err, errlen, path, "out of memory");
    const char *dup = NULL;
    int rc = 0;
    for (int i = 0; i < nmeta && !rc; i++) {
        for (int s = 0; s < 2 && !rc; s++) {
            const char *x = kv[2 * i + s];
            if (utf8_check((const unsigned char *)x, strlen(x)) != strlen(x))
                rc = st_fail(err, errlen, path, "metadata %s #%d is not valid UTF-8", s ? "value" : "key", i);
        }
        names[i] = kv[2 * i];
    }
    if (!rc && names_check(names, (size_t)nmeta, &dup))
        rc = st_fail(err, errlen, path, "duplicate metadata key '%s'", dup);
    for (int i = 0; i < count && !rc; i++) {
        const char *nm = t[i].name;
        size_t len = nm ? strlen(nm) : 0;
        if (!len)
            rc = st_fail(err, errlen, path, "tensor #%d has no name", i);
        else if (utf8_check((const unsigned char *)nm, len) != len)
            rc = st_fail(err, errlen, path, "tensor #%d: name is not valid UTF-8", i);
        else if (strcmp(nm, "__metadata__") == 0)
            rc = st_fail(err, errlen, path, "tensor #%d: \"__metadata__\" is reserved", i);
        names[i] = nm;
    }
    if (!rc && names_check(names, (size_t)count, &dup))
        rc = st_fail(err, errlen, path, "duplicate tensor name '%s'", dup);
    free(names);
    if (rc) return rc;

    sb_put(h, "{", 1);
    if (nmeta) {
        sb_str(h, "\"__metadata__\":{");
        for (int i = 0; i < nmeta; i++) {
            if (i) sb_put(h, ",", 1);
            sb_json_string(h, kv[2 * i]);
            sb_put(h, ":", 1);
            sb_json_string(h, kv[2 * i + 1]);
        }
        sb_put(h, "}", 1);
    }
    uint64_t off = 0;
    for (int i = 0; i < count; i++) {
        const amp_st_tensor *x = &t[i];
        if (x->ndim < 0 || x->ndim > 4)
            return st_fail(err, errlen, path, "tensor '%s': ndim %d is not in 0..4", x->name, x->ndim);
        uint64_t bytes = 4;
        for (int d = 0; d < x->ndim; d++) {
            if (x->shape[d] < 0)
                return st_fail(err, errlen, path, "tensor '%s': dimension %d is negative (%" PRId64 ")", x->name,
                               d, x->shape[d]);
            if (__builtin_mul_overflow(bytes, (uint64_t)x->shape[d], &bytes))
                return st_fail(err, errlen, path, "tensor '%s': shape overflows", x->name);
        }
        if (bytes && !x->data) return st_fail(err, errlen, path, "tensor '%s': NULL data", x->name);
        if (nmeta || i) sb_put(h, ",", 1);
        sb_json_string(h, x->name);
        sb_str(h, ":{\"dtype\":\"F32\",\"shape\":[");
        for (int d = 0; d < x->ndim; d++) sb_printf(h, "%s%" PRId64, d ? "," : "", x->shape[d]);
        uint64_t end;
        if (__builtin_add_overflow(off, bytes, &end))
            return st_fail(err, errlen, path, "total data size overflows");
        sb_printf(h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, end);
        off = end;
    }
    sb_put(h, "}", 1);
    while (!h->oom && h->n % 8) sb_put(h, " ", 1); /* the data then starts 8-byte aligned */
    if (h->oom) return st_fail(err, errlen, path, "out of memory");
    if (h->n > AMP_ST_MAX_HEADER) return st_fail(err, errlen, path, "header exceeds the 100 MB limit");
    return 0;
}

static int tensors_write(int fd, const amp_st_tensor *t, int count) {
    unsigned char buf[1 << 16];
    for (int i = 0; i < count; i++) {
        size_t numel = 1;
        for (int d = 0; d < t[i].ndim; d++) numel *= (size_t)t[i].shape[d];
        size_t k = 0;
        while (k < numel) {
            size_t n = 0;
            for (; k < numel && n + 4 <= sizeof buf; k++, n += 4) {
                uint32_t u = amp_f32_bits(t[i].data[k]);
                buf[n] = (unsigned char)u;
                buf[n + 1] = (unsigned char)(u >> 8);
                buf[n + 2] = (unsigned char)(u >> 16);
                buf[n + 3] = (unsigned char)(u >> 24);
            }
            if (amp_write_full(fd, buf, n)) return -1;
        }
    }
    return 0;
}

/* Makes the rename durable. Best effort: the file is already in place, and
 * some filesystems refuse fsync on directories. */
static void dir_sync(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int amp_safetensors_write(const char *path, const amp_st_tensor *tensors, int count, const char *const *meta_kv,
                          char *err, size_t errlen) {
    if (!path || count < 0 || (count && !tensors))
        return st_fail(err, errlen, path, "amp_safetensors_write: bad arguments");
    st_buf h = {0};
    if (header_build(&h, path, tensors, count, meta_kv, err, errlen)) {
        free(h.p);
        return -1;
    }
    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) {
        free(h.p);
        return st_fail(err, errlen, path, "out of memory");
    }

    int rc = -1, created = 0;
    /* A unique name (mkstemp), registered so a stop at once removes it too. */
    int fd = amp_tmp_create(path, tmp, tl, err, errlen);
    created = fd >= 0;
    if (fd < 0) goto done;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    if (amp_write_full(fd, len8, 8) || amp_write_full(fd, h.p, h.n) || tensors_write(fd, tensors, count)) {
        st_fail(err, errlen, path, "writing %s: %s", tmp, strerror(errno));
        goto done;
    }
    if (fsync(fd) != 0) {
        st_fail(err, errlen, path, "fsync %s: %s", tmp, strerror(errno));
        goto done;
    }
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) {
        st_fail(err, errlen, path, "closing %s: %s", tmp, strerror(errno));
        goto done;
    }
    if (rename(tmp, path) != 0) {
        st_fail(err, errlen, path, "cannot rename %s over it: %s", tmp, strerror(errno));
        goto done;
    }
    amp_tmp_forget(tmp);
    dir_sync(path);
    rc = 0;
done:
    if (fd >= 0) close(fd);
    if (rc && created) { /* never leave a partial file behind */
        unlink(tmp);
        amp_tmp_forget(tmp);
    }
    free(tmp);
    free(h.p);
    return rc;
}
