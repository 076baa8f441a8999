#include <stdio.h>

#include "backend/backend.h"

int amp_backend_missing(amp_backend *be, const char *op) {
    snprintf(be->err, sizeof be->err,
             "backend '%s' has no op '%s' (this model needs it; use another [run] device)",
             be->ops->name, op);
    return 1;
}
