/* A split of token files ([data] train_tokens / val_tokens): one file or
 * the shards a glob matches, in sorted order, each memory-mapped read-only
 * (no size cap: the batcher copies windows of T + 1 tokens out of the
 * mapping). Opening checks every file before training: its layout
 * (token_header.h) and every token id in [0, vocab), streamed through the
 * mapping in bounded chunks, and hashes the whole file on the way (the
 * resume fingerprint). A window lies inside one shard; the valid starts of
 * all shards are numbered shard after shard, so one uniform draw over them
 * is nanoGPT's get_batch on a single file. */
#ifndef AMP_TOKEN_FILES_H
#define AMP_TOKEN_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "data_id.h"
#include "token_header.h"

typedef struct amp_token_shard {
    amp_data_source src;      /* the absolute path and what fstat said when opened */
    amp_token_layout layout;
    const unsigned char *map; /* the whole file, read-only; NULL when it is empty */
    size_t map_len;
    char sha256[65];          /* of the whole file, taken while validating */
} amp_token_shard;

typedef struct amp_token_split {
    amp_token_shard *shards;
    int nshards;
    int64_t n;      /* tokens in all shards */
    int64_t starts; /* valid window starts in all shards */
    int64_t *first; /* [nshards + 1]: starts before shard k */
} amp_token_split;

/* Opens what pattern names (a path or a glob(3) pattern); key ("[data]
 * train_tokens") names the setting in messages. T: the window length (a
 * shard of at most T tokens holds no window). 0; 2 with err naming the key
 * or the file (and the byte offset where it applies) for bad data; 1 when
 * out of memory. On failure *s is closed. */
int amp_token_split_open(amp_token_split *s, const char *key, const char *pattern,
                         amp_token_format format, int64_t vocab, int T, char *err, size_t errlen);
void amp_token_split_close(amp_token_split *s);

/* Window `start` (0 <= start < s->starts) as x[T] and y[T] (y shifted by one). */
void amp_token_split_window(const amp_token_split *s, int64_t start, int T, int32_t *x, int32_t *y);

/* "file <sha256> <bytes> <path>" per shard (data_id.h); -1 with err when a
 * shard is no longer the file that was opened. */
int amp_token_split_fingerprint(const amp_token_split *s, FILE *f, char *err, size_t errlen);

#endif
