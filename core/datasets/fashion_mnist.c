/* [data] dataset = fashion_mnist: the IDX files of Fashion-MNIST (or any
 * IDX pair of the same layout) in [data] path, train and test splits. */
#include <stdio.h>

#include "data/dataset.h"

static int open_idx(amp_data_view *d, const char *dir, char *err, size_t errlen) {
    const amp_settings *st = d->set;
    if (amp_dataset_load_fashion_mnist(d->train, dir, "train", st->train_limit, err, errlen) ||
        amp_dataset_load_fashion_mnist(d->test, dir, "test", st->test_limit, err, errlen) ||
        amp_dataset_check_splits(d->train, d->test, dir, err, errlen))
        return -1;
    return 0;
}

/* The four IDX files, hashed when first asked (a run without checkpoints
 * never pays for it). */
static int fingerprint(amp_data_view *d, FILE *f, char *err, size_t errlen) {
    const amp_dataset *split[2] = {d->train, d->test};
    for (int k = 0; k < 4; k++) {
        const amp_data_source *src = &split[k / 2]->src[k % 2];
        char hex[65];
        if (amp_data_source_sha256(src, hex, err, errlen) != 0) return -1;
        fprintf(f, "file %s %llu %s\n", hex, (unsigned long long)src->size, src->path);
    }
    return 0;
}

static void source(const amp_data_view *d, char *out, size_t outlen) {
    snprintf(out, outlen, "%s (and the IDX files beside it)", d->train->src[0].path);
}

const amp_data_kind amp_data_fashion_mnist = {
    .name = "fashion_mnist",
    .kind = AMP_DATA_FASHION_MNIST,
    .open = open_idx,
    .describe = amp_data_rows_describe,
    .train_rows = amp_data_rows_train_rows,
    .batcher = amp_data_rows_batcher,
    .fingerprint = fingerprint,
    .source = source,
};
