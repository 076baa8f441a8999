/* The GPU gradient transport: ncclAllReduce on a stream of its own, so a
 * bucket is summed while the backend's stream goes on with backward.
 * Sharded ([dist] shard = optimizer), a bucket is reduce-scattered into
 * its owners' slices instead (rank r owns elements [r S, (r + 1) S)):
 * ncclReduceScatter cuts its buffer into N equal parts, so the pieces of
 * the bucket are copied into a stage of N parts of P elements (P the
 * longest piece; part r holds rank r's piece, the rest padding, whose sums
 * nobody reads), reduce-scattered in place, and the owner's part copied
 * back into its slice of the gradients; a bucket inside one rank's slice
 * goes to its owner with ncclReduce (the reduce-scatter whose other parts
 * are empty, without sending N - 1 parts of padding). The sharded weights
 * are gathered with ncclAllGather on the same stream. Each
 * bucket waits for an event recorded on the backend's stream when the model
 * reported it final; at the end the host polls the last NCCL event (bounded
 * by [dist] timeout, so a hung peer cannot hang this rank) and the backend's
 * stream is ordered after it. Rank 0's ncclUniqueId travels over MPI when
 * the first bucket is posted: by then every rank has agreed that its
 * session opened, so no rank waits in that broadcast for one that failed.
 * Built only with MPI, CUDA and NCCL (plain C against the CUDA runtime API). */
#include "dist/dist_internal.h"
#include "dist/dist_watch.h"

/* CMake builds this file only with NCCL; other globs of core/ (the fuzz
 * build) get an empty unit. */
#if AMP_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct nccl_grads {
    amp_dist *d;          /* for the unique id's broadcast */
    ncclComm_t comm;      /* NULL until the first post */
    cudaStream_t compute; /* the backend's */
    cudaStream_t stream;  /* NCCL's */
    cudaEvent_t *ready;   /* [nbuckets] recorded on compute when bucket k is final */
    cudaEvent_t done;     /* recorded on stream after the last bucket */
    int last_ready;       /* the bucket whose ready event ends backward (-1 none) */
    float exposed_ms;     /* this step: from backward's end to the last bucket summed */
    /* sharded: bucket k goes to owner[k] alone (ncclReduce), or (owner[k]
     * = -1) is reduce-scattered in parts of part[k] elements through the
     * stage (part[k] = 0: no rank owns any of it, nothing to send) */
    int *owner;           /* [nbuckets] */
    size_t *part;         /* [nbuckets] */
    void *stage;          /* (dev) world x max part[k] wire elements */
    cudaEvent_t before, gathered; /* around the weights' all-gather */
    cudaEvent_t *slot_read; /* [nslot_events] shard = gradients: recorded on stream after
                             * the last collective that reads slot i */
    int nslot_events;
} nccl_grads;

