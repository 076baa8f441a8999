/* Shared by dist.c (launch, agreement, collectives), dist_buckets.c,
 * dist_mpi.c (the host gradient transport) and dist_nccl.c (the GPU one). Not for use outside core/dist/. */
#ifndef AMP_DIST_INTERNAL_H
#define AMP_DIST_INTERNAL_H

#include "util/clock.h"
#include "dist/dist.h"

/* A contiguous range of the flat gradient array: tensors [first, first +
 * ntensors), elements [offset, offset + count). Buckets are numbered in the
 * order they are posted, which is backward order (the last tensors first). */
typedef struct dist_bucket {
    size_t offset, count;
    int first, ntensors;
    int ready;  /* tensors reported final this step */
    int posted;
    int phase;  /* MPI: 0 not posted, 1 scattering, 4 summed, 2 gathering back, 3 done */
} dist_bucket;

typedef struct dist_grads dist_grads;

/* How buckets travel: MPI on host memory, or NCCL on device memory. */
typedef struct dist_transport {
    const char *name;
    /* 1: the host's time in post/wait is the communication time (MPI);
     * 0: the host waits for GPU work too, and hidden_ms measures it. */
    int host_timed;
    /* Starts the sum of bucket k (its data is final: in grads, or already
     * rounded into wire for bf16). */
    int (*post)(dist_grads *g, int k, char *err, size_t errlen);
    /* Lets posted buckets progress without blocking. */
    int (*progress)(dist_grads *g, char *err, size_t errlen);
    /* Until every posted bucket is summed and visible to the backend's
     * next op; at most timeout_s. */
    int (*wait)(dist_grads *g, char *err, size_t errlen);
    /* Device milliseconds of this step's communication not hidden behind
     * backward (from backward's end to the last bucket summed); NULL for
     * host-timed transports. */
    double (*hidden_ms)(dist_grads *g);
    void (*close)(dist_grads *g);
    /* amp_dist_grads_allgather on device memory; NULL where the weights
     * are gathered on the host (MPI). */
    int (*allgather)(dist_grads *g, void *buf, size_t block, char *err, size_t errlen);
    /* Before shard_grads' slot i is zeroed for another bucket: orders that
     * reuse after the transport's last read of it. NULL where a slot is
     * given back only once its bucket is summed (MPI); NCCL gives it back
     * as soon as the bucket's collectives are queued, and the backend's
     * stream waits here for them to have read it. */
    int (*reuse)(dist_grads *g, int slot, char *err, size_t errlen);
    /* Instead of close after a failed call (failed below): frees what is
     * safe to free without waiting for the peers, who may be gone (NCCL:
     * ncclCommAbort, never a stream wait and ncclCommDestroy). NULL: close. */
    void (*abort)(dist_grads *g);
} dist_transport;

struct dist_grads {
    amp_backend *be;
    float *grads;               /* (dev) [nparams] */
    uint16_t *wire;             /* (dev) bf16 copy, when grad_dtype = bf16: [nparams], or
                                 * with slots this rank's [part] sums from grads_lo */
    size_t wire_elems;
    size_t nparams;
    amp_dist_tensor *tensors;   /* [ntensors] */
    int ntensors;
    int *tensor_bucket;         /* [ntensors] */
    dist_bucket *buckets;       /* [nbuckets] */
    int nbuckets;
    int next;                   /* the next bucket to post */
    int early;                  /* buckets posted from grads_ready this step */
    amp_dist_dtype dtype;
    /* The partition the sums are cut by: rank r owns the summed elements
     * [r * part, (r + 1) * part). keep_shard: each rank keeps only its own
     * (sharded runs); 0: the sums are gathered back, so every rank holds
     * all of them (shard = none). */
    size_t part;
    int keep_shard;
    size_t stage_bytes;         /* (dev) the transport's own buffers (NCCL's padded stage,
                                 * the slots below) */
    /* [dist] shard = gradients (dist_slots.c): grads is this rank's piece
     * of the sums only, elements [grads_lo, grads_lo + part), and a
     * bucket's gradients live in a slot (a buffer of the longest bucket,
     * and the MPI transport's stage of the longest piece's contributions)
     * from backward's first write into it until it is summed. bucket_slot
     * is NULL without slots. */
    size_t grads_lo;
    int nslots;
    float **slot_buf;           /* (dev) [nslots][slot_elems] */
    uint16_t **slot_wire;       /* (dev) [nslots][slot_elems] the bucket rounded to bf16
                                 * (grad_dtype = bf16), or NULL */
    void **slot_stage;          /* [nslots] world x the longest piece of this rank */
    int *slot_bucket;           /* [nslots] the bucket that holds it, -1 free */
    int *bucket_slot;           /* [nbuckets] its slot this step, -1 none */
    size_t slot_elems, slot_stage_bytes;
    uint64_t sent;              /* bytes this rank sent to the others this step */
    int rank, world, local_rank;
    double timeout_s;
    int64_t step;               /* for messages */
    int failed;                 /* a transport call failed: close aborts it */
    int64_t fail_step;          /* amp_dist_test_fail_collective: its step + 1, 0 none */
    double comm_ms;             /* this step's host time in the calls (host-timed transports) */
    const dist_transport *tr;
    void *impl;
};

