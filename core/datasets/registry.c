/* The one place that maps [data] dataset to a dataset kind. */
#include <string.h>

#include "data/dataset.h"

extern const amp_data_kind amp_data_fashion_mnist;
extern const amp_data_kind amp_data_tiny;
extern const amp_data_kind amp_data_text;
extern const amp_data_kind amp_data_tokens;

static const amp_data_kind *const registry[] = {&amp_data_fashion_mnist, &amp_data_tiny,
                                                &amp_data_text, &amp_data_tokens, NULL};

const amp_data_kind *amp_data_kind_of(const amp_settings *st) {
    for (int i = 0; registry[i]; i++)
        if (registry[i]->kind == st->dataset) return registry[i];
    return registry[0]; /* unreachable: the settings accept the registry's kinds only */
}

const amp_data_kind *const *amp_data_kinds(void) { return registry; }

const char *const *amp_data_kind_names(void) {
    static const char *names[sizeof registry / sizeof registry[0]];
    for (size_t i = 0; registry[i]; i++) names[i] = registry[i]->name;
    return names;
}

void amp_data_rows_describe(const amp_data_view *d, amp_model_input *in) {
    in->features = d->train->features;
    in->channels = d->train->rows > 0 ? 1 : 0;
    in->height = d->train->rows;
    in->width = d->train->cols;
    in->classes = d->train->classes;
    in->targets = 1;
}

int64_t amp_data_rows_train_rows(const amp_data_view *d) { return d->train->n; }

amp_batcher *amp_data_rows_batcher(amp_data_view *d) {
    return amp_batcher_rows_create(d->train, d->test, d->set->seed, d->set->shuffle,
                                   d->set->batch_size);
}