#define NCCL_TRY(expr)                                                                        \
    do {                                                                                      \
        ncclResult_t r_ = (expr);                                                             \
        if (r_ != ncclSuccess) {                                                              \
            snprintf(err, errlen, "%s failed at %s:%d: %s", #expr, __FILE__, __LINE__,         \
                     ncclGetErrorString(r_));                                                 \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)
#define CUDA_TRY(expr)                                                                        \
    do {                                                                                      \
        cudaError_t e_ = (expr);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            snprintf(err, errlen, "%s failed at %s:%d: %s (%s)", #expr, __FILE__, __LINE__,    \
                     cudaGetErrorName(e_), cudaGetErrorString(e_));                           \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)

int amp_dist_nccl_device_count(int *count, char *err, size_t errlen) {
    *count = 0;
    cudaError_t e = cudaGetDeviceCount(count);
    if (e == cudaErrorNoDevice) {
        *count = 0;
        return 0;
    }
    CUDA_TRY(e);
    return 0;
}

int amp_dist_nccl_open_device(int device, unsigned char uuid[16], char *err, size_t errlen) {
    struct cudaDeviceProp p;
    CUDA_TRY(cudaSetDevice(device));
    CUDA_TRY(cudaGetDeviceProperties(&p, device));
    memcpy(uuid, p.uuid.bytes, 16);
    return 0;
}

/* ncclCommInitRank waits for every rank with no timeout of its own: a
 * watchdog (dist_watch.h) ends this rank when it is late. */
static void init_was_late(void *arg) {
    const dist_grads *g = arg;
    amp_dist_fatal(g->rank,
                   "ncclCommInitRank did not finish within [dist] timeout = %g s (a rank died "
                   "or hangs before joining NCCL, or the GPUs cannot reach each other: "
                   "NCCL_DEBUG=INFO says why)",
                   g->timeout_s);
}

/* The communicator, on first use (see the file comment). */
static int nccl_connect(dist_grads *g, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (g->rank == 0) NCCL_TRY(ncclGetUniqueId(&id));
    if (amp_dist_bcast(n->d, &id, sizeof id, err, errlen) != 0) return -1;
    amp_dist_watch *watch = amp_dist_watch_start(g->timeout_s, init_was_late, g);
    ncclResult_t r = ncclCommInitRank(&n->comm, g->world, id, g->rank);
    amp_dist_watch_stop(watch);
    NCCL_TRY(r);
    return 0;
}

/* Sharded: bucket k's sums into its owners' slices (see the file
 * comment), on NCCL's stream. src: the bucket's first value as it travels
 * (in the flat array, or in its slot under shard = gradients); sums: where
 * this rank's sums go, indexed from grads_lo (the gradients, or the bf16
 * wire). */
static int post_shard(dist_grads *g, int k, char *src, char *sums, ncclDataType_t type,
                      char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    const dist_bucket *b = &g->buckets[k];
    size_t es = dist_esize(g), P = n->part[k], lo, len;
    if (n->owner[k] >= 0) { /* the whole bucket is the owner's */
        char *dst = g->rank == n->owner[k] ? sums + (b->offset - g->grads_lo) * es : src;
        NCCL_TRY(ncclReduce(src, dst, b->count, type, ncclSum, n->owner[k], n->comm, n->stream));
        return 0;
    }
    if (P == 0) return 0;
    char *st = n->stage, *mine = st + (size_t)g->rank * P * es;
    for (int r = 0; r < g->world; r++) {
        dist_piece(g, r, b->offset, b->count, &lo, &len);
        if (len)
            CUDA_TRY(cudaMemcpyAsync(st + (size_t)r * P * es, src + (lo - b->offset) * es,
                                     len * es, cudaMemcpyDeviceToDevice, n->stream));
    }
    NCCL_TRY(ncclReduceScatter(st, mine, P, type, ncclSum, n->comm, n->stream));
    dist_piece(g, g->rank, b->offset, b->count, &lo, &len);
    if (len)
        CUDA_TRY(cudaMemcpyAsync(sums + (lo - g->grads_lo) * es, mine, len * es,
                                 cudaMemcpyDeviceToDevice, n->stream));
    return 0;
}

/* shard = gradients: bucket k's slot is free for another bucket once
 * NCCL's stream has passed what is queued now (nccl_reuse waits for it). */
static int release_slot(dist_grads *g, int k, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    int i = g->bucket_slot[k];
    if (i >= n->nslot_events) {
        cudaEvent_t *ev = realloc(n->slot_read, (size_t)(i + 1) * sizeof *ev);
        if (!ev) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        n->slot_read = ev;
        for (; n->nslot_events <= i; n->nslot_events++)
            CUDA_TRY(cudaEventCreateWithFlags(&n->slot_read[n->nslot_events],
                                              cudaEventDisableTiming));
    }
    CUDA_TRY(cudaEventRecord(n->slot_read[i], n->stream));
    dist_slot_release(g, k);
    return 0;
}

/* Before slot i is zeroed for another bucket, on the backend's stream:
 * after NCCL's reads of it (a slot never released has no event yet). */
static int nccl_reuse(dist_grads *g, int i, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    if (i < n->nslot_events) CUDA_TRY(cudaStreamWaitEvent(n->compute, n->slot_read[i], 0));
    return 0;
}

static int nccl_post(dist_grads *g, int k, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    const dist_bucket *b = &g->buckets[k];
    if (!n->comm && nccl_connect(g, err, errlen) != 0) return -1;
    /* shard = gradients: a bucket nothing wrote into takes its slot, zeroed
     * on the backend's stream, before the event NCCL waits for */
    char *slot = g->bucket_slot ? dist_slot_send(g, k) : NULL;
    CUDA_TRY(cudaEventRecord(n->ready[k], n->compute));
    CUDA_TRY(cudaStreamWaitEvent(n->stream, n->ready[k], 0));
    n->last_ready = k;
    /* counted as MPI's direct sends move it (dist.h) */
    g->sent += dist_scatter_bytes(g, k) + dist_gather_bytes(g, k);
    int bf16 = g->dtype == AMP_DIST_BF16;
    char *base = bf16 ? (char *)g->wire : (char *)g->grads;
    ncclDataType_t type = bf16 ? ncclBfloat16 : ncclFloat32;
    if (slot)
        return post_shard(g, k, slot, base, type, err, errlen) != 0
                   ? -1
                   : release_slot(g, k, err, errlen);
    char *p = base + b->offset * dist_esize(g);
    if (g->keep_shard) return post_shard(g, k, p, base, type, err, errlen);
    NCCL_TRY(ncclAllReduce(p, p, b->count, type, ncclSum, n->comm, n->stream));
    return 0;
}

static int nccl_progress(dist_grads *g, char *err, size_t errlen) {
    (void)g, (void)err, (void)errlen;
    return 0; /* NCCL runs on its own stream */
}

/* Polls ev (recorded on NCCL's stream) with a time limit, watching NCCL's
 * asynchronous errors; then orders the backend's stream after it. */
static int poll_event(dist_grads *g, cudaEvent_t ev, const char *what, char *err,
                      size_t errlen) {
    nccl_grads *n = g->impl;
    double t0 = amp_clock_ms();
    for (;;) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) CUDA_TRY(e);
        ncclResult_t async = ncclSuccess;
        if (n->comm) NCCL_TRY(ncclCommGetAsyncError(n->comm, &async));
        if (async != ncclSuccess) {
            ncclCommAbort(n->comm);
            n->comm = NULL;
            snprintf(err, errlen, "NCCL failed in %s: %s", what, ncclGetErrorString(async));
            return -1;
        }
        double waited = amp_clock_ms() - t0;
        if (waited > g->timeout_s * 1e3) {
            ncclCommAbort(n->comm); /* frees the kernels that wait for the peer */
            n->comm = NULL;
            amp_dist_fatal(g->rank,
                           "%s over NCCL at step %lld did not finish in %.0f s (a rank died, "
                           "hangs, or is more than [dist] timeout = %g s behind)",
                           what, (long long)g->step + 1, waited / 1e3, g->timeout_s);
        }
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    CUDA_TRY(cudaStreamWaitEvent(n->compute, ev, 0));
    return 0;
}

