/* The parts of a loaded tokenizer the encoder and decoder share. */
#ifndef AMP_TOKENIZER_INTERNAL_H
#define AMP_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/strmap.h"
#include "tokenizer/tokenizer.h"

/* One step of the pre-tokenizer, applied to every piece in turn. */
typedef struct amp_pretok_step {
    void *code;         /* pcre2_code_8 *: the split pattern, NULL for none */
    int add_prefix_space; /* ByteLevel: a space before a piece that has none */
} amp_pretok_step;

/* Ids above this are refused: the largest vocabularies are near 2^18, and
 * the id table is as long as the largest id. */
#define AMP_TOKENIZER_MAX_ID (1u << 24)

typedef struct amp_added_token {
    char *content;
    size_t len;
    uint32_t id;
    int special;
    int normalized; /* matched in the second pass, as the library does */
} amp_added_token;

struct amp_tokenizer {
    amp_strmap vocab;   /* byte-level token text -> id */
    char **id_text;     /* id -> token text (byte-level form), NULL for gaps */
    size_t nids;
    uint32_t byte_id[256]; /* the id of each single byte's token */
    amp_pairmap merges; /* (left id, right id) -> rank, merged id */
    int ignore_merges;
    amp_pretok_step steps[8];
    int nsteps;
    amp_added_token *added;
    size_t nadded;
    unsigned char added_first[256]; /* 1 for a byte an added token starts with */
};

/* bytes_to_unicode: the code point GPT-2 maps byte b to, and back (-1). */
uint32_t amp_byte_to_cp(unsigned b);
int amp_cp_to_byte(uint32_t cp);
/* The byte-level text of byte string s in out (at most 2 bytes per byte). */
size_t amp_byte_level(const unsigned char *s, size_t n, char *out);
/* The bytes a token's byte-level text stands for; -1 when a character is not
 * a byte-level one (an added token's text is then kept as it is). */
long amp_byte_level_unmap(const char *s, size_t n, unsigned char *out);

/* UTF-8 with each maximal invalid subpart replaced by U+FFFD. A malloc'd
 * buffer (NUL-terminated) or NULL; *count replacements, *first the offset
 * of the first (unchanged when none). */
char *amp_utf8_lossy(const char *s, size_t n, size_t *outlen, size_t *count, size_t *first);

/* Encodes one pre-tokenized piece of bytes with the merges; appends ids. */
int amp_bpe_word(const amp_tokenizer *t, const unsigned char *s, size_t n, amp_encode_out *o);
/* Appends one id to o->ids. 0 or -1 (out of memory). */
int amp_encode_push(amp_encode_out *o, uint32_t id);

/* Compiles a split pattern (Onig syntax as the library's; PCRE2 reads the
 * patterns tokenizers use). NULL with err naming the pattern. */
void *amp_split_compile(const char *pattern, char *err, size_t errlen);
void amp_split_free(void *code);
/* GPT-2's split pattern: the ByteLevel pre-tokenizer's own (use_regex). */
extern const char amp_gpt2_split_pattern[];

/* Runs the pre-tokenizer steps and the model on valid UTF-8 text s[0..n)
 * holding no added token; s lies in the text that starts at base and is
 * total bytes long (for the progress calls). */
int amp_encode_plain(const amp_tokenizer *t, const char *s, size_t n, const char *base,
                     size_t total, amp_encode_out *o, char *err, size_t errlen);

/* A new tokenizer with the 256 bytes' ids unset; amp_tokenizer_finish checks
 * and fills them once the vocabulary is in. */
amp_tokenizer *amp_tokenizer_new(void);
int amp_tokenizer_add_vocab(amp_tokenizer *t, const char *text, size_t len, uint32_t id);
int amp_tokenizer_add_merge(amp_tokenizer *t, const char *name, const char *a, size_t alen,
                            const char *b, size_t blen, uint32_t rank, char *err, size_t errlen);
int amp_tokenizer_finish(amp_tokenizer *t, const char *name, char *err, size_t errlen);

#endif
