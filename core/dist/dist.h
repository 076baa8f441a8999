/* Data parallel: one model trained by N ranks, each on its own slice of
 * every global batch. MPI launches the ranks and reduces on the CPU; on the
 * GPU, NCCL moves the gradients (its unique id travels over MPI). No
 * home-made transport.
 *
 * What a training step does with N > 1 ranks (core/train/session.c drives it):
 *   1. each rank runs forward/backward on its rows; the loss gradient is
 *      divided by the GLOBAL row count, so the sum over ranks is the mean;
 *   2. the gradients are summed across ranks in buckets (contiguous ranges
 *      of the flat gradient array, in backward order), each posted as soon
 *      as the model reports its tensors final (amp_model_grads_ready): on
 *      the CPU reduce-scattered (each element's owner adds the ranks'
 *      values in rank order) and, unsharded, gathered back; on the GPU
 *      on a second CUDA stream, ncclAllReduce (sharded: reduce-scattered
 *      with NCCL into the owners' slices). [dist] grad_dtype = bf16 sends
 *      them rounded to bf16 (the rounding is counted in the layer's
 *      gradient telemetry);
 *   3. after the step's one stats download, ONE small allreduce makes the
 *      statistics common: max over ranks of the non-finite count, the
 *      gradient sum of squares and max |g| (and of the stop signal), and the
 *      sum of the losses, hits and rounding counts. Every rank then feeds its
 *      scaler the same numbers, skips the same steps and holds the same
 *      scale.
 *
 * Failure: every wait for the other ranks is bounded by [dist] timeout; when
 * it runs out the rank says so and stops all ranks (MPI_Abort). Errors that
 * every rank knows about are agreed (amp_dist_agree) so all exit with the
 * same code and one message. A build without MPI runs single-process and
 * refuses to be started as one of several ranks. */
#ifndef AMP_DIST_H
#define AMP_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

typedef struct amp_dist amp_dist;
/* One session's gradient reduction (its buckets and transport). */
typedef struct dist_grads amp_dist_grads;

/* What the gradients travel as. */
typedef enum amp_dist_dtype { AMP_DIST_F32 = 0, AMP_DIST_BF16 = 1 } amp_dist_dtype;

typedef struct amp_dist_settings {
    amp_dist_dtype grad_dtype;
    size_t bucket_bytes;   /* target bucket size (of the f32 gradients) */
    int64_t check_every;   /* compare weight/scaler checksums every K steps (0 off) */
    double timeout_s;      /* longest wait for the other ranks */
} amp_dist_settings;

/* One tensor of the flat gradient array, in the parameter table's order. */
typedef struct amp_dist_tensor {
    size_t offset, numel;      /* elements */
    amp_round_count *grad_cnt; /* (dev) its layer's gradient rounding slot */
} amp_dist_tensor;

/* Starts MPI when this process was started by an MPI launcher (mpirun,
 * srun --mpi, ...: OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or
 * MV2_COMM_WORLD_SIZE is set); otherwise, or when built without MPI, a
 * single-process context (rank 0 of 1) that never calls MPI. A build
 * without MPI started as one of several ranks fails here (2 ranks writing
 * one output folder independently would be silent garbage). On failure
 * returns NULL with the reason in err. The caller owns the context until
 * amp_dist_finalize, after every session using it is closed. MPI_Init
 * waits for every rank to start: after join_timeout_s ([dist] timeout) of
 * that wait the rank says so and exits 1 (the launcher then ends the
 * others), instead of waiting for a rank that never comes. */
amp_dist *amp_dist_init(int *argc, char ***argv, double join_timeout_s, char *err, size_t errlen);
/* MPI_Finalize (when MPI was started) and free. NULL is fine. */
void amp_dist_finalize(amp_dist *d);

int amp_dist_rank(const amp_dist *d); /* 0 for NULL */
int amp_dist_world(const amp_dist *d); /* 1 for NULL */
/* 1 when this build has MPI / NCCL. */
int amp_dist_have_mpi(void);
int amp_dist_have_nccl(void);

/* ---- agreement (all ranks call these in the same order) ---------------- */

/* The start line, before the first collective: every rank reports to rank
 * 0, which lets them go once all have. A rank missing after [dist]
 * timeout (stuck or slow while it starts) is named: rank 0 says which
 * ranks never came and stops all ranks (exit 1). Alone: returns at once. */
