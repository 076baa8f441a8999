#include "io/checkpoint.h"
#include "io/le_bytes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util/log.h"

static const char ckpt_magic[8] = {'A', 'M', 'P', 'C', 'K', 'P', 'T', '\0'};

/* The sections of format versions 1 and 2, each at most once. Those before
 * S_OPTIONAL are required. METR (metrics lines) was required and held every
 * line so far; it is optional now and holds only lines metrics.jsonl could
 * not take, beside MPOS (the length and CRC of metrics.jsonl's history at
 * this checkpoint). A file with METR and no MPOS is read as before: METR is
 * the whole history. EXEC (where the run executed) is optional too: files
 * written before it lack it. DIST (u32: the number of data-parallel ranks
 * that wrote it) is optional on reading (a file without it was written by one
 * process; world size 1) and always written. DATA (the data's fingerprint)
 * is optional: files written before it lack it. SCLD (the scaled GEMM
 * operands' scales and amax histories) is there when the run had any. */
enum { S_META, S_CONF, S_MAST, S_OPTM, S_SCAL, S_TOTL, S_LOSS, S_METR, S_MPOS, S_EXEC, S_DIST,
       S_DATA, S_SCLD, S_COUNT };
#define S_OPTIONAL S_METR
static const char section_tags[S_COUNT][5] = {"META", "CONF", "MAST", "OPTM", "SCAL",
                                              "TOTL", "LOSS", "METR", "MPOS", "EXEC", "DIST",
                                              "DATA", "SCLD"};
#define MPOS_SIZE 16u /* u64 byte length, u32 CRC32, u32 zero */
#define AMP_CKPT_MAX_WORLD (1u << 24)

/* Dimensions are capped, and element counts are summed with a cap, so that
 * sizes computed from them cannot overflow 64 bits. */
#define DIM_MAX (1u << 24)
#define NUMEL_MAX (1ull << 40)

/* zlib's crc32 takes a 32-bit length: feed large buffers in pieces. */
static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt piece = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, piece);
        p += piece;
        n -= piece;
    }
    return (uint32_t)c;
}

