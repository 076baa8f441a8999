/* Hugging Face safetensors reader and writer (see safetensors.h).
 *
 * What amp_safetensors_open checks, in order, each failure naming the file:
 *   - the path is a regular file (io/file.h: no FIFO, device or directory is
 *     ever read), of at least 8 bytes;
 *   - header length N <= 100 MB and 8 + N <= file size;
 *   - the header is strict JSON, parsed by jansson (libjansson-dev): valid
 *     UTF-8, no duplicate key at any depth (JSON_REJECT_DUPLICATES), no
 *     \u0000, no trailing bytes but whitespace (the writer's space padding).
 *     Syntax errors give the file offset, line and column;
 *   - its shape is exactly the format's: an object of tensor objects
 *     {"dtype": string, "shape": [ints], "data_offsets": [int, int]} plus an
 *     optional "__metadata__" object of string -> string. No fractions,
 *     booleans, nulls or unknown keys;
 *   - each dtype is known, shape entries are non-negative, product(shape) *
 *     dtype size (no overflow) == end - begin;
 *   - sorted by offset, the tensors start at 0, touch without gaps or overlap,
 *     and end exactly at the end of the file.
 * Names and metadata are C strings inside the parsed jansson tree, which
 * lives until amp_safetensors_close.
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

#include <jansson.h>

#include "backend/kernels/convert.h"
#include "io/file.h"
#include "util/out_file.h"

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

static uint64_t load_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---- the open file ---------------------------------------------------------- */

typedef struct {
    const char *name; /* a key of the header object: lives as long as st->root */
    int dtype;
    int ndim;
    size_t dim0;        /* first dimension in amp_safetensors.dims */
    uint64_t begin, end; /* relative to the data buffer */
} st_entry;

typedef struct {
    const char *key, *val; /* in st->root */
} st_meta;

struct amp_safetensors {
    char *path;
    int fd;
    json_t *root; /* the parsed header; names and metadata point into it */
    uint64_t data_start, data_size;
    st_entry *t;
    size_t count, cap;
    int64_t *dims;
    size_t ndims, capdims;
    const st_entry **by_name; /* sorted by name, for lookup */
    st_meta *meta;            /* sorted by key */
    size_t nmeta, capmeta;
};

/* ---- the header: JSON through jansson, then its shape ------------------- */

/* "path: header: tensor 'x': <fmt>" for errors in what the JSON says. */
static int ST_PRINTF(4, 5) hfail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
    if (err && errlen) {
        int n = snprintf(err, errlen, "%s: header: ", path);
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

static const char *json_kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a fraction";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* [int, ...] with at most max entries, each >= 0. */
static int int_array(const amp_safetensors *st, const json_t *a, int64_t *vals, int max, int *count,
                     const char *tname, const char *what, char *err, size_t errlen) {
    if (!json_is_array(a))
        return hfail(err, errlen, st->path, "tensor '%s': \"%s\" is %s, not an array of integers",
                     tname, what, json_kind(a));
    size_t n = json_array_size(a);
    if (n > (size_t)max)
        return hfail(err, errlen, st->path, "tensor '%s': \"%s\" has more than %d entries", tname,
                     what, max);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_integer(v))
            return hfail(err, errlen, st->path,
                         "tensor '%s': %s entry %zu is %s; only integers are allowed here", tname,
                         what, i, json_kind(v));
        json_int_t x = json_integer_value(v);
        if (x < 0)
            return hfail(err, errlen, st->path, "tensor '%s': %s entry %" PRId64 " is negative",
                         tname, what, (int64_t)x);
        vals[i] = (int64_t)x;
    }
    *count = (int)n;
    return 0;
}

static int parse_meta(amp_safetensors *st, const json_t *m, char *err, size_t errlen) {
    if (!json_is_object(m))
        return hfail(err, errlen, st->path, "__metadata__ is %s, not an object of strings",
                     json_kind(m));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) {
        if (!json_is_string(v))
            return hfail(err, errlen, st->path, "__metadata__ \"%s\" is %s; values must be strings",
                         k, json_kind(v));
        if (grow((void **)&st->meta, &st->capmeta, st->nmeta + 1, sizeof *st->meta))
            return st_fail(err, errlen, st->path, "out of memory");
        st->meta[st->nmeta++] = (st_meta){k, json_string_value(v)};
    }
    return 0;
}

