/* Backend-independent helpers of the op table. */
#include "backend/backend.h"

#include <stdio.h>

int amp_backend_missing(amp_backend *be, const char *op) {
    snprintf(be->err, sizeof be->err,
             "backend '%s' has no op '%s' (this model needs it; run on a backend that has it)",
             be->ops->name, op);
    return 1;
}
