/* Token file layouts (token_header.h). */
#include "token_header.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

static int32_t le32(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static const int widths[] = {2, 4, 4};

/* The tokens after `offset` bytes of `size`: n of `width` bytes, exactly. */
static int body(amp_token_layout *out, amp_token_dtype dtype, uint64_t offset, uint64_t size) {
    out->dtype = dtype;
    out->width = widths[dtype];
    out->offset = offset;
    if (size < offset || (size - offset) % (uint64_t)out->width) return -1;
    out->n = (int64_t)((size - offset) / (uint64_t)out->width);
    return 0;
}

static int parse_raw(uint64_t size, const char *path, amp_token_layout *out, char *err,
                     size_t errlen) {
    out->format = AMP_TOKENS_BIN;
    if (body(out, AMP_TOKEN_U16, 0, size) == 0) return 0;
    amp_set_err(err, errlen, "%s: %" PRIu64 " bytes, an odd length for a raw .bin of uint16 tokens "
                "(2 bytes each): the file is truncated or not nanoGPT's format", path, size);
    return -1;
}

static int parse_llmc(const unsigned char *h, size_t headlen, uint64_t size, const char *path,
                      amp_token_layout *out, char *err, size_t errlen) {
    out->format = AMP_TOKENS_LLMC;
    if (headlen < AMP_LLMC_HEADER_BYTES || size < AMP_LLMC_HEADER_BYTES) {
        amp_set_err(err, errlen, "%s: truncated llm.c header (%" PRIu64 " of %d bytes)", path, size,
                    AMP_LLMC_HEADER_BYTES);
        return -1;
    }
    int32_t magic = le32(h), version = le32(h + 4), count = le32(h + 8);
    if (magic != AMP_LLMC_MAGIC_U16 && magic != AMP_LLMC_MAGIC_U32) {
        amp_set_err(err, errlen, "%s: not an llm.c token shard: magic %" PRId32 " at byte 0 "
                    "(expected %d, or %d for uint32 tokens)", path, magic, AMP_LLMC_MAGIC_U16,
                    AMP_LLMC_MAGIC_U32);
        return -1;
    }
    int want = magic == AMP_LLMC_MAGIC_U16 ? 1 : 7;
    if (version != want) {
        amp_set_err(err, errlen, "%s: llm.c shard version %" PRId32 " at byte 4 (magic %" PRId32
                    " is version %d)", path, version, magic, want);
        return -1;
    }
    if (count < 0) {
        amp_set_err(err, errlen, "%s: llm.c header token count %" PRId32 " at byte 8 is negative",
                    path, count);
        return -1;
    }
    amp_token_dtype dt = magic == AMP_LLMC_MAGIC_U16 ? AMP_TOKEN_U16 : AMP_TOKEN_U32;
    if (body(out, dt, AMP_LLMC_HEADER_BYTES, size) == 0 && out->n == count) return 0;
    amp_set_err(err, errlen, "%s: the llm.c header (byte 8) says %" PRId32 " tokens (%" PRIu64
                " bytes after the %d-byte header) but %" PRIu64 " bytes follow it", path, count,
                (uint64_t)count * (uint64_t)widths[dt], AMP_LLMC_HEADER_BYTES,
                size - AMP_LLMC_HEADER_BYTES);
    return -1;
}

/* The .npy header's Python dict: {'descr': '<u2', 'fortran_order': False,
 * 'shape': (N,), } in any key order, spaces anywhere. */
typedef struct npy_scan {
    const char *s;
    size_t i, n, base; /* base: the header's byte in the file */
} npy_scan;

static void skip_ws(npy_scan *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n'))
        p->i++;
}

static int eat(npy_scan *p, char c) {
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == c) return p->i++, 1;
    return 0;
}

/* A quoted string without escapes into out. */
static int string(npy_scan *p, char *out, size_t cap) {
    skip_ws(p);
    if (p->i >= p->n || (p->s[p->i] != '\'' && p->s[p->i] != '"')) return 0;
    char q = p->s[p->i++];
    size_t k = 0;
    while (p->i < p->n && p->s[p->i] != q && p->s[p->i] != '\\') {
        if (k + 1 >= cap) return 0;
        out[k++] = p->s[p->i++];
    }
    out[k] = '\0';
    return p->i < p->n && p->s[p->i++] == q;
}

static int word(npy_scan *p, const char *w) {
    skip_ws(p);
    size_t k = strlen(w);
    if (p->n - p->i >= k && memcmp(p->s + p->i, w, k) == 0) return p->i += k, 1;
    return 0;
}

/* A tuple of non-negative integers: dims[*nd] (at most 8). */
static int tuple(npy_scan *p, int64_t *dims, int *nd) {
    if (!eat(p, '(')) return 0;
    *nd = 0;
    for (;;) {
        if (eat(p, ')')) return 1;
        skip_ws(p);
        if (*nd >= 8 || p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return 0;
        int64_t v = 0;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            if (v > (INT64_MAX - 9) / 10) return 0;
            v = v * 10 + (p->s[p->i++] - '0');
        }
        if (p->i < p->n && p->s[p->i] == 'L') p->i++; /* Python 2's long */
        dims[(*nd)++] = v;
        if (eat(p, ')')) return 1;
        if (!eat(p, ',')) return 0;
    }
}