float amp_ckpt_f32(const uint8_t *p, size_t index) {
    uint32_t u = amp_le_u32(p + 4 * index);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
double amp_ckpt_f64(const uint8_t *p, size_t index) {
    uint64_t u = amp_le_u64(p + 8 * index);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
void amp_ckpt_put_f32(uint8_t *p, size_t index, float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    amp_le_put_u32(p + 4 * index, u);
}
void amp_ckpt_put_f64(uint8_t *p, size_t index, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    amp_le_put_u64(p + 8 * index, u);
}

/* ------------------------------------------------------------------ reader */

/* A bounded cursor over one section: every read checks what is left. */
typedef struct reader {
    const uint8_t *p;
    size_t left;
    int bad;
} reader;

static const uint8_t *take(reader *r, size_t n) {
    if (r->bad || n > r->left) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    r->left -= n;
    return at;
}
static uint32_t rd_u32(reader *r) {
    const uint8_t *p = take(r, 4);
    return p ? amp_le_u32(p) : 0;
}
static uint64_t rd_u64(reader *r) {
    const uint8_t *p = take(r, 8);
    return p ? amp_le_u64(p) : 0;
}
static int64_t rd_i64(reader *r) { return (int64_t)rd_u64(r); }
static double rd_f64(reader *r) {
    uint64_t u = rd_u64(r);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
/* A printable-ASCII string of at most cap - 1 bytes. */
static void rd_strn(reader *r, char *out, size_t cap) {
    out[0] = '\0';
    uint32_t n = rd_u32(r);
    if (n >= cap) {
        r->bad = 1;
        return;
    }
    const uint8_t *p = take(r, n);
    if (!p) return;
    for (uint32_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] > 0x7e) {
            r->bad = 1;
            return;
        }
    memcpy(out, p, n);
    out[n] = '\0';
}
static void rd_str(reader *r, char out[AMP_CKPT_NAME_MAX]) { rd_strn(r, out, AMP_CKPT_NAME_MAX); }

/* One parameter-table entry (format 2): name, layer, ndim, shape. */
static void rd_param(reader *r, amp_ckpt_param *P) {
    memset(P, 0, sizeof *P);
    rd_strn(r, P->name, sizeof P->name);
    P->layer = rd_u32(r);
    P->ndim = rd_u32(r);
    if (P->ndim > AMP_CKPT_MAX_DIMS) { /* 0 is a scalar (num_batches_tracked) */
        r->bad = 1;
        return;
    }
    for (uint32_t d = 0; d < P->ndim; d++) P->shape[d] = rd_u64(r);
}

/* Format 1's layers (name, in, out), checked to chain in_features -> ...
 * -> classes; the table they stand for is checked like format 2's. */
static int parse_v1_layers(reader *r, amp_checkpoint *ck, uint64_t *numel, char *err,
                           size_t errlen) {
    uint32_t in_features = rd_u32(r), classes = rd_u32(r);
    ck->nlayers = rd_u32(r);
    if (r->bad || ck->nlayers < 1 || ck->nlayers > 16) {
        amp_set_err(err, errlen, "section META: %s", r->bad ? "too short" : "layer count out of range");
        return -1;
    }
    ck->params_raw = r->p;
    uint32_t prev = in_features;
    for (uint32_t l = 0; l < ck->nlayers; l++) {
        char name[AMP_CKPT_NAME_MAX];
        rd_str(r, name);
        uint32_t in = rd_u32(r), out = rd_u32(r);
        if (!r->bad && (in != prev || in < 1 || in > DIM_MAX || out < 1 || out > DIM_MAX)) {
            amp_set_err(err, errlen, "section META: layer %u has shape %ux%u after width %u",
                        (unsigned)l + 1, (unsigned)out, (unsigned)in, (unsigned)prev);
            return -1;
        }
        *numel += (uint64_t)in * out + out;
        prev = out;
    }
    ck->params_raw_len = (size_t)(r->p - ck->params_raw);
    ck->nparam_tensors = 2 * ck->nlayers;
    snprintf(ck->model, sizeof ck->model, "mlp");
    if (!r->bad && (prev != classes || classes < 2)) {
        amp_set_err(err, errlen, "section META: the layers end at %u outputs, the header says %u classes",
                    (unsigned)prev, (unsigned)classes);
        return -1;
    }
    return 0;
}

/* Format 2's parameter table: names unique in order, layers in range,
 * dimensions in [1, DIM_MAX]. */
static int parse_v2_table(reader *r, amp_checkpoint *ck, uint64_t *numel, char *err,
                          size_t errlen) {
    rd_str(r, ck->model);
    ck->nlayers = rd_u32(r);
    ck->nparam_tensors = rd_u32(r);
    if (r->bad || ck->nlayers < 1 || ck->nlayers > AMP_CKPT_MAX_LAYERS || ck->nparam_tensors < 1 ||
        ck->nparam_tensors > AMP_CKPT_MAX_TENSORS || ck->model[0] == '\0') {
        amp_set_err(err, errlen, "section META: %s", r->bad ? "too short" : "model name, layer or tensor count out of range");
        return -1;
    }
    ck->params_raw = r->p;
    for (uint32_t i = 0; i < ck->nparam_tensors && !r->bad; i++) {
        amp_ckpt_param P;
        rd_param(r, &P);
        if (r->bad) break;
        int ok = P.name[0] != '\0' && P.layer < ck->nlayers;
        uint64_t n = 1;
        for (uint32_t d = 0; d < P.ndim; d++) {
            ok &= P.shape[d] >= 1 && P.shape[d] <= DIM_MAX && n <= NUMEL_MAX;
            if (ok) n *= P.shape[d];
        }
        ok &= n <= NUMEL_MAX && *numel <= NUMEL_MAX;
        *numel += n;
        if (!ok) {
            amp_set_err(err, errlen, "section META: parameter %u ('%s') has a bad layer or shape",
                        (unsigned)i, P.name);
            return -1;
        }
    }
    ck->params_raw_len = (size_t)(r->p - ck->params_raw);
    return 0;
}

static int parse_meta(const uint8_t *p, size_t n, uint32_t version, amp_checkpoint *ck, char *err,
                      size_t errlen) {
    reader r = {p, n, 0};
    ck->format = version;
    rd_str(&r, ck->amptrain_version);
    ck->abi_major = rd_u32(&r);
    ck->abi_minor = rd_u32(&r);
    ck->step = rd_i64(&r);
    ck->applied = rd_i64(&r);
    ck->skipped = rd_i64(&r);
    ck->epoch = rd_i64(&r);
    ck->cursor = rd_i64(&r);
    ck->total_steps = rd_i64(&r);
    ck->seed = rd_u64(&r);
    ck->train_examples = rd_i64(&r);
    ck->optim = rd_u32(&r);
    ck->opt_buffers = rd_u32(&r);
    uint64_t params = 0;
    if ((version == 1 ? parse_v1_layers : parse_v2_table)(&r, ck, &params, err, errlen) != 0)
        return -1;
    ck->nparams = rd_u64(&r);
    rd_str(&r, ck->precision);
    rd_str(&r, ck->precision_version);
    rd_str(&r, ck->scaler);
    rd_str(&r, ck->scaler_version);
    ck->wall_seconds = rd_f64(&r);
    ck->device_peak = rd_u64(&r);
    if (r.bad || r.left != 0) {
        amp_set_err(err, errlen, "section META: %s", r.bad ? "too short or a bad string" : "trailing bytes");
        return -1;
    }
    /* Counters must describe a reachable state. */
    if (ck->step < 0 || ck->applied < 0 || ck->skipped < 0 || ck->applied > ck->step ||
        ck->skipped != ck->step - ck->applied || ck->total_steps < ck->step || ck->epoch < 0 ||
        ck->train_examples < 1 || ck->cursor < 0 || ck->cursor > ck->train_examples) {
        amp_set_err(err, errlen, "section META: inconsistent counters (step %lld, applied %lld, "
                             "skipped %lld, epoch %lld, cursor %lld)",
                (long long)ck->step, (long long)ck->applied, (long long)ck->skipped,
                (long long)ck->epoch, (long long)ck->cursor);
        return -1;
    }
    if (ck->optim > 1 || ck->opt_buffers > 2) {
        amp_set_err(err, errlen, "section META: unknown optimizer %u with %u state arrays",
                (unsigned)ck->optim, (unsigned)ck->opt_buffers);
        return -1;
    }
    /* The table's element count must be the header's. */
    if (params != ck->nparams) {
        amp_set_err(err, errlen, "section META: the parameter table gives %llu parameters, the "
                             "header says %llu",
                (unsigned long long)params, (unsigned long long)ck->nparams);
        return -1;
    }
    return 0;
}

int amp_checkpoint_param(const amp_checkpoint *ck, uint32_t i, amp_ckpt_param *out) {
    memset(out, 0, sizeof *out);
    if (i >= ck->nparam_tensors) return -1;
    if (ck->params) {
        *out = ck->params[i];
        return 0;
    }
    reader r = {ck->params_raw, ck->params_raw_len, 0};
    if (ck->format == 1) { /* (name, in, out) per layer: weight, then bias */
        uint32_t in = 0, o = 0;
        char name[AMP_CKPT_NAME_MAX];
        for (uint32_t l = 0; l <= i / 2; l++) {
            rd_str(&r, name);
            in = rd_u32(&r);
            o = rd_u32(&r);
        }
        snprintf(out->name, sizeof out->name, "%s.%s", name, i % 2 ? "bias" : "weight");
        out->layer = i / 2;
        out->ndim = i % 2 ? 1 : 2;
        out->shape[0] = o;
        out->shape[1] = i % 2 ? 0 : in;
        return r.bad ? -1 : 0;
    }
    for (uint32_t k = 0; k <= i; k++) rd_param(&r, out);
    return r.bad ? -1 : 0;
}

amp_round_count amp_checkpoint_total(const amp_checkpoint *ck, uint32_t i) {
    amp_round_count c = {0, 0, 0};
    if (i >= 2 * ck->nlayers) return c;
    if (ck->totals) return ck->totals[i];
    const uint8_t *t = ck->totals_raw + (size_t)i * 24;
    c.underflow = amp_le_u64(t);
    c.overflow = amp_le_u64(t + 8);
    c.nonzero = amp_le_u64(t + 16);
    return c;
}

static int no_nul(const uint8_t *p, size_t n) { return n == 0 || memchr(p, '\0', n) == NULL; }

int amp_checkpoint_check_head(const uint8_t *head, size_t n, uint64_t file_size, char *err,
                              size_t errlen) {
    if (!head || n < AMP_CKPT_HEADER_SIZE) {
        amp_set_err(err, errlen, "truncated: %llu bytes, shorter than the %u-byte header",
                    (unsigned long long)file_size, AMP_CKPT_HEADER_SIZE);
        return -1;
    }
    if (memcmp(head, ckpt_magic, sizeof ckpt_magic) != 0) {
        amp_set_err(err, errlen, "not an amptrain checkpoint (bad magic)");
        return -1;
    }
    uint32_t version = amp_le_u32(head + 8), count = amp_le_u32(head + 12);
    uint64_t size = amp_le_u64(head + 16);
    if (version < 1 || version > AMP_CKPT_FORMAT_VERSION) {
        amp_set_err(err, errlen, "format version %u; this amptrain reads versions 1 to %u (a newer "
                    "amptrain wrote it: resume with that one)", (unsigned)version,
                AMP_CKPT_FORMAT_VERSION);
        return -1;
    }
    if (size != file_size) {
        amp_set_err(err, errlen, size > file_size ? "truncated: %llu of %llu bytes"
                                        : "%llu bytes, but the header says %llu (junk appended?)",
                (unsigned long long)file_size, (unsigned long long)size);
        return -1;
    }
    if (count < 1 || count > AMP_CKPT_MAX_SECTIONS) {
        amp_set_err(err, errlen, "header: %u sections (expected 1..%u)", (unsigned)count,
                AMP_CKPT_MAX_SECTIONS);
        return -1;
    }
    size_t table_end = AMP_CKPT_HEADER_SIZE + (size_t)count * AMP_CKPT_ENTRY_SIZE;
    if (table_end > file_size || table_end > n) {
        amp_set_err(err, errlen, "truncated: the section table ends past the file");
        return -1;
    }
    /* Header CRC: bytes 0..23, then the table. */
    uLong c = crc32(0L, head, 24);
    c = crc32(c, head + AMP_CKPT_HEADER_SIZE, (uInt)(table_end - AMP_CKPT_HEADER_SIZE));
    if ((uint32_t)c != amp_le_u32(head + 24) || amp_le_u32(head + 28) != 0) {
        amp_set_err(err, errlen, "header: CRC mismatch (the file is damaged)");
        return -1;
    }
    return 0;
}

int amp_checkpoint_parse(const uint8_t *buf, size_t len, amp_checkpoint *out, char *err,
                         size_t errlen) {
    memset(out, 0, sizeof *out);
    if (amp_checkpoint_check_head(buf, len, len, err, errlen) != 0) return -1;
    uint32_t version = amp_le_u32(buf + 8), count = amp_le_u32(buf + 12);
    size_t table_end = AMP_CKPT_HEADER_SIZE + (size_t)count * AMP_CKPT_ENTRY_SIZE;
    const uint8_t *sec[S_COUNT] = {0};
    size_t seclen[S_COUNT] = {0};
    int seen[S_COUNT] = {0};
    uint64_t expect_off = table_end; /* payloads are contiguous, in table order */
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *e = buf + AMP_CKPT_HEADER_SIZE + (size_t)i * AMP_CKPT_ENTRY_SIZE;
        char tag[5];
        memcpy(tag, e, 4);
        tag[4] = '\0';
        for (int k = 0; k < 4; k++)
            if (tag[k] < 'A' || tag[k] > 'Z') tag[k] = '?';
        uint32_t crc = amp_le_u32(e + 4);
        uint64_t off = amp_le_u64(e + 8), n = amp_le_u64(e + 16);
        if (off != expect_off || n > len - off) {
            amp_set_err(err, errlen, "section %s: offset %llu + length %llu does not fit the %zu-byte "
                                 "file",
                    tag, (unsigned long long)off, (unsigned long long)n, len);
            return -1;
        }
        expect_off = off + n;
        if (crc32_of(buf + off, (size_t)n) != crc) {
            amp_set_err(err, errlen, "section %s: CRC mismatch (the file is damaged)", tag);
            return -1;
        }
        for (int k = 0; k < S_COUNT; k++) {
            if (memcmp(e, section_tags[k], 4) != 0) continue;
            if (seen[k]) {
                amp_set_err(err, errlen, "section %s appears twice", tag);
                return -1;
            }
            seen[k] = 1;
            sec[k] = buf + off;
            seclen[k] = (size_t)n;
        }
    }
    if (expect_off != len) {
        amp_set_err(err, errlen, "%llu bytes after the last section", (unsigned long long)(len - expect_off));
        return -1;
    }
    for (int k = 0; k < S_OPTIONAL; k++)
        if (!seen[k]) {
            amp_set_err(err, errlen, "section %s is missing", section_tags[k]);
            return -1;
        }
    if (parse_meta(sec[S_META], seclen[S_META], version, out, err, errlen) != 0) return -1;

    if (seclen[S_MAST] != out->nparams * 4) {
        amp_set_err(err, errlen, "section MAST: %zu bytes for %llu parameters", seclen[S_MAST],
                (unsigned long long)out->nparams);
        return -1;
    }
    if (seclen[S_OPTM] != out->nparams * 4 * out->opt_buffers) {
        amp_set_err(err, errlen, "section OPTM: %zu bytes for %u arrays of %llu", seclen[S_OPTM],
                (unsigned)out->opt_buffers, (unsigned long long)out->nparams);
        return -1;
    }
    if (seclen[S_TOTL] != (size_t)out->nlayers * 2 * 3 * 8) { /* nlayers <= 2^20: no overflow */
        amp_set_err(err, errlen, "section TOTL: %zu bytes for %u layers", seclen[S_TOTL],
                (unsigned)out->nlayers);
        return -1;
    }
    size_t nloss = seclen[S_LOSS] / 8;
    if (seclen[S_LOSS] % 8 != 0 || nloss > AMP_CKPT_MAX_LOSSES || (int64_t)nloss > out->step) {
        amp_set_err(err, errlen, "section LOSS: %zu bytes at step %lld", seclen[S_LOSS],
                (long long)out->step);
        return -1;
    }
    if (seen[S_MPOS] && (seclen[S_MPOS] != MPOS_SIZE || amp_le_u32(sec[S_MPOS] + 12) != 0)) {
        amp_set_err(err, errlen, "section MPOS: %zu bytes (expected %u with a zero last word)",
                seclen[S_MPOS], MPOS_SIZE);
        return -1;
    }
    if (!no_nul(sec[S_CONF], seclen[S_CONF]) || (seen[S_METR] && !no_nul(sec[S_METR], seclen[S_METR])) ||
        (seen[S_EXEC] && !no_nul(sec[S_EXEC], seclen[S_EXEC])) ||
        (seen[S_DATA] && !no_nul(sec[S_DATA], seclen[S_DATA]))) {
        amp_set_err(err, errlen, "section %s holds a NUL byte",
                !no_nul(sec[S_CONF], seclen[S_CONF])                     ? "CONF"
                : seen[S_METR] && !no_nul(sec[S_METR], seclen[S_METR]) ? "METR"
                : seen[S_EXEC] && !no_nul(sec[S_EXEC], seclen[S_EXEC]) ? "EXEC"
                                                                        : "DATA");
        return -1;
    }
    out->world_size = 1;
    if (seen[S_DIST]) {
        out->world_size = seclen[S_DIST] == 4 ? amp_le_u32(sec[S_DIST]) : 0;
        if (out->world_size < 1 || out->world_size > AMP_CKPT_MAX_WORLD) {
            amp_set_err(err, errlen, "section DIST: %zu bytes, world size %u (expected 4 bytes, 1..%u)",
                        seclen[S_DIST], (unsigned)out->world_size, AMP_CKPT_MAX_WORLD);
            return -1;
        }
    }
    out->totals_raw = sec[S_TOTL];
    out->config = (const char *)sec[S_CONF];
    out->config_len = seclen[S_CONF];
    out->master = sec[S_MAST];
    out->master_len = seclen[S_MAST];
    out->optim_state = sec[S_OPTM];
    out->optim_len = seclen[S_OPTM];
    out->scaler_state = sec[S_SCAL];
    out->scaler_len = seclen[S_SCAL];
    out->losses = sec[S_LOSS];
    out->nlosses = nloss;
    out->metrics = (const char *)sec[S_METR];
    out->metrics_len = seclen[S_METR];
    out->exec = (const char *)sec[S_EXEC];
    out->exec_len = seclen[S_EXEC];
    out->data_id = (const char *)sec[S_DATA];
    out->data_id_len = seclen[S_DATA];
    out->scaled_state = sec[S_SCLD];
    out->scaled_len = seclen[S_SCLD];
    if (seen[S_MPOS]) {
        out->has_metrics_pos = 1;
        out->metrics_pos = amp_le_u64(sec[S_MPOS]);
        out->metrics_crc = amp_le_u32(sec[S_MPOS] + 8);
    }
    return 0;
}

/* ------------------------------------------------------------------ writer */

typedef struct builder {
    uint8_t *p;
    size_t len, cap;
    int oom;
} builder;

static uint8_t *grow(builder *b, size_t n) {
    if (b->oom) return NULL;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = 1;
                return NULL;
            }
            cap *= 2;
        }
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return NULL;
        }
        b->p = q;
        b->cap = cap;
    }
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}
static void wr_u32(builder *b, uint32_t v) {
    uint8_t *p = grow(b, 4);
    if (p) amp_le_put_u32(p, v);
}
static void wr_u64(builder *b, uint64_t v) {
    uint8_t *p = grow(b, 8);
    if (p) amp_le_put_u64(p, v);
}
static void wr_f64(builder *b, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    wr_u64(b, u);
}
static void wr_str(builder *b, const char *s) {
    size_t n = strnlen(s, AMP_CKPT_NAME_MAX - 1);
    wr_u32(b, (uint32_t)n);
    uint8_t *p = grow(b, n);
    if (p) memcpy(p, s, n);
}