static int parse_tensor(amp_safetensors *st, const char *name, const json_t *o, char *err,
                        size_t errlen) {
    if (!json_is_object(o))
        return hfail(err, errlen, st->path, "tensor '%s' is %s, not an object", name, json_kind(o));
    if (!json_object_size(o)) return hfail(err, errlen, st->path, "tensor '%s' is an empty object", name);
    int64_t shape[AMP_ST_MAX_RANK], off[3];
    int ndim = 0, noff = 0, dt = -1;
    const json_t *dtype = NULL, *jshape = NULL, *joff = NULL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        if (strcmp(k, "dtype") == 0)
            dtype = v;
        else if (strcmp(k, "shape") == 0)
            jshape = v;
        else if (strcmp(k, "data_offsets") == 0)
            joff = v;
        else
            return hfail(err, errlen, st->path,
                         "tensor '%s': unknown key \"%s\" (expected dtype, shape, data_offsets)",
                         name, k);
    }
    if (!dtype || !jshape || !joff)
        return hfail(err, errlen, st->path, "tensor '%s' has no \"%s\"", name,
                     !dtype ? "dtype" : !jshape ? "shape" : "data_offsets");
    if (!json_is_string(dtype))
        return hfail(err, errlen, st->path, "tensor '%s': dtype is %s, not a string", name,
                     json_kind(dtype));
    dt = dtype_find(json_string_value(dtype));
    if (dt < 0)
        return hfail(err, errlen, st->path,
                     "tensor '%s': unknown dtype \"%s\" (known: F64 F32 F16 BF16 I64 I32 I16 I8 "
                     "U64 U32 U16 U8 BOOL F8_* F6_* F4 C64)",
                     name, json_string_value(dtype));
    if (int_array(st, jshape, shape, AMP_ST_MAX_RANK, &ndim, name, "shape", err, errlen) ||
        int_array(st, joff, off, 3, &noff, name, "data_offsets", err, errlen))
        return -1;
    if (noff != 2)
        return hfail(err, errlen, st->path,
                     "tensor '%s': data_offsets has %d entries, not 2 [begin, end]", name, noff);
    if (off[1] < off[0])
        return hfail(err, errlen, st->path,
                     "tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] end before they begin",
                     name, off[0], off[1]);

    /* Size check with overflow: bytes = product(shape) * bits / 8. */
    uint64_t numel = 1, bits;
    char sh[256];
    shape_format(sh, sizeof sh, ndim, shape);
    for (int i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(numel, (uint64_t)shape[i], &numel))
            return hfail(err, errlen, st->path, "tensor '%s': shape %s overflows", name, sh);
    if (__builtin_mul_overflow(numel, (uint64_t)st_dtypes[dt].bits, &bits))
        return hfail(err, errlen, st->path, "tensor '%s': shape %s overflows", name, sh);
    if (bits % 8)
        return hfail(err, errlen, st->path,
                     "tensor '%s': %" PRIu64 " elements of %s are not a whole number of bytes",
                     name, numel, st_dtypes[dt].name);
    uint64_t span = (uint64_t)off[1] - (uint64_t)off[0];
    if (bits / 8 != span)
        return hfail(err, errlen, st->path,
                     "tensor '%s': shape %s of %s needs %" PRIu64 " bytes but data_offsets [%" PRId64
                     ", %" PRId64 "] span %" PRIu64,
                     name, sh, st_dtypes[dt].name, bits / 8, off[0], off[1], span);

    if (grow((void **)&st->t, &st->cap, st->count + 1, sizeof *st->t) ||
        grow((void **)&st->dims, &st->capdims, st->ndims + (size_t)ndim, sizeof *st->dims))
        return st_fail(err, errlen, st->path, "out of memory");
    if (ndim) memcpy(st->dims + st->ndims, shape, (size_t)ndim * sizeof *shape);
    st->t[st->count++] = (st_entry){name, dt, ndim, st->ndims, (uint64_t)off[0], (uint64_t)off[1]};
    st->ndims += (size_t)ndim;
    return 0;
}

/* The header text (n bytes) through jansson: strict JSON, valid UTF-8, no
 * duplicate key at any depth, no \u0000, nothing after the object but
 * whitespace (the writer's space padding). Syntax errors give the file
 * offset, line and column. */
static int parse_header(amp_safetensors *st, const char *text, size_t n, char *err, size_t errlen) {
    json_error_t je;
    st->root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
    if (!st->root)
        return st_fail(err, errlen, st->path, "header, byte %d (line %d, column %d): %s",
                       je.position + 8, je.line, je.column, je.text);
    if (!json_is_object(st->root))
        return hfail(err, errlen, st->path, "must be a JSON object, found %s",
                     json_kind(st->root));
    const char *k;
    json_t *v;
    json_object_foreach(st->root, k, v) {
        int rc = strcmp(k, "__metadata__") == 0 ? parse_meta(st, v, err, errlen)
                                                : parse_tensor(st, k, v, err, errlen);
        if (rc) return -1;
    }
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

/* The lookup tables, and the data layout against the file. Names are unique
 * already: jansson refuses a duplicate key. */
static int check_layout(amp_safetensors *st, char *err, size_t errlen) {
    const char *path = st->path;
    if (st->count) {
        st->by_name = malloc(st->count * sizeof *st->by_name);
        if (!st->by_name) return st_fail(err, errlen, path, "out of memory");
        for (size_t i = 0; i < st->count; i++) st->by_name[i] = &st->t[i];
        qsort(st->by_name, st->count, sizeof *st->by_name, cmp_entry_name);
    }
    if (st->nmeta) qsort(st->meta, st->nmeta, sizeof *st->meta, cmp_meta);

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
    char *header = NULL;
    struct stat sb;
    unsigned char len8[8];
    /* Regular files only, opened without blocking (a FIFO must not hang us). */
    st->fd = amp_file_open_read(path, &sb, err, errlen);
    if (st->fd < 0) goto done;
    uint64_t size = (uint64_t)sb.st_size;
    if (size == 0) {
        st_fail(err, errlen, path, "empty file (0 bytes); a safetensors file starts with an 8-byte header length");
        goto done;
    }
    if (size < 8) {
        st_fail(err, errlen, path, "file is %" PRIu64 " bytes, too short for the 8-byte header length", size);
        goto done;
    }
    if (amp_file_pread_full(st->fd, len8, 8, 0)) {
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
    header = malloc((size_t)n + 1);
    if (!header) {
        st_fail(err, errlen, path, "out of memory for a %" PRIu64 "-byte header", n);
        goto done;
    }
    if (amp_file_pread_full(st->fd, header, (size_t)n, 8)) {
        st_fail(err, errlen, path, "cannot read: %s", errno ? strerror(errno) : "file shrank while reading");
        goto done;
    }
    header[n] = '\0';
    st->data_start = 8 + n;
    st->data_size = size - 8 - n;
    if (parse_header(st, header, (size_t)n, err, errlen) || check_layout(st, err, errlen)) goto done;
    rc = 0;
done:
    free(header);
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
    st_meta k = {key, NULL};
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
        if (amp_file_pread_full(st->fd, buf, n, off))
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
    json_decref(st->root);
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