static int parse_npy(const unsigned char *h, size_t headlen, uint64_t size, const char *path,
                     amp_token_layout *out, char *err, size_t errlen) {
    out->format = AMP_TOKENS_NPY;
    size_t m = headlen < 6 ? headlen : 6;
    if (memcmp(h, "\x93NUMPY", m) != 0 || headlen < 10) {
        if (memcmp(h, "\x93NUMPY", m) == 0)
            amp_set_err(err, errlen, "%s: truncated .npy header (%zu bytes)", path, headlen);
        else
            amp_set_err(err, errlen, "%s: not a .npy file (no \\x93NUMPY magic at byte 0)", path);
        return -1;
    }
    int major = h[6];
    size_t lenbytes = major == 1 ? 2 : 4;
    if (major < 1 || major > 3) {
        amp_set_err(err, errlen, "%s: .npy version %d.%d at byte 6 (1.0, 2.0 and 3.0 are read)",
                    path, major, h[7]);
        return -1;
    }
    if (headlen < 8 + lenbytes) {
        amp_set_err(err, errlen, "%s: truncated .npy header (%zu bytes)", path, headlen);
        return -1;
    }
    uint64_t hlen = major == 1 ? (uint64_t)h[8] | (uint64_t)h[9] << 8 : (uint32_t)le32(h + 8);
    uint64_t start = 8 + lenbytes;
    if (start + hlen > AMP_TOKEN_HEAD_MAX || start + hlen > headlen) {
        amp_set_err(err, errlen, "%s: the .npy header length %" PRIu64 " at byte 8 runs past %s",
                    path, hlen, start + hlen > AMP_TOKEN_HEAD_MAX ? "64 KiB (the most read)"
                                                                  : "the end of the file");
        return -1;
    }
    npy_scan p = {(const char *)h + start, 0, (size_t)hlen, (size_t)start};
    char descr[16] = "";
    int fortran = 0, seen[3] = {0, 0, 0}, nd = -1;
    int64_t dims[8];
    int ok = eat(&p, '{');
    while (ok && !eat(&p, '}')) {
        char key[32];
        ok = string(&p, key, sizeof key) && eat(&p, ':');
        int k = !ok ? -1 : strcmp(key, "descr") == 0 ? 0 : strcmp(key, "fortran_order") == 0 ? 1
                         : strcmp(key, "shape") == 0 ? 2 : -1;
        ok = k >= 0 && !seen[k];
        if (ok) seen[k] = 1;
        if (ok && k == 0) ok = string(&p, descr, sizeof descr);
        if (ok && k == 1) ok = word(&p, "False") || (fortran = word(&p, "True"));
        if (ok && k == 2) ok = tuple(&p, dims, &nd);
        if (ok && !eat(&p, ',')) ok = eat(&p, '}') ? (p.i--, 1) : 0;
    }
    skip_ws(&p);
    if (!ok || p.i != p.n || !seen[0] || !seen[1] || !seen[2]) {
        amp_set_err(err, errlen, "%s: .npy header, byte %zu: expected a dict of 'descr', "
                    "'fortran_order' and 'shape' (as numpy.save writes it)", path, p.base + p.i);
        return -1;
    }
    amp_token_dtype dt = strcmp(descr, "<u2") == 0 ? AMP_TOKEN_U16 : strcmp(descr, "<i4") == 0
                         ? AMP_TOKEN_I32 : AMP_TOKEN_U32;
    if (strcmp(descr, "<u2") != 0 && strcmp(descr, "<i4") != 0 && strcmp(descr, "<u4") != 0) {
        amp_set_err(err, errlen, "%s: .npy dtype '%s' is not read: token ids are uint16 ('<u2'), "
                    "int32 ('<i4') or uint32 ('<u4'), little-endian", path, descr);
        return -1;
    }
    /* a 1-D array is the same bytes in either order */
    (void)fortran;
    if (nd != 1) {
        amp_set_err(err, errlen, "%s: .npy shape of %d dimensions: token ids are a 1-D array", path,
                    nd);
        return -1;
    }
    if (body(out, dt, start + hlen, size) == 0 && out->n == dims[0]) return 0;
    amp_set_err(err, errlen, "%s: the .npy header says %" PRId64 " tokens of %d bytes but %" PRIu64
                " bytes follow it at byte %" PRIu64, path, dims[0], widths[dt], size - start - hlen,
                start + hlen);
    return -1;
}

int amp_token_layout_parse(const unsigned char *head, size_t headlen, uint64_t size,
                           amp_token_format format, const char *path, amp_token_layout *out,
                           char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (format == AMP_TOKENS_AUTO) {
        size_t n = strlen(path);
        if (headlen >= 4 && (le32(head) == AMP_LLMC_MAGIC_U16 || le32(head) == AMP_LLMC_MAGIC_U32))
            format = AMP_TOKENS_LLMC;
        else if (headlen >= 6 && memcmp(head, "\x93NUMPY", 6) == 0)
            format = AMP_TOKENS_NPY;
        else if (n >= 4 && strcmp(path + n - 4, ".bin") == 0)
            format = AMP_TOKENS_BIN;
        else {
            amp_set_err(err, errlen, "%s: cannot tell the token format (no llm.c or .npy magic, and "
                        "the name does not end in .bin); set [data] token_format = bin, llmc or "
                        "npy", path);
            return -1;
        }
    }
    if (format == AMP_TOKENS_BIN) return parse_raw(size, path, out, err, errlen);
    if (format == AMP_TOKENS_LLMC) return parse_llmc(head, headlen, size, path, out, err, errlen);
    return parse_npy(head, headlen, size, path, out, err, errlen);
}

const char *amp_token_layout_name(const amp_token_layout *l) {
    static const char *const names[4][3] = {
        {"", "", ""},
        {"raw uint16 .bin", "", ""},
        {"llm.c shard (uint16)", "", "llm.c shard (uint32)"},
        {".npy <u2", ".npy <i4", ".npy <u4"}};
    return names[l->format][l->dtype];
}
