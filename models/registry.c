/* The one place that maps [model] name to a model. Test programs may add
 * models of their own with amp_model_register (tests/testmodel/). */
#include <string.h>

#include "model.h"

extern const amp_model_ops amp_model_mlp;
extern const amp_model_ops amp_model_gpt;

#define MAX_MODELS 16

static const amp_model_ops *registry[MAX_MODELS + 1] = {&amp_model_mlp, &amp_model_gpt};
static const char *names[MAX_MODELS + 1] = {"mlp", "gpt"};

const amp_model_ops *amp_model_find(const char *name) {
    for (int i = 0; registry[i]; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

const char *const *amp_model_names(void) { return names; }

int amp_model_register(const amp_model_ops *ops) {
    int n = 0;
    while (registry[n]) n++;
    if (n == MAX_MODELS || amp_model_find(ops->name)) return -1;
    registry[n] = ops;
    names[n] = ops->name;
    return 0;
}
