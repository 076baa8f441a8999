/* A layer's tensors by PyTorch's naming: "<layer>.<member>". */
#include <stdio.h>

#include "image.h"

int amp_kit_member(const amp_model *m, const char *layer, const char *member) {
    char p[AMP_MODEL_NAME_MAX + 32];
    snprintf(p, sizeof p, "%s.%s", layer, member);
    return amp_kit_tensor(m, p);
}