void amp_dist_join(amp_dist *d);

/* The largest of every rank's code (0 = fine); *who (may be NULL) is the
 * lowest rank that holds it (-1 when all are 0). Records the result, so
 * amp_dist_exit knows the failure is known everywhere. Single process:
 * returns code. Never blocks longer than [dist] timeout. */
int amp_dist_agree(amp_dist *d, int code, int *who);
/* Rank 0's len bytes into every rank's buf. 0, or -1 with err. */
int amp_dist_bcast(amp_dist *d, void *buf, size_t len, char *err, size_t errlen);
/* Every rank's `per_rank` bytes at buf + rank * per_rank, in place, into
 * every rank's buf (world * per_rank bytes): the sharded optimizer's
 * master weights and moments. 0, or -1 with err. */
int amp_dist_allgather(amp_dist *d, void *buf, size_t per_rank, char *err, size_t errlen);
/* The same into rank 0's buf only: the others send their per_rank bytes
 * from buf (at its start) and keep nothing. 0, or -1 with err. */
int amp_dist_gather(amp_dist *d, void *buf, size_t per_rank, char *err, size_t errlen);
/* Rank r's bytes[r] bytes (this rank's at `mine`, apart from `all`) into
 * every rank's all + displ[r], by direct sends (MPI_Ialltoallv): this rank
 * sends its block to each other rank, adding what it sent to *sent. The
 * sharded run's updated weights, in their working dtypes. 0, or -1. */
int amp_dist_allgatherv(amp_dist *d, const void *mine, void *all, const size_t *bytes,
                        const size_t *displ, uint64_t *sent, char *err, size_t errlen);
/* Sums n doubles across ranks, in place. 0, or -1 with err. */
int amp_dist_sum(amp_dist *d, double *v, int n, char *err, size_t errlen);
/* The max of n doubles across ranks, in place (no NaN in v). 0, or -1. */
int amp_dist_max(amp_dist *d, double *v, int n, char *err, size_t errlen);

/* Before the process ends with `code`: when several ranks run and this
 * rank fails alone (code 1 or 2 that amp_dist_agree did not return), the
 * others would wait for it, so this stops them all (MPI_Abort) and does not
 * return. Otherwise returns. */
void amp_dist_exit(amp_dist *d, int code);

/* ---- the training step ------------------------------------------------- */

/* Chooses this rank's CUDA device (local rank on its node) before the CUDA
 * backend is created; refuses more ranks on a node than devices. 0, or -1
 * with err. No-op on one rank. */
int amp_dist_select_cuda_device(amp_dist *d, char *err, size_t errlen);

/* Sets up the gradient reduction over grads[nparams] on be (CPU: MPI;
 * CUDA: NCCL) for one session (several may share d, each with its own).
 * tensors are in flat order and cover grads. shard = 0: after
 * amp_dist_grads_end every rank holds the whole sum; shard = S > 0
 * ([dist] shard): rank r holds the sums of elements [r S, (r + 1) S) only
 * (the buckets are reduce-scattered: MPI's direct sends, or NCCL's
 * ncclReduceScatter over a padded copy of the bucket, ncclReduce where the
 * bucket has one owner; the rest of grads is left as this rank's own
 * gradients). On the CPU every element is summed in rank order either
 * way, so both give the same bits; NCCL's order is NCCL's (on 2 ranks
 * every sum is one addition, the same bits whatever the collective). *out
 * is NULL on one rank. 0, or -1 with err. */
int amp_dist_grads_open(amp_dist_grads **out, amp_dist *d, amp_backend *be, float *grads,
                        const amp_dist_tensor *tensors, int ntensors, size_t shard,
                        int shard_grads, char *err, size_t errlen);
/* shard_grads ([dist] shard = gradients; MPI, f32 only): grads is this
 * rank's [shard] sums only, and the backward writes tensor t's gradient
 * at amp_dist_grads_slot(g, t), in a buffer its bucket takes at the first
 * call of a step (zeroed) and gives back once the bucket is summed. When
 * every slot is taken the call waits for a posted bucket to be summed, or
 * makes one more slot where none is in flight (three are made at open: the
 * bucket being written, one travelling, and the tied embedding's, open
 * through the whole backward); the slots are counted in
 * amp_dist_grads_bytes. A
 * failure stops every rank (amp_dist_fatal). */
