/* Keys that came after runs had already been saved, with the value such a
 * run used. A saved config (a checkpoint's, a run folder's config.ini) that
 * lacks one ran with that value, not with the key's new default: a resume
 * compares against it and `sample` rebuilds the model with it, so neither
 * switches an older run's math silently. */
#ifndef AMP_IMPLIED_KEYS_H
#define AMP_IMPLIED_KEYS_H

#include <stddef.h>

#include "io/config.h"

typedef struct amp_implied_key {
    const char *model; /* the [model] name it applies to; "*": every model (after the named) */
    const char *section, *key, *value;
} amp_implied_key;

/* 1 when k applies to a run of [model] name `model`. */
int amp_implied_key_applies(const amp_implied_key *k, const char *model);

extern const amp_implied_key amp_implied_keys[];
extern const size_t amp_implied_key_count;

/* Sets in cfg, a saved run's config, every implied key it lacks. 0, or -1
 * with err. */
int amp_config_set_implied(amp_config *cfg, char *err, size_t errlen);

#endif
