/* The gradient buckets, whatever carries them (MPI or NCCL): planned in
 * backward order, posted as soon as their tensors are final, waited for
 * after backward (dist.h). */
#include "dist/dist_internal.h"
#include "dist/dist_state.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernels/convert.h"
#include "util/log.h"

/* ---- buckets (any transport) ---- */

void amp_dist_grads_close(amp_dist_grads *g) {
    if (!g) return;
    if (g->tr && g->failed && g->tr->abort)
        g->tr->abort(g); /* the peers may be gone: wait for nothing */
    else if (g->tr && g->tr->close)
        g->tr->close(g);
    dist_slots_close(g);
    if (g->wire) g->be->ops->release(g->be, g->wire);
    free(g->tensors);
    free(g->tensor_bucket);
    free(g->buckets);
    free(g);
}

/* Buckets in backward order: walking the tensors from the last, a bucket
 * closes once it holds bucket_bytes of f32 gradients (a bigger tensor makes
 * a bucket of its own) or would pass INT_MAX elements (MPI counts). */
static int plan_buckets(dist_grads *g, size_t bucket_bytes, char *err, size_t errlen) {
    g->buckets = calloc((size_t)g->ntensors, sizeof *g->buckets);
    g->tensor_bucket = calloc((size_t)g->ntensors, sizeof *g->tensor_bucket);
    if (!g->buckets || !g->tensor_bucket) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    size_t target = bucket_bytes / sizeof(float);
    if (target == 0) target = 1;
    int t = g->ntensors - 1;
    while (t >= 0) {
        dist_bucket *b = &g->buckets[g->nbuckets];
        int last = t;
        size_t count = 0;
        while (t >= 0 && (count == 0 || (count < target &&
                                         count + g->tensors[t].numel <= (size_t)INT_MAX))) {
            count += g->tensors[t].numel;
            t--;
        }
        if (count > (size_t)INT_MAX) {
            snprintf(err, errlen, "parameter tensor %d has %zu elements; one message holds at most %d",
                     last, g->tensors[last].numel, INT_MAX);
            return -1;
        }
        b->first = t + 1;
        b->ntensors = last - t;
        b->offset = g->tensors[b->first].offset;
        b->count = count;
        for (int i = b->first; i <= last; i++) g->tensor_bucket[i] = g->nbuckets;
        g->nbuckets++;
    }
    return 0;
}

int amp_dist_grads_open(amp_dist_grads **out, amp_dist *d, amp_backend *be, float *grads,
                        const amp_dist_tensor *tensors, int ntensors, size_t shard,
                        int shard_grads, char *err, size_t errlen) {
    *out = NULL;
    if (!d || d->world == 1) return 0;
    dist_grads *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    g->be = be;
    g->grads = grads;
    g->ntensors = ntensors;
    g->dtype = d->set.grad_dtype;
    g->rank = d->rank;
    g->world = d->world;
    g->local_rank = d->local_rank;
    g->timeout_s = d->set.timeout_s;
    if (d->test_fail_step > 0 && d->test_fail_rank == d->rank) g->fail_step = d->test_fail_step;
    g->tensors = malloc((size_t)(ntensors > 0 ? ntensors : 1) * sizeof *g->tensors);
    if (!g->tensors) {
        snprintf(err, errlen, "out of host memory");
        goto fail;
    }
    memcpy(g->tensors, tensors, (size_t)ntensors * sizeof *tensors);
    for (int i = 0; i < ntensors; i++) {
        if (i > 0 && tensors[i].offset != tensors[i - 1].offset + tensors[i - 1].numel) {
            snprintf(err, errlen, "parameter tensor %d is not contiguous with the one before it", i);
            goto fail;
        }
        g->nparams = tensors[i].offset + tensors[i].numel;
    }
    if (plan_buckets(g, d->set.bucket_bytes, err, errlen) != 0) goto fail;
    /* shard = none cuts the sums by an even split of the whole array (any
     * split adds the same numbers in the same order) */
    g->keep_shard = shard > 0;
    g->part = shard > 0 ? shard : (g->nparams + (size_t)g->world - 1) / (size_t)g->world;
    if (shard_grads && shard > 0) {
        g->grads_lo = (size_t)g->rank * shard;
        if (dist_slots_open(g, err, errlen) != 0) goto fail;
    }
    if (g->dtype == AMP_DIST_BF16) {
        /* with slots the buckets are rounded in them; the wire keeps the sums */
        g->wire_elems = g->bucket_slot ? g->part : g->nparams;
        g->wire = be->ops->alloc(be, g->wire_elems * sizeof(uint16_t));
        if (!g->wire) {
            snprintf(err, errlen, "the bf16 gradient buffer: %s", be->err);
            goto fail;
        }
    }
    if (be->device == AMP_DEVICE_CUDA) {
#if AMP_HAVE_NCCL
        if (amp_dist_nccl_open(d, g, err, errlen) != 0) goto fail;
#else
        snprintf(err, errlen,
                 "[run] device = cuda on %d ranks needs NCCL for the gradients, and this amptrain "
                 "was built without it; use [run] device = cpu or rebuild with NCCL",
                 d->world);
        goto fail;
#endif
    } else if (amp_dist_mpi_grads_open(d, g, err, errlen) != 0) {
        goto fail;
    }
    *out = g;
    amp_log(AMP_LOG_DEBUG, "gradients of %zu parameters in %d bucket%s of about %zu KiB, as %s over %s",
            g->nparams, g->nbuckets, g->nbuckets == 1 ? "" : "s", d->set.bucket_bytes >> 10,
            g->dtype == AMP_DIST_BF16 ? "bf16" : "f32", g->tr->name);
    return 0;
fail:
    amp_dist_grads_close(g);
    return -1;
}

