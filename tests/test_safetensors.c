/* safetensors reader/writer: round trip, a file laid out byte by byte as
 * safetensors.torch.save_file lays it out, every validation error with its
 * message, write failures that must leave nothing behind, and 2000 random
 * mutations of a valid file that must never crash or hang. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/safetensors.h"

static int failures;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
            failures++;                                                                 \
        }                                                                               \
    } while (0)

/* Checks that msg contains want, printing both when it does not. */
#define CHECK_MSG(msg, want)                                                                        \
    do {                                                                                            \
        if (!strstr((msg), (want))) {                                                               \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, (msg), (want)); \
            failures++;                                                                             \
        }                                                                                           \
    } while (0)

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) { /* xorshift64*: deterministic across runs */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* ---- temp files ---------------------------------------------------------- */

static char tmp_path[64]; /* one scratch file for the whole run */

static void tmp_init(void) {
    strcpy(tmp_path, "/tmp/amp-st-test-XXXXXX");
    int fd = mkstemp(tmp_path);
    if (fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    close(fd);
}

static void file_put(const char *path, const void *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(buf, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static unsigned char *file_get(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len + 1);
    if (!p || fread(p, 1, (size_t)len, f) != (size_t)len) {
        perror(path);
        exit(1);
    }
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* 8-byte LE length, header, data: a file image in a malloc'd buffer. */
static unsigned char *image(const char *header, size_t hlen, const void *data, size_t dlen, size_t *n) {
    unsigned char *p = malloc(8 + hlen + dlen + 1);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(p + 8, header, hlen);
    if (dlen) memcpy(p + 8 + hlen, data, dlen);
    *n = 8 + hlen + dlen;
    return p;
}

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Writes the image and expects open to fail with a message containing want
 * and naming the file. */
static void expect_open_fail_image(const unsigned char *img, size_t n, const char *want, int line) {
    char err[512] = "";
    amp_safetensors *st = (amp_safetensors *)1;
    file_put(tmp_path, img, n);
    int rc = amp_safetensors_open(&st, tmp_path, err, sizeof err);
    if (rc == 0 || st != NULL || !strstr(err, want) || strncmp(err, tmp_path, strlen(tmp_path)) != 0) {
        fprintf(stderr, "line %d: open rc %d, message \"%s\", wanted \"%s\"\n", line, rc, err, want);
        failures++;
    }
    if (rc == 0) amp_safetensors_close(st);
}

static void expect_header_fail(const char *header, size_t dlen, const char *want, int line) {
    size_t n;
    unsigned char *zeros = calloc(1, dlen + 1);
    unsigned char *img = image(header, strlen(header), zeros, dlen, &n);
    expect_open_fail_image(img, n, want, line);
    free(img);
    free(zeros);
}
#define HEADER_FAIL(h, dlen, want) expect_header_fail((h), (dlen), (want), __LINE__)

/* ---- tests ----------------------------------------------------------------- */

/* A file as safetensors.torch.save_file({"weight": f32[2,3], "bias": f16[4],
 * "emb": bf16[2,2], "scale": f64[3]}, metadata={"format": "pt"}) lays it out:
 * compact JSON, __metadata__ first, data ordered by dtype alignment then name,
 * header padded with spaces to 8 bytes. Here the header lists tensors in a
 * different order than the data, which the format allows. */
static void test_handmade(void) {
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},"
                    "\"bias\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[48,56]},"
                    "\"emb\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[56,64]},"
                    "\"scale\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[0,24]},"
                    "\"weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24,48]}}";
    char header[512];
    snprintf(header, sizeof header, "%s", h);
    while (strlen(header) % 8) strcat(header, " ");

    static const uint32_t w_bits[6] = {0x3f800000u, 0xc0200000u, 0x40500000u,
                                       0x00000001u, 0x7fc00001u, 0xff800000u};
    static const uint16_t b_bits[4] = {0x3c00u, 0xc000u, 0x7bffu, 0x0001u};
    static const uint16_t e_bits[4] = {0x3f80u, 0x4049u, 0xff80u, 0x0001u};
    const double s_val[3] = {0.1, -1e300, 3.0};
    unsigned char data[64];
    for (int i = 0; i < 3; i++) {
        uint64_t u;
        memcpy(&u, &s_val[i], 8);
        put_le(data + 8 * i, u, 8);
    }
    for (int i = 0; i < 6; i++) put_le(data + 24 + 4 * i, w_bits[i], 4);
    for (int i = 0; i < 4; i++) put_le(data + 48 + 2 * i, b_bits[i], 2);
    for (int i = 0; i < 4; i++) put_le(data + 56 + 2 * i, e_bits[i], 2);

    size_t n;
    unsigned char *img = image(header, strlen(header), data, sizeof data, &n);
    file_put(tmp_path, img, n);
    free(img);

    char err[512] = "";
    amp_safetensors *st = NULL;
    int rc = amp_safetensors_open(&st, tmp_path, err, sizeof err);
    CHECK(rc == 0);
    if (rc) {
        fprintf(stderr, "open: %s\n", err);
        return;
    }
    CHECK(amp_safetensors_count(st) == 4);
    CHECK(strcmp(amp_safetensors_name(st, 0), "bias") == 0);
    CHECK(strcmp(amp_safetensors_name(st, 3), "weight") == 0);
    CHECK(amp_safetensors_name(st, 4) == NULL && amp_safetensors_name(st, -1) == NULL);
    CHECK(strcmp(amp_safetensors_meta(st, "format"), "pt") == 0);
    CHECK(amp_safetensors_meta(st, "nope") == NULL);
    const char *dt;
    int nd;
    const int64_t *sh;
    CHECK(amp_safetensors_info(st, 2, &dt, &nd, &sh) == 0 && strcmp(dt, "F64") == 0 && nd == 1 && sh[0] == 3);

    float w[6], b[4], e[4], s[3];
    const int64_t ws[2] = {2, 3}, bs[1] = {4}, es[2] = {2, 2}, ss[1] = {3};
    CHECK(amp_safetensors_get_f32(st, "weight", 2, ws, w, err, sizeof err) == 0);
    for (int i = 0; i < 6; i++) CHECK(bits_of(w[i]) == w_bits[i]); /* NaN payload, denormal too */
    CHECK(amp_safetensors_get_f32(st, "bias", 1, bs, b, err, sizeof err) == 0);
    CHECK(b[0] == 1.0f && b[1] == -2.0f && b[2] == 65504.0f && b[3] == ldexpf(1.0f, -24));
    CHECK(amp_safetensors_get_f32(st, "emb", 2, es, e, err, sizeof err) == 0);
    CHECK(e[0] == 1.0f && e[1] == 3.140625f && isinf(e[2]) && e[2] < 0 && bits_of(e[3]) == 0x00010000u);
    CHECK(amp_safetensors_get_f32(st, "scale", 1, ss, s, err, sizeof err) == 0);
    /* F64 rounds to nearest; beyond FLT_MAX that is inf (IEEE conversion). */
    CHECK(s[0] == 0.1f && isinf(s[1]) && s[1] < 0 && s[2] == 3.0f);
    amp_safetensors_close(st);
}

static void test_round_trip(void) {
    float w[12], bias[4], conv[24], scalar = -7.5f;
    for (int i = 0; i < 12; i++) w[i] = (float)(i - 6) / 7.0f;
    w[0] = -0.0f;
    w[1] = INFINITY;
    w[2] = float_of(0x7fa00123u); /* signalling NaN with payload: must survive bitwise */
    w[3] = float_of(0x00000003u); /* denormal */
    for (int i = 0; i < 4; i++) bias[i] = (float)i * 1e-30f;
    for (int i = 0; i < 24; i++) conv[i] = (float)(rng_next() % 100000) / 777.0f;
    const char *odd = "we\"ird\\name\n\t\x01 \xc3\xa9 \xf0\x9f\x98\x80"; /* quote, escapes, é, emoji */
    const amp_st_tensor t[] = {
        {"fc1.weight", w, 2, {3, 4}},
        {"fc1.bias", bias, 1, {4}},
        {"scalar", &scalar, 0, {0}},
        {"empty", NULL, 2, {0, 5}},
        {odd, bias, 1, {4}},
        {"conv", conv, 4, {2, 3, 2, 2}},
    };
    const int nt = (int)(sizeof t / sizeof t[0]);
    const char *meta[] = {"format", "pt", "note", "quote \" backslash \\ nl \n tab \t \xc3\xa9", NULL};
    char err[512] = "";
    int rc = amp_safetensors_write(tmp_path, t, nt, meta, err, sizeof err);
    CHECK(rc == 0);
    if (rc) {
        fprintf(stderr, "write: %s\n", err);
        return;
    }
    size_t n;
    unsigned char *img = file_get(tmp_path, &n);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | img[i];
    CHECK(hl % 8 == 0);                                /* data 8-byte aligned */
    CHECK(n == 8 + hl + 4 * (12 + 4 + 1 + 0 + 4 + 24)); /* nothing else in the file */
    free(img);

    amp_safetensors *st = NULL;
    rc = amp_safetensors_open(&st, tmp_path, err, sizeof err);
    CHECK(rc == 0);
    if (rc) {
        fprintf(stderr, "open: %s\n", err);
        return;
    }
    CHECK(amp_safetensors_count(st) == nt);
    for (int i = 0; i < nt && i < amp_safetensors_count(st); i++) {
        CHECK(strcmp(amp_safetensors_name(st, i), t[i].name) == 0); /* write order kept */
        const char *dt;
        int nd;
        const int64_t *sh;
        CHECK(amp_safetensors_info(st, i, &dt, &nd, &sh) == 0);
        CHECK(strcmp(dt, "F32") == 0 && nd == t[i].ndim);
        size_t numel = 1;
        for (int d = 0; d < nd && d < 4; d++) {
            CHECK(sh[d] == t[i].shape[d]);
            numel *= (size_t)t[i].shape[d];
        }
        float buf[32];
        memset(buf, 0xa5, sizeof buf);
        CHECK(amp_safetensors_get_f32(st, t[i].name, t[i].ndim, t[i].shape, numel ? buf : NULL, err,
                                      sizeof err) == 0);
        for (size_t k = 0; k < numel; k++) CHECK(bits_of(buf[k]) == bits_of(t[i].data[k]));
    }
    CHECK(strcmp(amp_safetensors_meta(st, "format"), "pt") == 0);
    CHECK(strcmp(amp_safetensors_meta(st, "note"), meta[3]) == 0);
    amp_safetensors_close(st);

    /* The exact bytes save_file would produce for the same content. */
    const float two[2] = {1.0f, 2.0f};
    const amp_st_tensor t2[] = {{"w", two, 1, {2}}};
    const char *m2[] = {"format", "pt", NULL};
    CHECK(amp_safetensors_write(tmp_path, t2, 1, m2, err, sizeof err) == 0);
    char want[128] = "{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    while (strlen(want) % 8) strcat(want, " ");
    unsigned char wd[8];
    put_le(wd, 0x3f800000u, 4);
    put_le(wd + 4, 0x40000000u, 4);
    size_t wn;
    unsigned char *wimg = image(want, strlen(want), wd, 8, &wn);
    img = file_get(tmp_path, &n);
    CHECK(n == wn && memcmp(img, wimg, n) == 0);
    free(img);
    free(wimg);

    /* No tensors at all is a valid file: "{}" padded. */
    CHECK(amp_safetensors_write(tmp_path, NULL, 0, NULL, err, sizeof err) == 0);
    CHECK(amp_safetensors_open(&st, tmp_path, err, sizeof err) == 0);
    CHECK(amp_safetensors_count(st) == 0);
    char e2[256] = "";
    CHECK(amp_safetensors_get_f32(st, "x", 0, NULL, &scalar, e2, sizeof e2) != 0);
    CHECK_MSG(e2, "no tensor 'x'");
    amp_safetensors_close(st);
}

static void test_header_errors(void) {
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    /* Sanity: the base case opens, so the failures below are the edits'. */
    {
        size_t n;
        unsigned char z[4] = {0};
        unsigned char *img = image(ok, strlen(ok), z, 4, &n);
        file_put(tmp_path, img, n);
        free(img);
        amp_safetensors *st;
        char err[256];
        CHECK(amp_safetensors_open(&st, tmp_path, err, sizeof err) == 0);
        amp_safetensors_close(st);
    }
    /* Missing closing brace: the header ends early. */
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "'}' expected near end of file");
    /* Trailing garbage, at a byte offset we can predict: 8 + its index + 1
     * (jansson reports the position after the token). */
    char buf[256];
    snprintf(buf, sizeof buf, "%sx", ok);
    char at[96];
    snprintf(at, sizeof at, "header, byte %zu (line 1, column %zu): end of file expected near 'x'",
             8 + strlen(ok) + 1, strlen(ok) + 1);
    HEADER_FAIL(buf, 4, at);
    /* Space padding is whitespace, not garbage. */
    {
        snprintf(buf, sizeof buf, "  %s  \n ", ok);
        size_t n;
        unsigned char z[4] = {0};
        unsigned char *img = image(buf, strlen(buf), z, 4, &n);
        file_put(tmp_path, img, n);
        free(img);
        amp_safetensors *st;
        char err[256];
        CHECK(amp_safetensors_open(&st, tmp_path, err, sizeof err) == 0);
        amp_safetensors_close(st);
    }
    HEADER_FAIL("{\"a\":{\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype \"F17\"");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,4]}}", 4,
                "tensor 'a': shape entry -2 is negative");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]}}", 4, "is negative");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                12, "overlap");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                12, "gap in the data: tensor 'b' starts at 8 but tensor 'a' ends at 4");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "first tensor 'a' starts at 4");
    HEADER_FAIL(ok, 8, "the tensors cover 4 bytes but the file holds 8 data bytes");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
                "shape [3] of F32 needs 12 bytes but data_offsets [0, 8] span 8");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4, "only integers");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}", 4, "only integers");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4, "invalid token near '0'");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", 4,
                "too big integer");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4,
                "overflows");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[[1]],\"data_offsets\":[0,4]}}", 4,
                "tensor 'a': shape entry 0 is an array; only integers are allowed here");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", 4, "not 2");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, "end before");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                8, "duplicate object key near '\"a\"'");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                "duplicate object key near '\"dtype\"'");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":[]}}", 4,
                "unknown key \"x\"");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 0, "has no \"data_offsets\"");
    HEADER_FAIL("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ \"k\" is an integer; values must be strings");
    HEADER_FAIL("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "duplicate object key near '\"k\"'");
    HEADER_FAIL("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate object key near '\"__metadata__\"'");
    HEADER_FAIL("{\"a\\x\":{}}", 0, "invalid escape");
    HEADER_FAIL("{\"a\\ud800\":{}}", 0, "invalid Unicode '\\uD800'");
    HEADER_FAIL("{\"a\\u0000\":{}}", 0, "\\u0000");
    HEADER_FAIL("{\"a\tb\":{}}", 0, "control character");
    HEADER_FAIL("{\"a\xff\":{}}", 0, "byte 11 (line 1, column 3): unable to decode byte 0xff");
    HEADER_FAIL("{\"a\xc0\x80\":{}}", 0, "unable to decode byte 0xc0"); /* overlong NUL */
    HEADER_FAIL("[]", 0, "must be a JSON object");
    HEADER_FAIL("{\"a\":null}", 0, "header: tensor 'a' is null, not an object");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\" \"shape\":[1]}}", 0, "'}' expected near '\"shape\"'");
    HEADER_FAIL("{\"a\" {}}", 0, "':' expected near '{'");
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}", 4, "unexpected token near ']'");
    HEADER_FAIL("{,}", 0, "string or '}' expected near ','");
    HEADER_FAIL("{\"unterminated", 0, "premature end of input");
    /* Escapes decode: "\u0061" is "a", so this is a duplicate of "a". */
    HEADER_FAIL("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
                "\"\\u0061\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}",
                0, "duplicate object key near '\"\\u0061\"'");
    /* Sub-byte dtypes must fill whole bytes. */
    HEADER_FAIL("{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, "whole number of bytes");
}

