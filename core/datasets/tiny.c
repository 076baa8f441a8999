/* [data] dataset = tiny: a generated classification task (data.c's
 * amp_dataset_make_tiny), train and test drawn from the seed. */
#include <stdio.h>

#include "data/dataset.h"

static int make(amp_data_view *d, const char *path, char *err, size_t errlen) {
    (void)path; /* generated: no files */
    const amp_settings *st = d->set;
    if (amp_dataset_make_tiny(d->train, "train", st->tiny_train, st->tiny_features,
                              st->tiny_classes, st->input_scale, st->seed, err, errlen) ||
        amp_dataset_make_tiny(d->test, "test", st->tiny_test, st->tiny_features,
                              st->tiny_classes, st->input_scale, st->seed, err, errlen))
        return -1;
    return 0;
}

/* Generated: its parameters are its identity. */
static int fingerprint(amp_data_view *d, FILE *f, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    const amp_settings *st = d->set;
    fprintf(f, "generated tiny-gradient train=%lld test=%lld features=%d classes=%d "
            "input_scale=%.17g seed=%llu\n", (long long)st->tiny_train, (long long)st->tiny_test,
            st->tiny_features, st->tiny_classes, st->input_scale, (unsigned long long)st->seed);
    return 0;
}

const amp_data_kind amp_data_tiny = {
    .name = "tiny",
    .kind = AMP_DATA_TINY,
    .open = make,
    .describe = amp_data_rows_describe,
    .train_rows = amp_data_rows_train_rows,
    .batcher = amp_data_rows_batcher,
    .fingerprint = fingerprint,
};