/* Rank r's piece of the elements [o, o + c): [*lo, *lo + *len), the part
 * of rank r's [r part, (r + 1) part) in it (empty: *len = 0). */
void dist_piece(const dist_grads *g, int r, size_t o, size_t c, size_t *lo, size_t *len);
/* Bytes of the wire's elements (2 for bf16, 4 for f32). */
size_t dist_esize(const dist_grads *g);
/* What this rank sends of bucket k, counted as MPI's direct sends move it
 * whatever the transport: its values of the other ranks' pieces (the
 * reduce-scatter), and (dist_gather_bytes, shard = none) its summed piece
 * to each of the N - 1 others. */
uint64_t dist_scatter_bytes(const dist_grads *g, int k);
uint64_t dist_gather_bytes(const dist_grads *g, int k);

/* The slots (dist_slots.c): planned after the buckets; reset before a
 * step's backward; bucket k's given back once it is summed; released. 0,
 * or -1 with err. */
int dist_slots_open(dist_grads *g, char *err, size_t errlen);
void dist_slots_begin(dist_grads *g);
void dist_slot_release(dist_grads *g, int k);
void dist_slots_close(dist_grads *g);
/* Bucket k's values as they travel: its slot (taken, zeroed, when nothing
 * wrote into the bucket), or for bf16 the slot's rounded copy. */
void *dist_slot_send(dist_grads *g, int k);

/* After poll `spin` of a wait in g's step begun at t0 (amp_clock_ms): past
 * [dist] timeout every rank stops, the message saying `what` waited;
 * otherwise backs off. */
void dist_wait_more(const dist_grads *g, double t0, unsigned spin, const char *what);

/* Prints "amptrain: rank R: MESSAGE; stopping all ranks" and ends every
 * rank (MPI_Abort). For waits on other ranks that ran out of time: nothing
 * useful can follow. */
void amp_dist_fatal(int rank, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* The NCCL transport (dist_nccl.c, built with NCCL): creates the
 * communicator (rank 0's unique id is broadcast over d) and the comm
 * stream. 0, or -1 with err. */
int amp_dist_nccl_open(amp_dist *d, dist_grads *g, char *err, size_t errlen);
/* d's MPI transport for g (dist_mpi.c). */
int amp_dist_mpi_grads_open(amp_dist *d, dist_grads *g, char *err, size_t errlen);
/* NCCL's sum of v[n] doubles (device memory) over the ranks, on the
 * transport's stream between the backend's work before and after it
 * (dist_allsum.c). 0, or -1 with err. */
int amp_dist_nccl_allsum(dist_grads *g, double *v, size_t n, char *err, size_t errlen);
/* The CUDA devices this process sees (0 when none). 0, or -1 with err. */
int amp_dist_nccl_device_count(int *count, char *err, size_t errlen);
/* cudaSetDevice(device) and that device's UUID. 0, or -1 with err. */
int amp_dist_nccl_open_device(int device, unsigned char uuid[16], char *err, size_t errlen);

#endif