static void test_file_errors(void) {
    unsigned char img[64] = {0};
    size_t n;
    expect_open_fail_image(img, 0, "empty file", __LINE__);
    memset(img, 0, sizeof img);
    expect_open_fail_image(img, 5, "too short", __LINE__);
    put_le(img, 999999, 8);
    expect_open_fail_image(img, 40, "header length 999999 exceeds the file size 40", __LINE__);
    put_le(img, 200ull << 20, 8);
    expect_open_fail_image(img, 40, "exceeds the 100 MB limit", __LINE__);
    put_le(img, 1, 8);
    expect_open_fail_image(img, 40, "too small", __LINE__);

    /* Truncated data: a valid file less its last two bytes. */
    const float v[4] = {1, 2, 3, 4};
    const amp_st_tensor t[] = {{"a", v, 1, {2}}, {"b", v + 2, 1, {2}}};
    char err[512] = "";
    CHECK(amp_safetensors_write(tmp_path, t, 2, NULL, err, sizeof err) == 0);
    unsigned char *full = file_get(tmp_path, &n);
    expect_open_fail_image(full, n - 2, "tensor 'b' data_offsets [8, 16] run past the 14 data bytes after the header (truncated file?)",
                           __LINE__);

    /* A file that shrinks after open: get must report it, not return junk. */
    file_put(tmp_path, full, n);
    amp_safetensors *st;
    CHECK(amp_safetensors_open(&st, tmp_path, err, sizeof err) == 0);
    CHECK(truncate(tmp_path, (off_t)n - 4) == 0);
    float out[2];
    const int64_t s2[1] = {2};
    CHECK(amp_safetensors_get_f32(st, "a", 1, s2, out, err, sizeof err) == 0);
    CHECK(out[0] == 1.0f && out[1] == 2.0f);
    CHECK(amp_safetensors_get_f32(st, "b", 1, s2, out, err, sizeof err) != 0);
    CHECK_MSG(err, "shrank");
    amp_safetensors_close(st);
    free(full);

    CHECK(amp_safetensors_open(&st, "/nonexistent/amp/w.safetensors", err, sizeof err) != 0);
    CHECK_MSG(err, "/nonexistent/amp/w.safetensors: cannot read: No such file");
    CHECK(amp_safetensors_open(&st, "/tmp", err, sizeof err) != 0);
    CHECK_MSG(err, "/tmp: cannot read: it is a directory, not a regular file");
    CHECK(amp_safetensors_open(&st, "/dev/zero", err, sizeof err) != 0);
    CHECK_MSG(err, "/dev/zero: cannot read: it is a character device, not a regular file");
    {
        /* A FIFO: a blocking open would wait for a writer forever. */
        char fifo[80];
        snprintf(fifo, sizeof fifo, "%s.fifo", tmp_path);
        CHECK(mkfifo(fifo, 0600) == 0);
        CHECK(amp_safetensors_open(&st, fifo, err, sizeof err) != 0);
        CHECK_MSG(err, "it is a FIFO (named pipe), not a regular file");
        unlink(fifo);
    }
    /* Tiny and NULL error buffers are fine. */
    char small[8];
    CHECK(amp_safetensors_open(&st, "/nonexistent", small, sizeof small) != 0 && strlen(small) == 7);
    CHECK(amp_safetensors_open(&st, "/nonexistent", NULL, 0) != 0);
}