/* The end of the last bucket, bounded (poll_event). */
static int nccl_wait(dist_grads *g, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    CUDA_TRY(cudaEventRecord(n->done, n->stream));
    if (poll_event(g, n->done,
                   g->keep_shard ? "the gradient reduce-scatter" : "the gradient allreduce", err,
                   errlen) != 0)
        return -1;
    n->exposed_ms = 0.0f;
    if (n->last_ready >= 0) {
        float ms = 0.0f;
        if (cudaEventElapsedTime(&ms, n->ready[n->last_ready], n->done) == cudaSuccess && ms > 0)
            n->exposed_ms = ms;
    }
    n->last_ready = -1;
    return 0;
}

static double nccl_hidden_ms(dist_grads *g) {
    nccl_grads *n = g->impl;
    return n ? (double)n->exposed_ms : 0.0;
}

/* The sharded weights (amp_dist_grads_allgather): after the backend's
 * work that wrote this rank's block, bounded like the buckets. */
static int nccl_allgather(dist_grads *g, void *buf, size_t block, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    if (!n->comm && nccl_connect(g, err, errlen) != 0) return -1;
    char *p = buf;
    CUDA_TRY(cudaEventRecord(n->before, n->compute));
    CUDA_TRY(cudaStreamWaitEvent(n->stream, n->before, 0));
    NCCL_TRY(ncclAllGather(p + (size_t)g->rank * block, p, block, ncclUint8, n->comm, n->stream));
    CUDA_TRY(cudaEventRecord(n->gathered, n->stream));
    return poll_event(g, n->gathered, "the weights' all-gather", err, errlen);
}