void amp_dist_grads_begin(amp_dist_grads *g, int64_t step) {
    if (!g) return;
    g->comm_ms = 0.0;
    g->step = step;
    g->next = 0;
    g->early = 0;
    g->sent = 0;
    for (int k = 0; k < g->nbuckets; k++)
        g->buckets[k].ready = g->buckets[k].posted = g->buckets[k].phase = 0;
    dist_slots_begin(g);
}

/* Posts bucket k: for bf16, rounds its tensors into the wire buffer (or
 * its slot's copy) first (counted into each tensor's layer, like any
 * rounding into 16 bits). */
static int post_bucket(dist_grads *g, int k, char *err, size_t errlen) {
    dist_bucket *b = &g->buckets[k];
    if (g->dtype == AMP_DIST_BF16) {
        uint16_t *wire = g->bucket_slot ? (uint16_t *)dist_slot_send(g, k) : g->wire + b->offset;
        for (int t = b->first; t < b->first + b->ntensors; t++) {
            const amp_dist_tensor *T = &g->tensors[t];
            const float *grad = g->bucket_slot ? amp_dist_grads_slot(g, t) : g->grads + T->offset;
            if (g->be->ops->round(g->be, wire + (T->offset - b->offset), AMP_DTYPE_BF16, grad,
                                  T->numel, T->grad_cnt) != 0) {
                snprintf(err, errlen, "rounding gradients to bf16: %s", g->be->err);
                return -1;
            }
        }
    }
    b->posted = 1;
    if (g->fail_step == g->step + 1 && k == 0) {
        snprintf(err, errlen, "the gradient collective of bucket 0 failed at step %lld "
                 "(amp_dist_test_fail_collective)", (long long)g->step + 1);
        return -1;
    }
    return g->tr->post(g, k, err, errlen);
}

int amp_dist_grads_ready(amp_dist_grads *g, int first, int count, char *err, size_t errlen) {
    if (!g) return 0;
    double t0 = amp_clock_ms();
    for (int t = first; t < first + count && t < g->ntensors; t++)
        if (t >= 0) g->buckets[g->tensor_bucket[t]].ready++;
    /* Buckets leave in their fixed order, so every rank posts the same
     * collectives in the same sequence whatever order tensors arrive in. */
    int rc = 0;
    while (rc == 0 && g->next < g->nbuckets &&
           g->buckets[g->next].ready >= g->buckets[g->next].ntensors) {
        rc = post_bucket(g, g->next, err, errlen);
        g->next++;
        g->early++;
    }
    if (rc == 0) rc = g->tr->progress(g, err, errlen);
    if (g->tr->host_timed) g->comm_ms += amp_clock_ms() - t0;
    if (rc != 0) g->failed = 1;
    return rc;
}

int amp_dist_grads_end(amp_dist_grads *g, char *err, size_t errlen) {
    if (!g) return 0;
    double t0 = amp_clock_ms();
    int rc = 0;
    while (rc == 0 && g->next < g->nbuckets) {
        rc = post_bucket(g, g->next, err, errlen);
        g->next++;
    }
    if (rc == 0) rc = g->tr->wait(g, err, errlen);
    if (rc != 0) g->failed = 1;
    /* sharded: only this rank's piece holds sums */
    size_t lo = 0, n = g->nparams;
    if (g->keep_shard) {
        lo = (size_t)g->rank * g->part < n ? (size_t)g->rank * g->part : n;
        n = n - lo < g->part ? n - lo : g->part;
    }
    if (rc == 0 && g->dtype == AMP_DIST_BF16 && n > 0 &&
        g->be->ops->widen(g->be, g->grads + (lo - g->grads_lo), g->wire + (lo - g->grads_lo),
                          AMP_DTYPE_BF16, n) != 0) {
        snprintf(err, errlen, "widening the summed bf16 gradients: %s", g->be->err);
        rc = -1;
    }
    if (g->tr->host_timed) g->comm_ms += amp_clock_ms() - t0;
    return rc;
}