static void encode_meta(builder *b, const amp_checkpoint *ck) {
    wr_str(b, ck->amptrain_version);
    wr_u32(b, ck->abi_major);
    wr_u32(b, ck->abi_minor);
    wr_u64(b, (uint64_t)ck->step);
    wr_u64(b, (uint64_t)ck->applied);
    wr_u64(b, (uint64_t)ck->skipped);
    wr_u64(b, (uint64_t)ck->epoch);
    wr_u64(b, (uint64_t)ck->cursor);
    wr_u64(b, (uint64_t)ck->total_steps);
    wr_u64(b, ck->seed);
    wr_u64(b, (uint64_t)ck->train_examples);
    wr_u32(b, ck->optim);
    wr_u32(b, ck->opt_buffers);
    wr_str(b, ck->model);
    wr_u32(b, ck->nlayers);
    wr_u32(b, ck->nparam_tensors);
    for (uint32_t i = 0; i < ck->nparam_tensors; i++) {
        amp_ckpt_param P;
        amp_checkpoint_param(ck, i, &P);
        size_t n = strnlen(P.name, AMP_CKPT_PARAM_NAME_MAX - 1);
        wr_u32(b, (uint32_t)n);
        uint8_t *p = grow(b, n);
        if (p) memcpy(p, P.name, n);
        wr_u32(b, P.layer);
        wr_u32(b, P.ndim);
        for (uint32_t d = 0; d < P.ndim && d < AMP_CKPT_MAX_DIMS; d++) wr_u64(b, P.shape[d]);
    }
    wr_u64(b, ck->nparams);
    wr_str(b, ck->precision);
    wr_str(b, ck->precision_version);
    wr_str(b, ck->scaler);
    wr_str(b, ck->scaler_version);
    wr_f64(b, ck->wall_seconds);
    wr_u64(b, ck->device_peak);
}