float *amp_dist_grads_slot(amp_dist_grads *g, int tensor);
/* Bytes this rank sent to the other ranks for the gradients of the last
 * step, counted the same way on either transport: its values of the
 * elements other ranks own, and unsharded its sums to the N - 1 others
 * (MPI: exactly what it handed to MPI's direct sends; NCCL's ring moves
 * the same total over the ranks, plus a reduce-scatter's padding). */
uint64_t amp_dist_grads_sent(const amp_dist_grads *g);
/* 1 when the transport gathers the sharded weights in device memory
 * (NCCL): then amp_dist_grads_allgather, not amp_dist_allgatherv. */
int amp_dist_grads_on_device(const amp_dist_grads *g);
/* ncclAllGather of block bytes from every rank, in place: rank r's at
 * buf + r * block (device memory, world * block bytes) into every rank's
 * buf, after the backend's work before it and before its work after it;
 * the wait is bounded by [dist] timeout. 0, or -1 with err (MPI: -1). */
int amp_dist_grads_allgather(amp_dist_grads *g, void *buf, size_t block, char *err,
                             size_t errlen);
/* Releases it (before the backend is destroyed). NULL is fine. */
void amp_dist_grads_close(amp_dist_grads *g);
/* Before the last micro-batch's backward of 0-based step `step`. */
void amp_dist_grads_begin(amp_dist_grads *g, int64_t step);
/* Tensors [first, first + count) hold their final gradient: posts every
 * bucket that is now complete (buckets go out in one fixed order on all
 * ranks) and lets pending ones progress. 0, or -1 with err. */
int amp_dist_grads_ready(amp_dist_grads *g, int first, int count, char *err, size_t errlen);
/* Posts what is left and waits until grads holds the sum over ranks (on
 * the GPU: the backend's stream is ordered after it). 0, or -1 with err. */
int amp_dist_grads_end(amp_dist_grads *g, char *err, size_t errlen);
/* Milliseconds of this step's gradient communication that backward did not
 * hide: host time in the calls above (MPI), or the device time from
 * backward's end to the last bucket summed (NCCL). */
double amp_dist_grads_comm_ms(const amp_dist_grads *g);
/* Buckets of the last step, and how many of them were posted before
 * backward returned (overlapped with it). */
void amp_dist_grads_counts(const amp_dist_grads *g, int *buckets, int *early);
/* "mpi" or "nccl" ("none" for NULL). */
const char *amp_dist_grads_transport(const amp_dist_grads *g);
/* Bytes the reduction allocated on the device (the bf16 wire copy, NCCL's
 * padded reduce-scatter stage, shard_grads' slots with their stages). */
size_t amp_dist_grads_bytes(const amp_dist_grads *g);

/* The step record after its download, made common in one allreduce: the
 * first AMP_DIST_NMAX values of v[n] take the max over ranks, the rest the
 * sum (integer counts travel as doubles: exact below 2^53). 0, or -1 with
 * err. */
#define AMP_DIST_NMAX 5
int amp_dist_reduce_step(amp_dist *d, double *v, int n, char *err, size_t errlen);

/* Compares the checksums (n values) across ranks. On any difference every
 * rank returns 1 (a failure all ranks know of, see amp_dist_exit); rank 0's
 * err lists every rank's values named by labels, the others' is empty. 0
 * equal, -1 out of memory. */
int amp_dist_compare(amp_dist *d, const uint32_t *sums, const char *const *labels, int n,
                     int64_t step, char *err, size_t errlen);

/* Test hook: gradient reductions opened while on, on the CPU backend over
 * MPI, gather the sharded weights as the NCCL transport does (equal padded
 * blocks in a buffer of the backend's, amp_dist_grads_allgather, with
 * MPI_Iallgather), so the session's side of NCCL's weights gather runs on
 * the CPU. Off by default; training never turns it on. */
void amp_dist_test_device_gather(amp_dist *d, int on);

/* Test hook: on rank `rank`, the first gradient collective of step `step`
 * (0-based) fails as a transport error would, so the error path (the
 * transport aborted, not closed; the others stopped within [dist] timeout)
 * runs without a broken network. step < 0 turns it off. */
void amp_dist_test_fail_collective(amp_dist *d, int rank, int64_t step);

/* The [dist] settings (the session reads them); before grads_open. */
void amp_dist_configure(amp_dist *d, const amp_dist_settings *set);
const amp_dist_settings *amp_dist_settings_of(const amp_dist *d);

#endif
