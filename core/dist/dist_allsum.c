/* amp_dist_grads_allsum (dist_allsum.h): the transport the session's
 * gradients travel by also carries the synchronised batch-norm sums. */
#include "dist/dist_allsum.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "dist/dist_internal.h"

int amp_dist_grads_allsum(amp_dist_grads *g, amp_dist *d, double *v, size_t n, char *err,
                          size_t errlen) {
    if (!g || n == 0) return 0;
    if (n > INT_MAX) {
        snprintf(err, errlen, "a sum of %zu values over the ranks is more than one call moves", n);
        return -1;
    }
#if AMP_HAVE_NCCL
    if (strcmp(g->tr->name, "nccl") == 0) return amp_dist_nccl_allsum(g, v, n, err, errlen);
#endif
    return amp_dist_sum(d, v, (int)n, err, errlen);
}
