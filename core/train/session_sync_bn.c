/* [dist] sync_batchnorm: the session's amp_allsum hook. The CNN's batch
 * norm hands its per-channel sums to the backend, which calls this in the
 * middle of the op; the sums travel with the session's gradient transport
 * (dist_allsum.h), so the statistics are those of the global batch and the
 * running statistics are the same on every rank. */
#include "session_sync_bn.h"

#include <stdio.h>

#include "dist/dist_allsum.h"

static int sync_bn_sum(void *ctx, double *v, size_t n) {
    amp_session *s = ctx;
    char err[512];
    if (amp_dist_grads_allsum(s->grads, s->dist, v, n, err, sizeof err) != 0) {
        snprintf(s->be->err, sizeof s->be->err, "sync batch norm: %s", err);
        return -1;
    }
    return 0;
}

void amp_session_sync_bn_open(amp_session *s) {
    int on = s->world > 1 && s->grads && s->set.dist_sync_batchnorm;
    s->bn_sync.sum = on ? sync_bn_sum : NULL;
    s->bn_sync.ctx = on ? s : NULL;
}

const amp_allsum *amp_session_sync_bn(const amp_session *s) {
    return s->bn_sync.sum ? &s->bn_sync : NULL;
}
