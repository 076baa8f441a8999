/* [data] dataset = tokens: token ids from files (token_files.h), nanoGPT's
 * `.bin`, llm.c's shards or `.npy`, for [data] train_tokens and val_tokens,
 * in windows of [model] block_size (windows.h: the text dataset's
 * windows); the vocabulary is [data] vocab_size, or that of [data]
 * tokenizer. Every file is checked and hashed when the run opens it. */
#include <inttypes.h>
#include <stdlib.h>

#include <string.h>

#include "data/dataset.h"
#include "data/token_files.h"
#include "text_bpe.h"
#include "data/windows.h"

struct amp_tokens {
    amp_token_split split[2]; /* AMP_WINDOWS_TRAIN, AMP_WINDOWS_VAL */
    int64_t vocab;            /* [data] vocab_size, else the tokenizer's */
};

static int open_tokens(amp_data_view *d, const char *unused, char *err, size_t errlen) {
    (void)unused;
    const amp_settings *st = d->set;
    const char *need = !st->train_tokens[0] ? "train_tokens" : !st->val_tokens[0] ? "val_tokens"
                       : st->vocab_size == 0 && strcmp(st->tokenizer, "none") == 0
                           ? "vocab_size (or a [data] tokenizer)" : NULL;
    if (need) {
        snprintf(err, errlen, "[data] dataset = tokens needs [data] %s (see docs/datasets.md, "
                 "\"Token files\")", need);
        return 2;
    }
    int64_t vocab;
    amp_tokenizer *tok;
    int rc = amp_data_tokenizer(st, &tok, &vocab, err, errlen);
    amp_tokenizer_free(tok);
    if (rc != 0) return rc;
    d->tokens = calloc(1, sizeof *d->tokens);
    if (!d->tokens) {
        snprintf(err, errlen, "out of host memory");
        return 1;
    }
    d->tokens->vocab = vocab;
    const char *keys[2] = {"[data] train_tokens", "[data] val_tokens"};
    const char *given[2] = {st->train_tokens, st->val_tokens};
    for (int i = 0; i < 2; i++) {
        rc = amp_token_split_open(&d->tokens->split[i], keys[i], given[i],
                                      (amp_token_format)st->token_format, vocab,
                                      st->block_size, err, errlen);
        if (rc != 0) return rc;
    }
    d->train->n = d->tokens->split[AMP_WINDOWS_TRAIN].n; /* the sizes checkpoints compare */
    d->test->n = d->tokens->split[AMP_WINDOWS_VAL].n;
    return 0;
}

static void close_tokens(amp_data_view *d) {
    if (!d->tokens) return;
    for (int i = 0; i < 2; i++) amp_token_split_close(&d->tokens->split[i]);
    free(d->tokens);
    d->tokens = NULL;
}

/* Windows of block_size tokens, a label per token. */
static void describe(const amp_data_view *d, amp_model_input *in) {
    in->features = in->targets = d->set->block_size;
    in->channels = in->height = in->width = 0;
    in->classes = (int)d->tokens->vocab;
    in->x_is_tokens = 1;
}

static int64_t train_rows(const amp_data_view *d) {
    return d->tokens->split[AMP_WINDOWS_TRAIN].n / d->set->block_size;
}

static void copy(const void *ctx, int split, int64_t start, int T, int32_t *x, int32_t *y) {
    amp_token_split_window(&((const struct amp_tokens *)ctx)->split[split], start, T, x, y);
}

static amp_batcher *batcher(amp_data_view *d) {
    const amp_settings *st = d->set;
    const amp_token_split *s = d->tokens->split;
    amp_window_source src = {s[AMP_WINDOWS_TRAIN].n,
                             {s[AMP_WINDOWS_TRAIN].starts, s[AMP_WINDOWS_VAL].starts}, copy,
                             d->tokens};
    return amp_batcher_windows_create(&src, st->seed, st->batch_size, st->block_size,
                                      st->eval_iters * st->batch_size);
}

/* Each file's SHA-256, taken while it was checked. */
static int fingerprint(amp_data_view *d, FILE *f, char *err, size_t errlen) {
    for (int i = 0; i < 2; i++)
        if (amp_token_split_fingerprint(&d->tokens->split[i], f, err, errlen) != 0) return -1;
    return 0;
}

static void source(const amp_data_view *d, char *out, size_t outlen) {
    const amp_token_split *s = d->tokens->split;
    int more = s[0].nshards + s[1].nshards - 1;
    snprintf(out, outlen, "%s (and %d more file%s)", s[0].shards[0].src.path, more,
             more == 1 ? "" : "s");
}

const amp_data_kind amp_data_tokens = {
    .name = "tokens",
    .kind = AMP_DATA_TOKENS,
    .open = open_tokens,
    .close = close_tokens,
    .describe = describe,
    .train_rows = train_rows,
    .batcher = batcher,
    .fingerprint = fingerprint,
    .source = source,
    .eval_is_validation = 1,
};
