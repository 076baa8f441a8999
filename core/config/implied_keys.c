#include "implied_keys.h"

#include "util/log.h"

#include <stdio.h>
#include <string.h>

const amp_implied_key amp_implied_keys[] = {
    {"gpt", "model", "activation", "gelu_tanh"}, /* the GPT's only GELU before the key */
    /* batch norm took each rank's own rows before the key; the other models
     * have no batch norm, so for them the value changes nothing */
    {"cnn", "dist", "sync_batchnorm", "false"},
    {"*", "dist", "sync_batchnorm", "true"},
};
const size_t amp_implied_key_count = sizeof amp_implied_keys / sizeof amp_implied_keys[0];

int amp_implied_key_applies(const amp_implied_key *k, const char *model) {
    return strcmp(k->model, "*") == 0 || strcmp(k->model, model) == 0;
}

int amp_config_set_implied(amp_config *cfg, char *err, size_t errlen) {
    const char *model = amp_config_lookup(cfg, "model", "name", NULL);
    for (size_t i = 0; model && i < amp_implied_key_count; i++) {
        const amp_implied_key *k = &amp_implied_keys[i];
        if (!amp_implied_key_applies(k, model) || amp_config_lookup(cfg, k->section, k->key, NULL))
            continue;
        char assignment[256];
        snprintf(assignment, sizeof assignment, "%s.%s=%s", k->section, k->key, k->value);
        if (amp_config_set(cfg, assignment, err, errlen) != 0) return -1;
        amp_log(AMP_LOG_INFO, "%s: no [%s] %s: the run predates the key and ran %s = %s",
                amp_config_path(cfg), k->section, k->key, k->key, k->value);
    }
    return 0;
}