/* The events, streams and buffers; the communicator is the caller's. */
static void nccl_free(dist_grads *g) {
    nccl_grads *n = g->impl;
    for (int k = 0; n->ready && k < g->nbuckets; k++)
        if (n->ready[k]) cudaEventDestroy(n->ready[k]);
    free(n->ready);
    for (int i = 0; i < n->nslot_events; i++) cudaEventDestroy(n->slot_read[i]);
    free(n->slot_read);
    free(n->owner);
    free(n->part);
    if (n->stage) g->be->ops->release(g->be, n->stage);
    if (n->done) cudaEventDestroy(n->done);
    if (n->before) cudaEventDestroy(n->before);
    if (n->gathered) cudaEventDestroy(n->gathered);
    if (n->stream) cudaStreamDestroy(n->stream);
    free(n);
    g->impl = NULL;
}

/* After a failed call, or when NCCL reports an asynchronous error: a peer
 * may be gone, so nothing waits for the stream (its kernels may wait for
 * that peer for ever); ncclCommAbort ends them. */
static void nccl_abort(dist_grads *g) {
    nccl_grads *n = g->impl;
    if (!n) return;
    if (n->comm) ncclCommAbort(n->comm);
    n->comm = NULL;
    nccl_free(g);
}

static void nccl_close(dist_grads *g) {
    nccl_grads *n = g->impl;
    if (!n) return;
    ncclResult_t async = ncclSuccess;
    if (n->comm && (ncclCommGetAsyncError(n->comm, &async) != ncclSuccess || async != ncclSuccess)) {
        nccl_abort(g);
        return;
    }
    if (n->stream) cudaStreamSynchronize(n->stream);
    if (n->comm) ncclCommDestroy(n->comm);
    n->comm = NULL;
    nccl_free(g);
}

/* host_timed = 0: the host's wait covers backward still running on the
 * GPU, so the step's communication time is the events' (hidden_ms). */
static const dist_transport nccl_transport = {"nccl",         0,          nccl_post,
                                              nccl_progress,  nccl_wait,  nccl_hidden_ms,
                                              nccl_close,     nccl_allgather, nccl_reuse,
                                              nccl_abort};

/* Sharded: how each bucket travels, and the stage for the reduce-scatters
 * (zeroed once: its padding is summed but never read). */
