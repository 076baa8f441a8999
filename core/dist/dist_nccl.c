/* The GPU gradient transport: ncclAllReduce on a stream of its own, so a
 * bucket is summed while the backend's stream goes on with backward. Each
 * bucket waits for an event recorded on the backend's stream when the model
 * reported it final; at the end the host polls the last NCCL event (bounded
 * by [dist] timeout, so a hung peer cannot hang this rank) and the backend's
 * stream is ordered after it. Rank 0's ncclUniqueId travels over MPI when
 * the first bucket is posted: by then every rank has agreed that its
 * session opened, so no rank waits in that broadcast for one that failed.
 * Built only with MPI, CUDA and NCCL (plain C against the CUDA runtime API). */
#include "dist/dist_internal.h"

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

int amp_dist_nccl_select_device(int local_rank, int local_size, char *err, size_t errlen) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < local_size) {
        snprintf(err, errlen,
                 "%d ranks on this node but %d CUDA device%s visible: NCCL needs a device of its "
                 "own for every rank (start fewer ranks per node, or use [run] device = cpu)",
                 local_size, e == cudaSuccess ? n : 0, n == 1 ? " is" : "s are");
        return -1;
    }
    CUDA_TRY(cudaSetDevice(local_rank));
    return 0;
}

/* The communicator, on first use (see the file comment). */
static int nccl_connect(dist_grads *g, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (g->rank == 0) NCCL_TRY(ncclGetUniqueId(&id));
    if (amp_dist_bcast(n->d, &id, sizeof id, err, errlen) != 0) return -1;
    NCCL_TRY(ncclCommInitRank(&n->comm, g->world, id, g->rank));
    return 0;
}

static int nccl_post(dist_grads *g, int k, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    const dist_bucket *b = &g->buckets[k];
    if (!n->comm && nccl_connect(g, err, errlen) != 0) return -1;
    CUDA_TRY(cudaEventRecord(n->ready[k], n->compute));
    CUDA_TRY(cudaStreamWaitEvent(n->stream, n->ready[k], 0));
    n->last_ready = k;
    /* a ring all-reduce sends 2 (N - 1) / N of the bucket (NCCL picks; a
     * sharded run uses its own part of the sum) */
    g->sent += 2 * (uint64_t)(g->world - 1) * b->count * (g->dtype == AMP_DIST_BF16 ? 2u : 4u) /
               (uint64_t)g->world;
    if (g->dtype == AMP_DIST_BF16)
        NCCL_TRY(ncclAllReduce(g->wire + b->offset, g->wire + b->offset, b->count, ncclBfloat16,
                               ncclSum, n->comm, n->stream));
    else
        NCCL_TRY(ncclAllReduce(g->grads + b->offset, g->grads + b->offset, b->count, ncclFloat32,
                               ncclSum, n->comm, n->stream));
    return 0;
}

static int nccl_progress(dist_grads *g, char *err, size_t errlen) {
    (void)g, (void)err, (void)errlen;
    return 0; /* NCCL runs on its own stream */
}

/* Polls the end of the last bucket with a time limit, watching NCCL's
 * asynchronous errors; then orders the backend's stream after it. */
static int nccl_wait(dist_grads *g, char *err, size_t errlen) {
    nccl_grads *n = g->impl;
    CUDA_TRY(cudaEventRecord(n->done, n->stream));
    double t0 = amp_clock_ms();
    for (;;) {
        cudaError_t e = cudaEventQuery(n->done);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) CUDA_TRY(e);
        ncclResult_t async = ncclSuccess;
        if (n->comm) NCCL_TRY(ncclCommGetAsyncError(n->comm, &async));
        if (async != ncclSuccess) {
            ncclCommAbort(n->comm);
            n->comm = NULL;
            snprintf(err, errlen, "NCCL failed in the gradient allreduce: %s",
                     ncclGetErrorString(async));
            return -1;
        }
        double waited = amp_clock_ms() - t0;
        if (waited > g->timeout_s * 1e3) {
            ncclCommAbort(n->comm); /* frees the kernels that wait for the peer */
            n->comm = NULL;
            amp_dist_fatal(g->rank,
                           "the NCCL gradient allreduce at step %lld did not finish in %.0f s (a "
                           "rank died, hangs, or is more than [dist] timeout = %g s behind)",
                           (long long)g->step + 1, waited / 1e3, g->timeout_s);
        }
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    CUDA_TRY(cudaStreamWaitEvent(n->compute, n->done, 0));
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

static void nccl_close(dist_grads *g) {
    nccl_grads *n = g->impl;
    if (!n) return;
    if (n->stream) cudaStreamSynchronize(n->stream);
    if (n->comm) ncclCommDestroy(n->comm);
    for (int k = 0; n->ready && k < g->nbuckets; k++)
        if (n->ready[k]) cudaEventDestroy(n->ready[k]);
    free(n->ready);
    if (n->done) cudaEventDestroy(n->done);
    if (n->stream) cudaStreamDestroy(n->stream);
    free(n);
    g->impl = NULL;
}

/* host_timed = 0: the host's wait covers backward still running on the
 * GPU, so the step's communication time is the events' (hidden_ms). */
static const dist_transport nccl_transport = {"nccl", 0,        nccl_post, nccl_progress,
                                              nccl_wait, nccl_hidden_ms, nccl_close};

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
    n->d = d;
    return 0;
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
