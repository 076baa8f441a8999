/* Byte-level BPE tokenizers (GPT-2, Llama 3 and the like), read from a
 * Hugging Face tokenizer.json or from GPT-2's vocab.json + merges.txt.
 * Encoding gives the ids of the `tokenizers` library's
 * encode(text, add_special_tokens=False); decoding gives its decode. */
#ifndef AMP_TOKENIZER_H
#define AMP_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct amp_tokenizer amp_tokenizer;

/* Loads `path`: a tokenizer.json, a GPT-2 vocab.json (merges.txt beside it,
 * or NAME-merges.txt beside NAME-vocab.json), or a folder holding either.
 * NULL with "path: why" in err: the file is missing or unreadable, or is
 * not one amptrain reads (bad JSON, an unsupported normalizer, model or
 * pre-tokenizer), all bad input for the commands (exit 2). */
amp_tokenizer *amp_tokenizer_load(const char *path, char *err, size_t errlen);
/* The files amp_tokenizer_load reads for path: 1 (a) or 2 (a: vocab.json,
 * b: merges.txt), as PATH_MAX strings; for fingerprints. */
int amp_tokenizer_files(const char *path, char *a, char *b);
/* The same from the bytes of a tokenizer.json (name for messages). */
amp_tokenizer *amp_tokenizer_from_json(const char *name, const char *json, size_t len, char *err,
                                       size_t errlen);
void amp_tokenizer_free(amp_tokenizer *t);

/* One past the largest id (model and added tokens). */
int64_t amp_tokenizer_vocab_size(const amp_tokenizer *t);

/* Where encoding puts its ids and says how far it got. */
typedef struct amp_encode_out {
    uint32_t *ids; /* grown with realloc: the caller frees */
    size_t n, cap;
    size_t replaced;  /* invalid UTF-8 subparts replaced by U+FFFD ... */
    size_t first_bad; /* ... and the byte offset of the first */
    /* Called now and then with the bytes done of total (NULL: never). */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *ctx;
} amp_encode_out;

/* Appends the ids of text (len bytes, any bytes: invalid UTF-8 is first
 * replaced by U+FFFD per maximal invalid subpart, as Python's
 * errors="replace" and Rust's from_utf8_lossy do, and counted in
 * o->replaced) to o->ids. 0, or -1 with err (out of memory, a PCRE2 match
 * failure). */
int amp_tokenizer_encode(const amp_tokenizer *t, const char *text, size_t len, amp_encode_out *o,
                         char *err, size_t errlen);

/* The raw bytes of ids (special tokens as their text unless skip_special;
 * an unknown id is skipped) appended to a malloc'd buffer: they may end inside
 * a UTF-8 sequence, for a caller that streams them. 0, or -1 out of memory. */
int amp_tokenizer_decode_bytes(const amp_tokenizer *t, const uint32_t *ids, size_t n,
                               int skip_special, char **out, size_t *len);
/* The library's decode: the same bytes, invalid UTF-8 replaced by U+FFFD
 * (each run of model tokens between added tokens on its own, as the library
 * decodes them). A malloc'd NUL-terminated string in *out, or -1. */
int amp_tokenizer_decode(const amp_tokenizer *t, const uint32_t *ids, size_t n, int skip_special,
                         char **out, size_t *len);

#endif
