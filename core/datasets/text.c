/* [data] dataset = text: a character-level corpus (text.h), windows of
 * [model] block_size tokens, the last 10% held out for validation; without
 * [data] path the shipped corpus. Writes vocab.json beside the outputs, so
 * `amptrain sample` can decode. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "data/dataset.h"
#include "text_bpe.h"

static int open_text(amp_data_view *d, const char *given, char *err, size_t errlen) {
    const amp_settings *st = d->set;
    char path[PATH_MAX], shipped[PATH_MAX];
    int have_shipped = amp_text_shipped_path(shipped, sizeof shipped) == 0;
    if (st->path_given)
        snprintf(path, sizeof path, "%s", given);
    else if (have_shipped)
        snprintf(path, sizeof path, "%s", shipped);
    else { /* shipped holds where it is expected */
        snprintf(err, errlen, "[data] dataset = text without [data] path reads the shipped corpus "
                 AMP_TEXT_DEFAULT_FILE ", looked for at %s: not found; restore it (`git "
                 "checkout data/" AMP_TEXT_DEFAULT_FILE "` in the source tree, or install "
                 "amptrain again) or set [data] path to a text file", shipped);
        return -1;
    }
    /* The shipped corpus is checked whichever path names it. */
    const char *sha = have_shipped && amp_same_file(path, shipped) ? AMP_TEXT_DEFAULT_SHA256 : NULL;
    if (strcmp(st->tokenizer, "none") != 0) return amp_text_bpe_open(d, path, sha, err, errlen);
    if (st->vocab_size != 0) {
        snprintf(err, errlen, "[data] vocab_size = %lld on dataset = text needs a [data] tokenizer: "
                 "characters take the corpus's distinct bytes", (long long)st->vocab_size);
        return 2;
    }
    if (amp_text_load(d->text, path, sha, err, errlen) != 0 ||
        amp_text_check_windows(d->text, st->block_size, path, err, errlen) != 0)
        return -1;
    d->train->n = d->text->n_train; /* the size checkpoints compare */
    return 0;
}

/* Windows of block_size tokens, a label per token. */
static void describe(const amp_data_view *d, amp_model_input *in) {
    if (d->bpe) {
        amp_text_bpe_describe(d, in);
        return;
    }
    in->features = in->targets = d->set->block_size;
    in->channels = in->height = in->width = 0;
    in->classes = d->text->vocab;
    in->x_is_tokens = 1;
}

static int64_t train_rows(const amp_data_view *d) {
    return d->bpe ? amp_text_bpe_train_rows(d) : d->text->n_train / d->set->block_size;
}

static amp_batcher *batcher(amp_data_view *d) {
    const amp_settings *st = d->set;
    if (d->bpe) return amp_text_bpe_batcher(d);
    return amp_batcher_text_create(d->text, st->seed, st->batch_size, st->block_size,
                                   st->eval_iters * st->batch_size);
}

/* The corpus was hashed as it was loaded. */
static int fingerprint(amp_data_view *d, FILE *f, char *err, size_t errlen) {
    if (d->bpe) return amp_text_bpe_fingerprint(d, f, err, errlen);
    fprintf(f, "file %s %lld %s\n", d->text->sha256, (long long)d->text->n, d->text->path);
    return 0;
}

static void source(const amp_data_view *d, char *out, size_t outlen) {
    snprintf(out, outlen, "%s", d->bpe ? amp_text_bpe_path(d) : d->text->path);
}

static void close_text(amp_data_view *d) {
    amp_text_bpe_close(d);
    amp_text_free(d->text);
}

static int write_vocab(const amp_data_view *d, FILE *f) {
    return d->bpe ? amp_text_bpe_write_vocab(d, f) : amp_text_write_vocab(d->text, f);
}

const amp_data_kind amp_data_text = {
    .name = "text",
    .kind = AMP_DATA_TEXT,
    .open = open_text,
    .close = close_text,
    .describe = describe,
    .train_rows = train_rows,
    .batcher = batcher,
    .fingerprint = fingerprint,
    .source = source,
    .beside = "vocab.json",
    .write_beside = write_vocab,
    .eval_is_validation = 1,
};