static int plan_shard(dist_grads *g, nccl_grads *n, char *err, size_t errlen) {
    n->owner = calloc((size_t)g->nbuckets, sizeof *n->owner);
    n->part = calloc((size_t)g->nbuckets, sizeof *n->part);
    if (!n->owner || !n->part) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    size_t widest = 0;
    for (int k = 0; k < g->nbuckets; k++) {
        const dist_bucket *b = &g->buckets[k];
        int owners = 0, last = -1;
        size_t P = 0, lo, len;
        for (int r = 0; r < g->world; r++) {
            dist_piece(g, r, b->offset, b->count, &lo, &len);
            if (len) owners++, last = r;
            if (len > P) P = len;
        }
        n->owner[k] = owners == 1 ? last : -1;
        n->part[k] = owners > 1 ? P : 0;
        if (n->part[k] > widest) widest = n->part[k];
    }
    if (!widest) return 0;
    g->stage_bytes = (size_t)g->world * widest * dist_esize(g);
    n->stage = g->be->ops->alloc(g->be, g->stage_bytes);
    if (!n->stage || g->be->ops->zero(g->be, n->stage, g->stage_bytes) != 0) {
        snprintf(err, errlen, "the reduce-scatter's stage of %zu bytes: %s", g->stage_bytes,
                 g->be->err);
        return -1;
    }
    return 0;
}

int amp_dist_nccl_open(amp_dist *d, dist_grads *g, char *err, size_t errlen) {
    nccl_grads *n = calloc(1, sizeof *n);
    if (n) n->ready = calloc((size_t)g->nbuckets, sizeof *n->ready);
    if (!n || !n->ready) {
        if (n) free(n);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    g->impl = n;
    g->tr = &nccl_transport;
    n->last_ready = -1;
    n->compute = (cudaStream_t)amp_backend_cuda_stream(g->be);
    if (!n->compute) {
        snprintf(err, errlen, "the NCCL transport needs the CUDA backend's stream");
        return -1;
    }
    CUDA_TRY(cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking));
    for (int k = 0; k < g->nbuckets; k++) CUDA_TRY(cudaEventCreate(&n->ready[k]));
    CUDA_TRY(cudaEventCreate(&n->done));
    CUDA_TRY(cudaEventCreateWithFlags(&n->before, cudaEventDisableTiming));
    CUDA_TRY(cudaEventCreateWithFlags(&n->gathered, cudaEventDisableTiming));
    n->d = d;
    return g->keep_shard ? plan_shard(g, n, err, errlen) : 0;
}

/* Sync batch norm's sums (dist_allsum.h): on NCCL's stream like the
 * buckets, so the communicator's collectives keep one order on one stream;
 * the events are released once the streams have passed them. */
int amp_dist_nccl_allsum(dist_grads *g, double *v, size_t n, char *err, size_t errlen) {
    nccl_grads *nc = g->impl;
    if (!nc->comm && nccl_connect(g, err, errlen) != 0) return -1;
    cudaEvent_t before, after;
    CUDA_TRY(cudaEventCreateWithFlags(&before, cudaEventDisableTiming));
    if (cudaEventCreateWithFlags(&after, cudaEventDisableTiming) != cudaSuccess) {
        cudaEventDestroy(before);
        snprintf(err, errlen, "cudaEventCreateWithFlags failed for the batch-norm sum");
        return -1;
    }
    int rc = -1;
    if (cudaEventRecord(before, nc->compute) != cudaSuccess ||
        cudaStreamWaitEvent(nc->stream, before, 0) != cudaSuccess) {
        snprintf(err, errlen, "ordering the batch-norm sum after the backend's stream failed");
    } else {
        ncclResult_t r = ncclAllReduce(v, v, n, ncclFloat64, ncclSum, nc->comm, nc->stream);
        if (r != ncclSuccess)
            snprintf(err, errlen, "ncclAllReduce of the batch-norm statistics failed: %s",
                     ncclGetErrorString(r));
        else if (cudaEventRecord(after, nc->stream) != cudaSuccess ||
                 cudaStreamWaitEvent(nc->compute, after, 0) != cudaSuccess)
            snprintf(err, errlen, "ordering the backend's stream after the batch-norm sum failed");
        else
            rc = 0;
    }
    cudaEventDestroy(before);
    cudaEventDestroy(after);
    return rc;
}

#endif /* AMP_HAVE_NCCL */
