/* Character-level text data (nanoGPT's shakespeare_char): the vocabulary is
 * the sorted set of distinct bytes of the file, the first 90% of the
 * characters train and the last 10% validate. Training windows of T
 * characters are drawn from (seed, step) alone, so a resumed run sees the
 * same batches; validation is a fixed set of windows, the same for every
 * seed and every run. */
#ifndef AMP_TEXT_H
#define AMP_TEXT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "batcher.h"
#include "keys/text_defaults.h"

/* The largest corpus read (bytes): it is held twice in memory (the bytes,
 * then 4-byte token ids), so 1 GiB costs 5 GiB of host memory at load. */
#define AMP_TEXT_MAX_BYTES (1 << 30)

typedef struct amp_text {
    int vocab;              /* distinct bytes, 1..256 */
    unsigned char chars[256]; /* id -> byte, ascending */
    int16_t ids[256];       /* byte -> id, -1 when absent */
    uint8_t *tokens;        /* [n] ids of the whole file (at most 256: a byte each) */
    int64_t n;              /* characters */
    int64_t n_train;        /* the first floor(0.9 n) train, the rest validates */
    char path[4096];        /* the file, made absolute */
    char sha256[65];        /* its SHA-256 */
} amp_text;

/* Loads path: a regular file of at most AMP_TEXT_MAX_BYTES (io/file.h).
 * expect_sha256 (64 hex digits) or NULL: when given, the file's
 * SHA-256 must equal it (the shipped corpus is checked before use). On
 * failure *t is zeroed and err names the file and what to do. */
int amp_text_load(amp_text *t, const char *path, const char *expect_sha256, char *err,
                  size_t errlen);
void amp_text_free(amp_text *t);
/* The reading part of amp_text_load: the whole file in *text (malloc'd,
 * NUL after the last byte), its size, SHA-256 and absolute path (abs, as
 * realpath gives it). 0, or -1 with err; nothing to free then. */
int amp_text_read(const char *path, const char *expect_sha256, char **text, size_t *n,
                  char sha[65], char *abs, size_t abslen, char *err, size_t errlen);

/* The vocabulary as a run saves it (vocab.json): {"vocab_size": V,
 * "bytes": [the byte of each id], "data": absolute path, "sha256": hex}.
 * 0, or -1 when writing failed. */
int amp_text_write_vocab(const amp_text *t, FILE *f);

/* Reads vocab.json back: bytes[256] (the byte of each id), the count, and
 * the data file's path and SHA-256 as recorded. 0, or -1 with err naming
 * the file. */
int amp_text_read_vocab(const char *path, unsigned char *bytes, int *vocab, char *data,
                        size_t datalen, char sha[65], char *err, size_t errlen);

/* The data file and its SHA-256 from a vocab.json, of a character run or
 * of a run with a [data] tokenizer (no bytes then). 0, or -1 with err. */
int amp_text_read_vocab_data(const char *path, char *data, size_t datalen, char sha[65], char *err,
                             size_t errlen);

/* The shipped corpus: <prefix>/share/amptrain/data/ beside an installed
 * amptrain (<prefix>/bin/), else the source tree's data/ (build tree). 0
 * and the path, or -1 when neither exists, with out saying where it was
 * looked for ("A or B"). */
int amp_text_shipped_path(char *out, size_t len);

/* 1 when a and b name the same existing file (device and inode). */
int amp_same_file(const char *a, const char *b);

/* 0 when both splits hold more than T + 1 characters, else -1 with err. */
int amp_text_check_windows(const amp_text *t, int T, const char *path, char *err, size_t errlen);

/* The text batcher (windows.h): training windows within the first n_train
 * characters, eval_windows validation windows within the rest. NULL when
 * out of memory. */
amp_batcher *amp_batcher_text_create(const amp_text *t, uint64_t seed, int batch, int T,
                                     int64_t eval_windows);

#endif