static void test_get_errors(void) {
    static float big[200];
    const amp_st_tensor t[] = {
        {"fc1.weight", big, 2, {10, 20}},
        {"fc1.bias", big, 1, {10}},
        {"model.fc2.weight", big, 2, {5, 10}},
    };
    char err[512] = "";
    CHECK(amp_safetensors_write(tmp_path, t, 3, NULL, err, sizeof err) == 0);
    amp_safetensors *st;
    CHECK(amp_safetensors_open(&st, tmp_path, err, sizeof err) == 0);
    float dst[200];
    const int64_t tr[2] = {20, 10}, flat[1] = {200}, ok[2] = {10, 20};

    CHECK(amp_safetensors_get_f32(st, "fc1.weight", 2, tr, dst, err, sizeof err) != 0);
    CHECK_MSG(err, tmp_path);
    CHECK_MSG(err, "'fc1.weight' has shape [10, 20] but the model expects [20, 10]");
    CHECK_MSG(err, "nn.Linear");
    CHECK(amp_safetensors_get_f32(st, "fc1.weight", 1, flat, dst, err, sizeof err) != 0);
    CHECK_MSG(err, "has shape [10, 20] but the model expects [200]");
    CHECK(!strstr(err, "nn.Linear")); /* the hint only fits a transpose */

    CHECK(amp_safetensors_get_f32(st, "fc3.weight", 2, ok, dst, err, sizeof err) != 0);
    CHECK_MSG(err, "no tensor 'fc3.weight'");
    CHECK_MSG(err, "the file has: fc1.weight, fc1.bias, model.fc2.weight");
    CHECK(amp_safetensors_get_f32(st, "fc1.weights", 2, ok, dst, err, sizeof err) != 0);
    CHECK_MSG(err, "did you mean 'fc1.weight'?");
    CHECK(amp_safetensors_get_f32(st, "fc2.weight", 2, ok, dst, err, sizeof err) != 0);
    CHECK_MSG(err, "did you mean 'model.fc2.weight'?");
    CHECK(amp_safetensors_get_f32(st, "fc1.weight", 2, ok, NULL, err, sizeof err) != 0);
    CHECK(amp_safetensors_get_f32(st, "fc1.weight", 2, ok, dst, err, sizeof err) == 0);
    amp_safetensors_close(st);

    /* Unsupported dtype. */
    const char *h = "{\"ids\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    size_t n;
    unsigned char z[8] = {0};
    unsigned char *img = image(h, strlen(h), z, 8, &n);
    file_put(tmp_path, img, n);
    free(img);
    CHECK(amp_safetensors_open(&st, tmp_path, err, sizeof err) == 0);
    const int64_t s2[1] = {2};
    CHECK(amp_safetensors_get_f32(st, "ids", 1, s2, dst, err, sizeof err) != 0);
    CHECK_MSG(err, "'ids' has dtype I32; only F32, F16, BF16 and F64");
    amp_safetensors_close(st);
}

