/* [data] tokenizer on the text dataset: the corpus encoded with a byte-level
 * BPE tokenizer (tokenizer/tokenizer.h) as the run opens it, instead of one
 * id per character. The last floor(n / 10) of the n ids validate, the rest
 * train: the split `amptrain tokenize` writes with its default
 * --val-fraction 0.1, so the text dataset with a tokenizer and the tokens
 * dataset on that command's train.bin/val.bin see the same windows. */
#ifndef AMP_TEXT_BPE_H
#define AMP_TEXT_BPE_H

#include "data/dataset.h"
#include "tokenizer/tokenizer.h"

/* [data] tokenizer (NULL in *tok when it is `none`) and the vocabulary:
 * [data] vocab_size, at least the tokenizer's, else the tokenizer's. 0, or
 * 2 with err (the key named) for bad settings or files, 1 otherwise. */
int amp_data_tokenizer(const amp_settings *st, amp_tokenizer **tok, int64_t *vocab, char *err,
                       size_t errlen);

/* Reads path (the shipped corpus checked against expect_sha256 when it is
 * that file) and encodes it with [data] tokenizer into d->bpe. 0, or 2/1
 * with err as amp_data_kind.open. */
int amp_text_bpe_open(amp_data_view *d, const char *path, const char *expect_sha256, char *err,
                      size_t errlen);
void amp_text_bpe_close(amp_data_view *d);
void amp_text_bpe_describe(const amp_data_view *d, amp_model_input *in);
int64_t amp_text_bpe_train_rows(const amp_data_view *d);
amp_batcher *amp_text_bpe_batcher(amp_data_view *d);
/* The corpus's line and one per tokenizer file (data_id.h). */
int amp_text_bpe_fingerprint(amp_data_view *d, FILE *f, char *err, size_t errlen);
/* vocab.json: {"vocab_size", "tokenizer", "data", "sha256"}. 0, or -1. */
int amp_text_bpe_write_vocab(const amp_data_view *d, FILE *f);
const char *amp_text_bpe_path(const amp_data_view *d);

#endif
