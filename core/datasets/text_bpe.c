/* The text dataset through a BPE tokenizer (text_bpe.h). */
#include "text_bpe.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "io/file.h"
#include "io/json.h"
#include "util/log.h"
#include "util/sha256.h"
#include "data/windows.h"

struct amp_text_bpe {
    uint32_t *ids;            /* [n] the whole corpus's ids */
    int64_t n, n_train;       /* the last n - n_train validate */
    int64_t vocab;            /* [data] vocab_size, else the tokenizer's */
    char path[PATH_MAX];      /* the corpus, absolute */
    char sha256[65];
    int64_t bytes;
    int nfiles;               /* the tokenizer's files (tokenizer.json, or vocab.json + merges.txt) */
    char file[2][PATH_MAX];
    char file_sha[2][65];
    int64_t file_bytes[2];
};

int amp_data_tokenizer(const amp_settings *st, amp_tokenizer **tok, int64_t *vocab, char *err,
                       size_t errlen) {
    *tok = NULL;
    *vocab = st->vocab_size;
    if (strcmp(st->tokenizer, "none") == 0) return 0;
    char why[1536];
    *tok = amp_tokenizer_load(st->tokenizer, why, sizeof why);
    if (!*tok) {
        snprintf(err, errlen, "[data] tokenizer: %s", why);
        return 2;
    }
    int64_t tv = amp_tokenizer_vocab_size(*tok);
    if (*vocab == 0) *vocab = tv;
    if (*vocab < tv) {
        snprintf(err, errlen, "[data] vocab_size = %" PRId64 " is smaller than the vocabulary of "
                 "[data] tokenizer %s (%" PRId64 ")", *vocab, st->tokenizer, tv);
        amp_tokenizer_free(*tok);
        *tok = NULL;
        return 2;
    }
    return 0;
}

/* Each file the tokenizer was read from, hashed: a changed tokenizer
 * changes the ids, so a resume must see the same one. */
static int hash_tokenizer(struct amp_text_bpe *b, const char *path, char *err, size_t errlen) {
    b->nfiles = amp_tokenizer_files(path, b->file[0], b->file[1]);
    for (int i = 0; i < b->nfiles; i++) {
        char *buf, abs[PATH_MAX];
        size_t len;
        if (amp_file_read_all(b->file[i], (size_t)1 << 30, &buf, &len, err, errlen) != 0) return 2;
        amp_sha256 s;
        amp_sha256_init(&s);
        amp_sha256_update(&s, buf, len);
        amp_sha256_final_hex(&s, b->file_sha[i]);
        free(buf);
        b->file_bytes[i] = (int64_t)len;
        if (realpath(b->file[i], abs)) snprintf(b->file[i], PATH_MAX, "%s", abs);
    }
    return 0;
}

int amp_text_bpe_open(amp_data_view *d, const char *path, const char *expect_sha256, char *err,
                      size_t errlen) {
    const amp_settings *st = d->set;
    amp_tokenizer *tok;
    int64_t vocab;
    int rc = amp_data_tokenizer(st, &tok, &vocab, err, errlen);
    if (rc != 0) return rc;
    struct amp_text_bpe *b = d->bpe = calloc(1, sizeof *b);
    char *text = NULL;
    size_t n = 0;
    rc = 1;
    if (!b) {
        snprintf(err, errlen, "out of host memory");
        goto done;
    }
    b->vocab = vocab;
    rc = 2;
    if (hash_tokenizer(b, st->tokenizer, err, errlen) != 0 ||
        amp_text_read(path, expect_sha256, &text, &n, b->sha256, b->path, sizeof b->path, err,
                      errlen) != 0)
        goto done;
    b->bytes = (int64_t)n;
    amp_encode_out o = {0};
    rc = 1;
    if (amp_tokenizer_encode(tok, text, n, &o, err, errlen) != 0) {
        free(o.ids);
        goto done;
    }
    if (o.replaced)
        amp_log(AMP_LOG_WARN, "%s: %zu invalid UTF-8 sequences replaced by U+FFFD before "
                "encoding (the first at byte %zu)", path, o.replaced, o.first_bad);
    b->ids = o.ids;
    b->n = (int64_t)o.n;
    b->n_train = b->n - b->n / 10; /* amptrain tokenize's split: floor(n * 0.1) validate */
    int64_t T = st->block_size, nval = b->n - b->n_train;
    rc = 2;
    if (b->n_train <= T + 1 || nval <= T + 1) {
        snprintf(err, errlen, "%s: %" PRId64 " tokens of [data] tokenizer %s (%" PRId64 " train, %"
                 PRId64 " validation) are too few for windows of [model] block_size = %" PRId64
                 "; each split needs more than block_size + 1", path, b->n, st->tokenizer,
                 b->n_train, nval, T);
        goto done;
    }
    d->train->n = b->n_train; /* the size checkpoints compare */
    rc = 0;
done:
    free(text);
    amp_tokenizer_free(tok);
    return rc;
}

void amp_text_bpe_close(amp_data_view *d) {
    if (!d->bpe) return;
    free(d->bpe->ids);
    free(d->bpe);
    d->bpe = NULL;
}

void amp_text_bpe_describe(const amp_data_view *d, amp_model_input *in) {
    in->features = in->targets = d->set->block_size;
    in->channels = in->height = in->width = 0;
    in->classes = (int)d->bpe->vocab;
    in->x_is_tokens = 1;
}

int64_t amp_text_bpe_train_rows(const amp_data_view *d) {
    return d->bpe->n_train / d->set->block_size;
}

static void copy(const void *ctx, int split, int64_t start, int T, int32_t *x, int32_t *y) {
    const struct amp_text_bpe *b = ctx;
    const uint32_t *src = b->ids + (split == AMP_WINDOWS_VAL ? b->n_train : 0) + start;
    for (int i = 0; i < T; i++) x[i] = (int32_t)src[i], y[i] = (int32_t)src[i + 1];
}

amp_batcher *amp_text_bpe_batcher(amp_data_view *d) {
    const amp_settings *st = d->set;
    const struct amp_text_bpe *b = d->bpe;
    int64_t T = st->block_size;
    amp_window_source src = {b->n_train, {b->n_train - T, b->n - b->n_train - T}, copy, b};
    return amp_batcher_windows_create(&src, st->seed, st->batch_size, st->block_size,
                                      st->eval_iters * st->batch_size);
}

int amp_text_bpe_fingerprint(amp_data_view *d, FILE *f, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    const struct amp_text_bpe *b = d->bpe;
    fprintf(f, "file %s %" PRId64 " %s\n", b->sha256, b->bytes, b->path);
    for (int i = 0; i < b->nfiles; i++)
        fprintf(f, "file %s %" PRId64 " %s\n", b->file_sha[i], b->file_bytes[i], b->file[i]);
    return 0;
}

/* What the character run's vocab.json says, with the tokenizer in place of
 * the bytes: `sample` decodes through [data] tokenizer, not this file. */
int amp_text_bpe_write_vocab(const amp_data_view *d, FILE *f) {
    const struct amp_text_bpe *b = d->bpe;
    fprintf(f, "{\n  \"vocab_size\": %" PRId64 ",\n  \"tokenizer\": ", b->vocab);
    amp_json_str(f, d->set->tokenizer);
    fputs(",\n  \"data\": ", f);
    amp_json_str(f, b->path);
    fputs(",\n  \"sha256\": ", f);
    amp_json_str(f, b->sha256);
    fputs("\n}\n", f);
    return ferror(f) ? -1 : 0;
}

const char *amp_text_bpe_path(const amp_data_view *d) { return d->bpe->path; }