static int dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void test_write_errors(void) {
    const float v[2] = {1, 2};
    const amp_st_tensor t[] = {{"a", v, 1, {2}}};
    char err[512] = "", path[128];

    /* Into a directory that does not exist: error, nothing created. */
    char gone[] = "/tmp/amp-st-gone-XXXXXX";
    CHECK(mkdtemp(gone) != NULL);
    CHECK(rmdir(gone) == 0);
    snprintf(path, sizeof path, "%s/w.safetensors", gone);
    CHECK(amp_safetensors_write(path, t, 1, NULL, err, sizeof err) != 0);
    CHECK_MSG(err, "cannot create");
    CHECK(access(path, F_OK) != 0 && access(gone, F_OK) != 0);

    char dir[] = "/tmp/amp-st-dir-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/w.safetensors", dir);

    /* Bad arguments fail before anything is created. */
    const amp_st_tensor bad5[] = {{"a", v, 5, {1, 1, 1, 1}}};
    CHECK(amp_safetensors_write(path, bad5, 1, NULL, err, sizeof err) != 0);
    CHECK_MSG(err, "ndim 5");
    const amp_st_tensor neg[] = {{"a", v, 1, {-1}}};
    CHECK(amp_safetensors_write(path, neg, 1, NULL, err, sizeof err) != 0);
    CHECK_MSG(err, "negative");
    const amp_st_tensor dup[] = {{"a", v, 1, {1}}, {"a", v, 1, {1}}};
    CHECK(amp_safetensors_write(path, dup, 2, NULL, err, sizeof err) != 0);
    CHECK_MSG(err, "duplicate tensor name 'a'");
    const amp_st_tensor res[] = {{"__metadata__", v, 1, {1}}};
    CHECK(amp_safetensors_write(path, res, 1, NULL, err, sizeof err) != 0);
    CHECK_MSG(err, "reserved");
    const amp_st_tensor nul[] = {{"a", NULL, 1, {2}}};
    CHECK(amp_safetensors_write(path, nul, 1, NULL, err, sizeof err) != 0);
    CHECK_MSG(err, "NULL data");
    const amp_st_tensor badutf[] = {{"a\xff", v, 1, {1}}};
    CHECK(amp_safetensors_write(path, badutf, 1, NULL, err, sizeof err) != 0);
    CHECK_MSG(err, "UTF-8");
    const char *odd_meta[] = {"k", NULL};
    CHECK(amp_safetensors_write(path, t, 1, odd_meta, err, sizeof err) != 0);
    CHECK_MSG(err, "metadata key 'k' has no value");
    const char *dup_meta[] = {"k", "1", "k", "2", NULL};
    CHECK(amp_safetensors_write(path, t, 1, dup_meta, err, sizeof err) != 0);
    CHECK_MSG(err, "duplicate metadata key 'k'");
    CHECK(dir_entries(dir) == 0);

    /* A failed write over an existing file leaves the old file as it was. */
    CHECK(amp_safetensors_write(path, t, 1, NULL, err, sizeof err) == 0);
    size_t n0, n1;
    unsigned char *before = file_get(path, &n0);
    CHECK(amp_safetensors_write(path, dup, 2, NULL, err, sizeof err) != 0);
    unsigned char *after = file_get(path, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);
    CHECK(dir_entries(dir) == 1);
    CHECK(unlink(path) == 0);

    /* Failure after the temp file is written (rename onto a non-empty
     * directory): the temp file is removed. */
    char keep[160];
    CHECK(mkdir(path, 0700) == 0);
    snprintf(keep, sizeof keep, "%s/keep", path);
    file_put(keep, "x", 1);
    CHECK(amp_safetensors_write(path, t, 1, NULL, err, sizeof err) != 0);
    CHECK_MSG(err, "cannot rename");
    CHECK(dir_entries(dir) == 1); /* only the directory w.safetensors */
    unlink(keep);
    rmdir(path);
    rmdir(dir);
}