int amp_checkpoint_encode(const amp_checkpoint *ck, uint8_t **out, size_t *len, char *err,
                          size_t errlen) {
    *out = NULL;
    *len = 0;
    if (ck->nlayers < 1 || ck->nlayers > AMP_CKPT_MAX_LAYERS || ck->nparam_tensors < 1 ||
        ck->nparam_tensors > AMP_CKPT_MAX_TENSORS || (!ck->params && !ck->params_raw) ||
        (!ck->totals && !ck->totals_raw) ||
        ck->nlosses > AMP_CKPT_MAX_LOSSES) {
        amp_set_err(err, errlen, "checkpoint: %u layers / %u tensors / %zu losses do not fit the format",
                (unsigned)ck->nlayers, (unsigned)ck->nparam_tensors, ck->nlosses);
        return -1;
    }
    builder meta = {0}, totl = {0};
    encode_meta(&meta, ck);
    uint8_t dist[4];
    amp_le_put_u32(dist, ck->world_size ? ck->world_size : 1);
    for (uint32_t i = 0; i < 2 * ck->nlayers; i++) {
        amp_round_count t = amp_checkpoint_total(ck, i);
        wr_u64(&totl, t.underflow);
        wr_u64(&totl, t.overflow);
        wr_u64(&totl, t.nonzero);
    }
    uint8_t mpos[MPOS_SIZE];
    amp_le_put_u64(mpos, ck->metrics_pos);
    amp_le_put_u32(mpos + 8, ck->metrics_crc);
    amp_le_put_u32(mpos + 12, 0);
    const uint8_t *data[S_COUNT] = {meta.p,
                                    (const uint8_t *)ck->config,
                                    ck->master,
                                    ck->optim_state,
                                    ck->scaler_state,
                                    totl.p,
                                    ck->losses,
                                    (const uint8_t *)ck->metrics,
                                    mpos,
                                    (const uint8_t *)ck->exec,
                                    dist,
                                    (const uint8_t *)ck->data_id,
                                    ck->scaled_state};
    size_t n[S_COUNT] = {meta.len, ck->config_len, ck->master_len, ck->optim_len,
                         ck->scaler_len, totl.len, ck->nlosses * 8, ck->metrics_len,
                         MPOS_SIZE, ck->exec_len, 4, ck->data_id_len, ck->scaled_len};
    /* The optional sections only when they say something. */
    int with[S_COUNT];
    uint32_t nsec = 0;
    for (int k = 0; k < S_COUNT; k++) {
        with[k] = k < S_OPTIONAL || (k == S_METR && ck->metrics_len > 0) ||
                  (k == S_MPOS && ck->has_metrics_pos) || (k == S_EXEC && ck->exec_len > 0) ||
                  k == S_DIST || (k == S_DATA && ck->data_id_len > 0) ||
                  (k == S_SCLD && ck->scaled_len > 0);
        nsec += (uint32_t)with[k];
    }
    size_t total = AMP_CKPT_HEADER_SIZE + nsec * AMP_CKPT_ENTRY_SIZE;
    int bad = meta.oom || totl.oom;
    for (int k = 0; k < S_COUNT; k++) {
        if (!with[k]) continue;
        if ((n[k] && !data[k]) || n[k] > SIZE_MAX - total) bad = 1;
        if (!bad) total += n[k];
    }
    uint8_t *buf = bad ? NULL : malloc(total);
    if (!buf) {
        free(meta.p);
        free(totl.p);
        amp_set_err(err, errlen, "checkpoint: out of host memory (%zu bytes)", total);
        return -1;
    }
    memcpy(buf, ckpt_magic, 8);
    amp_le_put_u32(buf + 8, AMP_CKPT_FORMAT_VERSION);
    amp_le_put_u32(buf + 12, nsec);
    amp_le_put_u64(buf + 16, total);
    amp_le_put_u32(buf + 28, 0);
    size_t off = AMP_CKPT_HEADER_SIZE + nsec * AMP_CKPT_ENTRY_SIZE;
    uint32_t idx = 0;
    for (int k = 0; k < S_COUNT; k++) {
        if (!with[k]) continue;
        uint8_t *e = buf + AMP_CKPT_HEADER_SIZE + (size_t)idx++ * AMP_CKPT_ENTRY_SIZE;
        memcpy(e, section_tags[k], 4);
        if (n[k]) memcpy(buf + off, data[k], n[k]);
        amp_le_put_u32(e + 4, crc32_of(buf + off, n[k]));
        amp_le_put_u64(e + 8, off);
        amp_le_put_u64(e + 16, n[k]);
        off += n[k];
    }
    uLong c = crc32(0L, buf, 24);
    c = crc32(c, buf + AMP_CKPT_HEADER_SIZE, nsec * AMP_CKPT_ENTRY_SIZE);
    amp_le_put_u32(buf + 24, (uint32_t)c);
    free(meta.p);
    free(totl.p);
    *out = buf;
    *len = total;
    return 0;
}