/* Random bytes and random mutations of a valid file: open (and get, when open
 * succeeds) must fail cleanly or succeed, never crash, hang or read out of
 * bounds (run under ASan to see the last). */
static void test_fuzz(void) {
    char err[512];
    amp_safetensors *st;
    for (int it = 0; it < 200; it++) {
        unsigned char junk[512];
        size_t n = (size_t)(rng_next() % sizeof junk);
        for (size_t i = 0; i < n; i++) junk[i] = (unsigned char)rng_next();
        if (it % 2 && n >= 8) put_le(junk, rng_next() % (n - 7), 8); /* a plausible length */
        file_put(tmp_path, junk, n);
        err[0] = '\0';
        int rc = amp_safetensors_open(&st, tmp_path, err, sizeof err);
        CHECK(rc != 0 && strncmp(err, tmp_path, strlen(tmp_path)) == 0);
        if (rc == 0) amp_safetensors_close(st);
    }

    /* The seed: a writer file plus a hand-made F16/BF16 tensor pair. */
    float v[24];
    for (int i = 0; i < 24; i++) v[i] = (float)i - 3.5f;
    const amp_st_tensor t[] = {{"fc1.weight", v, 2, {4, 3}}, {"fc1.bias", v, 1, {4}}, {"s", v, 0, {0}},
                               {"c", v, 4, {1, 2, 1, 3}}};
    const char *meta[] = {"format", "pt", "step", "10", NULL};
    CHECK(amp_safetensors_write(tmp_path, t, 4, meta, err, sizeof err) == 0);
    size_t n0;
    unsigned char *seed0 = file_get(tmp_path, &n0);
    const char *h2 = "{\"h\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,8]},"
                     "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[8,16]}}";
    unsigned char d2[16];
    for (int i = 0; i < 16; i++) d2[i] = (unsigned char)(i * 37);
    size_t n1;
    unsigned char *seed1 = image(h2, strlen(h2), d2, 16, &n1);

    int opened = 0, got = 0;
    unsigned char *m = malloc(n0 + n1 + 64);
    for (int it = 0; it < 2000; it++) {
        const unsigned char *seed = it % 3 ? seed0 : seed1;
        size_t n = it % 3 ? n0 : n1;
        memcpy(m, seed, n);
        uint64_t hl = 0;
        for (int i = 7; i >= 0; i--) hl = hl << 8 | seed[i];
        int edits = 1 + (int)(rng_next() % 4);
        for (int e = 0; e < edits && n > 0; e++) {
            /* Mostly inside the header, where the parser lives. */
            size_t span = rng_next() % 5 ? (size_t)(8 + hl) : n;
            size_t pos = (size_t)(rng_next() % (span < n ? span : n));
            switch (rng_next() % 6) {
            case 0: m[pos] = (unsigned char)rng_next(); break;
            case 1: m[pos] ^= (unsigned char)(1u << (rng_next() % 8)); break;
            case 2: m[pos] = (unsigned char)"{}[]\",:-0123456789 \\u"[rng_next() % 21]; break;
            case 3: memmove(m + pos, m + pos + 1, n - pos - 1); n--; break; /* delete */
            case 4: memmove(m + pos + 1, m + pos, n - pos); m[pos] = (unsigned char)rng_next(); n++; break;
            default: n = pos; break; /* truncate */
            }
        }
        file_put(tmp_path, m, n);
        err[0] = '\0';
        if (amp_safetensors_open(&st, tmp_path, err, sizeof err) != 0) {
            CHECK(strncmp(err, tmp_path, strlen(tmp_path)) == 0 && strlen(err) > strlen(tmp_path) + 2);
            continue;
        }
        opened++;
        for (int i = 0; i < amp_safetensors_count(st); i++) {
            const char *dt;
            int nd;
            const int64_t *sh;
            CHECK(amp_safetensors_info(st, i, &dt, &nd, &sh) == 0);
            size_t numel = 1;
            for (int d = 0; d < nd; d++) numel *= (size_t)sh[d];
            if (numel > (size_t)n) continue; /* only a zero dimension allows this; nothing to read */
            float *dst = malloc((numel ? numel : 1) * sizeof *dst);
            if (amp_safetensors_get_f32(st, amp_safetensors_name(st, i), nd, sh, dst, err, sizeof err) == 0)
                got++;
            else
                CHECK(strlen(err) > 0);
            free(dst);
        }
        amp_safetensors_close(st);
    }
    printf("fuzz: %d of 2000 mutated files still opened, %d tensors read\n", opened, got);
    CHECK(opened > 0); /* some edits (data bytes, whitespace) keep the file valid */
    free(m);
    free(seed0);
    free(seed1);
}

int main(void) {
    alarm(120); /* a hang is a failure, not a stuck CI job */
    tmp_init();
    test_handmade();
    test_round_trip();
    test_header_errors();
    test_file_errors();
    test_get_errors();
    test_write_errors();
    test_fuzz();
    unlink(tmp_path);
    if (failures) {
        fprintf(stderr, "test_safetensors: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_safetensors: ok\n");
    return 0;
}
