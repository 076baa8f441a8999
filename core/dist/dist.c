/* Data parallel: launch detection, agreement between ranks, the gradient
 * buckets and their MPI transport, the one statistics reduction per step and
 * the replica check. Without MPI (AMP_HAVE_MPI=0) only the single-process
 * half is built. See dist.h. */
#include "dist/dist_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if AMP_HAVE_MPI
#include <mpi.h>
#endif

#include "backend/kernels/convert.h"
#include "launcher_rank.h"
#include "log.h"

struct amp_dist {
    int rank, world;
    int local_rank, local_size;
    int mpi;                 /* MPI_Init was called here */
    amp_dist_settings set;
    int agreed;              /* the last code amp_dist_agree returned */
    int test_device_gather;  /* amp_dist_test_device_gather */
#if AMP_HAVE_MPI
    MPI_Comm comm;
    MPI_Comm back;           /* the gradient sums' gathers back (their own order) */
    MPI_Op step_op;
    MPI_Datatype step_type;  /* n doubles, for amp_dist_reduce_step */
    int step_n;
#endif
};

void amp_dist_fatal(int rank, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "amptrain: rank %d: ", rank);
    vfprintf(stderr, fmt, ap);
    fputs("; stopping all ranks\n", stderr);
    va_end(ap);
    fflush(stderr);
#if AMP_HAVE_MPI
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    exit(1);
}

int amp_dist_have_mpi(void) { return AMP_HAVE_MPI; }
int amp_dist_have_nccl(void) { return AMP_HAVE_NCCL; }

int amp_dist_rank(const amp_dist *d) { return d ? d->rank : 0; }
int amp_dist_world(const amp_dist *d) { return d ? d->world : 1; }

const char *amp_dist_grads_transport(const amp_dist_grads *g) {
    return g && g->tr ? g->tr->name : "none";
}

void amp_dist_grads_counts(const amp_dist_grads *g, int *buckets, int *early) {
    *buckets = g ? g->nbuckets : 0;
    *early = g ? g->early : 0;
}

uint64_t amp_dist_grads_sent(const amp_dist_grads *g) { return g ? g->sent : 0; }

size_t amp_dist_grads_bytes(const amp_dist_grads *g) {
    return g ? (g->wire ? g->wire_elems * sizeof(uint16_t) : 0) + g->stage_bytes : 0;
}

size_t dist_esize(const dist_grads *g) {
    return g->dtype == AMP_DIST_BF16 ? sizeof(uint16_t) : sizeof(float);
}

void dist_piece(const dist_grads *g, int r, size_t o, size_t c, size_t *lo, size_t *len) {
    size_t a = (size_t)r * g->part, b = a + g->part;
    if (a < o) a = o;
    if (b > o + c) b = o + c;
    *lo = a;
    *len = b > a ? b - a : 0;
}

uint64_t dist_scatter_bytes(const dist_grads *g, int k) {
    const dist_bucket *b = &g->buckets[k];
    uint64_t n = 0;
    for (int r = 0; r < g->world; r++) {
        size_t lo, len;
        dist_piece(g, r, b->offset, b->count, &lo, &len);
        if (r != g->rank) n += len;
    }
    return n * dist_esize(g);
}

uint64_t dist_gather_bytes(const dist_grads *g, int k) {
    const dist_bucket *b = &g->buckets[k];
    size_t lo, len;
    dist_piece(g, g->rank, b->offset, b->count, &lo, &len);
    return g->keep_shard ? 0 : (uint64_t)(g->world - 1) * len * dist_esize(g);
}

int amp_dist_grads_on_device(const amp_dist_grads *g) {
    return g && g->tr && g->tr->allgather;
}

int amp_dist_grads_allgather(amp_dist_grads *g, void *buf, size_t block, char *err,
                             size_t errlen) {
    if (!amp_dist_grads_on_device(g)) {
        snprintf(err, errlen, "the %s transport gathers on the host", amp_dist_grads_transport(g));
        return -1;
    }
    return g->tr->allgather(g, buf, block, err, errlen);
}

void amp_dist_configure(amp_dist *d, const amp_dist_settings *set) {
    if (d) d->set = *set;
}

const amp_dist_settings *amp_dist_settings_of(const amp_dist *d) { return d ? &d->set : NULL; }

void amp_dist_test_device_gather(amp_dist *d, int on) {
    if (d) d->test_device_gather = on;
}

double amp_dist_grads_comm_ms(const amp_dist_grads *g) {
    if (!g) return 0.0;
    double ms = g->comm_ms;
    if (g->tr && g->tr->hidden_ms) ms += g->tr->hidden_ms((dist_grads *)g);
    return ms;
}

/* The world size an MPI launcher announced in the environment, 0 when none
 * did; *var names the variable. */
static long launcher_world(const char **var) {
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                                        NULL};
    for (int i = 0; sizes[i]; i++) {
        const char *v = getenv(sizes[i]);
        if (v && *v) {
            *var = sizes[i];
            long n = strtol(v, NULL, 10);
            return n > 0 ? n : 1;
        }
    }
    /* PMIx launchers (srun --mpi=pmix) give the rank; the size comes with MPI_Init. */
    if (getenv("PMIX_RANK")) {
        *var = "PMIX_RANK";
        const char *v = getenv("SLURM_NTASKS");
        long n = v ? strtol(v, NULL, 10) : 0;
        return n > 0 ? n : 1;
    }
    return 0;
}

static void dist_defaults(amp_dist *d) {
    d->world = 1;
    d->local_size = 1;
    d->set.grad_dtype = AMP_DIST_F32;
    d->set.bucket_bytes = (size_t)1 << 20;
    d->set.timeout_s = 300.0;
}

/* Between two polls of a wait: spin first, then yield (a rank sharing the
 * core computes), and after a second of waiting (a peer far behind, e.g.
 * writing a checkpoint) sleep a millisecond. */
static void back_off(unsigned spin, double waited_ms) {
    if (spin < 64) return;
    if (waited_ms < 1000.0) {
        sched_yield();
    } else {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

void dist_wait_more(const dist_grads *g, double t0, unsigned spin, const char *what) {
    double waited = amp_clock_ms() - t0;
    if (waited > g->timeout_s * 1e3)
        amp_dist_fatal(g->rank,
                       "no word from the other ranks for %.0f s %s at step %lld (a rank died, "
                       "hangs, or is more than [dist] timeout = %g s behind)",
                       waited / 1e3, what, (long long)g->step + 1, g->timeout_s);
    back_off(spin, waited);
}

/* ======================================================================= */
#if AMP_HAVE_MPI

/* One element is the whole step record: the first AMP_DIST_NMAX doubles
 * take the max (a NaN wins), the rest are summed. */
static void step_op_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int bytes = 0;
    MPI_Type_size(*dt, &bytes);
    int n = bytes / (int)sizeof(double);
    const double *a = in;
    double *b = inout;
    for (int e = 0; e < *len; e++, a += n, b += n) {
        for (int i = 0; i < n && i < AMP_DIST_NMAX; i++)
            if (a[i] > b[i] || a[i] != a[i]) b[i] = a[i];
        for (int i = AMP_DIST_NMAX; i < n; i++) b[i] += a[i];
    }
}

/* The MPI_Init watchdog: MPI_Init waits inside the launcher's fence for
 * every rank, with no timeout of its own. */
typedef struct init_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    double timeout_s;
    long world;
} init_watch;

static void *watch_init(void *arg) {
    init_watch *w = arg;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)w->timeout_s;
    until.tv_nsec += (long)((w->timeout_s - (double)(time_t)w->timeout_s) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    int rc = 0;
    while (!w->done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
    int late = !w->done;
    pthread_mutex_unlock(&w->mu);
    if (late) {
        char rank[16] = "?";
        if (amp_launcher_rank() >= 0) snprintf(rank, sizeof rank, "%d", amp_launcher_rank());
        fprintf(stderr,
                "amptrain: rank %s: not all %ld ranks joined MPI within [dist] timeout = %g s "
                "(MPI_Init still waits for them: a rank failed to start, is stuck before it "
                "starts MPI, or runs on a node that cannot be reached); stopping\n",
                rank, w->world, w->timeout_s);
        fflush(stderr);
        _exit(1);
    }
    return NULL;
}

amp_dist *amp_dist_init(int *argc, char ***argv, double join_timeout_s, char *err, size_t errlen) {
    amp_dist *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    dist_defaults(d);
    const char *var = NULL;
    long world = launcher_world(&var);
    if (world == 0) return d; /* a plain start: one process, no MPI */
    init_watch w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, join_timeout_s, world};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_t watcher;
    int watching = pthread_create(&watcher, NULL, watch_init, &w) == 0;
    int provided = 0;
    int up = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS;
    if (watching) {
        pthread_mutex_lock(&w.mu);
        w.done = 1;
        pthread_cond_signal(&w.cv);
        pthread_mutex_unlock(&w.mu);
        pthread_join(watcher, NULL);
    }
    pthread_cond_destroy(&w.cv);
    if (!up) {
        snprintf(err, errlen, "MPI_Init_thread failed (started by an MPI launcher: %s is set)", var);
        free(d);
        return NULL;
    }
    d->mpi = 1;
    MPI_Comm_dup(MPI_COMM_WORLD, &d->comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &d->back);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->world);
    MPI_Comm node;
    MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &d->local_rank);
    MPI_Comm_size(node, &d->local_size);
    MPI_Comm_free(&node);
    MPI_Op_create(step_op_fn, 1, &d->step_op);
    d->step_type = MPI_DATATYPE_NULL;
    return d;
}

void amp_dist_finalize(amp_dist *d) {
    if (!d) return;
    if (d->mpi) {
        if (d->step_type != MPI_DATATYPE_NULL) MPI_Type_free(&d->step_type);
        MPI_Op_free(&d->step_op);
        MPI_Comm_free(&d->comm);
        MPI_Comm_free(&d->back);
        MPI_Finalize();
    }
    free(d);
}

/* Waits for n requests, polling so that the wait is bounded: a peer that
 * died or hangs ends every rank after timeout_s (amp_dist_fatal). OpenMPI
 * moves the data only inside MPI calls, so the poll never sleeps while a
 * transfer may be running; it yields, so a rank sharing the core computes.
 * After a second of waiting (a peer far behind, e.g. writing a
 * checkpoint) it polls every millisecond. */
static int wait_all(int rank, MPI_Request *req, int n, double timeout_s, const char *what,
                    int64_t step) {
    double t0 = amp_clock_ms();
    for (unsigned spin = 0;; spin++) {
        int done = 0;
        if (MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            amp_dist_fatal(rank, "MPI failed in %s", what);
        if (done) return 0;
        double waited = amp_clock_ms() - t0;
        if (waited > timeout_s * 1e3)
            amp_dist_fatal(rank,
                           "no word from the other ranks for %.0f s in %s%s%lld (a rank died, "
                           "hangs, or is more than [dist] timeout = %g s behind)",
                           waited / 1e3, what, step >= 0 ? " at step " : "",
                           step >= 0 ? (long long)step + 1 : 0LL, timeout_s);
        back_off(spin, waited);
    }
}

#define JOIN_TAG 0x4a4f

void amp_dist_join(amp_dist *d) {
    if (!d || !d->mpi || d->world == 1) return;
    int n = d->rank == 0 ? d->world - 1 : 2, token = d->rank;
    int *got = calloc((size_t)d->world, sizeof *got);
    MPI_Request *req = calloc((size_t)d->world + 1, sizeof *req);
    if (!got || !req) amp_dist_fatal(d->rank, "out of host memory joining the other ranks");
    if (d->rank == 0) {
        for (int r = 1; r < d->world; r++)
            MPI_Irecv(&got[r], 1, MPI_INT, r, JOIN_TAG, d->comm, &req[r - 1]);
    } else {
        MPI_Isend(&token, 1, MPI_INT, 0, JOIN_TAG, d->comm, &req[0]);
        MPI_Irecv(&got[0], 1, MPI_INT, 0, JOIN_TAG, d->comm, &req[1]);
    }
    double t0 = amp_clock_ms();
    for (;;) {
        int done = 0;
        if (MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            amp_dist_fatal(d->rank, "MPI failed joining the other ranks");
        if (done) break;
        if (amp_clock_ms() - t0 > d->set.timeout_s * 1e3) {
            if (d->rank != 0)
                amp_dist_fatal(d->rank,
                               "rank 0 did not let the ranks start within [dist] timeout = %g s "
                               "(rank 0, or a rank it waits for, has not joined)",
                               d->set.timeout_s);
            char missing[512] = "";
            size_t len = 0;
            int count = 0;
            for (int r = 1; r < d->world; r++) {
                int flag = 0;
                MPI_Test(&req[r - 1], &flag, MPI_STATUS_IGNORE);
                if (flag || len + 16 >= sizeof missing) continue;
                len += (size_t)snprintf(missing + len, sizeof missing - len, "%s%d",
                                        count++ ? ", " : "", r);
            }
            amp_dist_fatal(0,
                           "rank%s %s of %d did not join within [dist] timeout = %g s (stuck or "
                           "slow while starting: loading data, plugins, or the device)",
                           count == 1 ? "" : "s", missing, d->world, d->set.timeout_s);
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (d->rank == 0) { /* all here: let them go */
        for (int r = 1; r < d->world; r++)
            MPI_Isend(&token, 1, MPI_INT, r, JOIN_TAG, d->comm, &req[r - 1]);
        wait_all(0, req, d->world - 1, d->set.timeout_s, "letting the ranks start", -1);
    }
    free(got);
    free(req);
}

int amp_dist_agree(amp_dist *d, int code, int *who) {
    if (who) *who = code ? amp_dist_rank(d) : -1;
    if (!d || !d->mpi || d->world == 1) {
        if (d) d->agreed = code;
        return code;
    }
    /* code in the high bits, the complement of the rank in the low ones:
     * the max is the worst code, held by the lowest rank. */
    const long long low = 1LL << 24;
    long long mine = code ? (long long)code * low + (low - 1 - d->rank) : 0, all = 0;
    MPI_Request r;
    MPI_Iallreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_MAX, d->comm, &r);
    wait_all(d->rank, &r, 1, d->set.timeout_s, "agreeing on how the ranks stand", -1);
    int agreed = (int)(all / low);
    if (who) *who = agreed ? (int)(low - 1 - all % low) : -1;
    d->agreed = agreed;
    return agreed;
}

int amp_dist_bcast(amp_dist *d, void *buf, size_t len, char *err, size_t errlen) {
    if (!d || !d->mpi || d->world == 1) return 0;
    char *p = buf;
    while (len > 0) {
        int piece = len > (1u << 30) ? (1 << 30) : (int)len;
        MPI_Request r;
        MPI_Ibcast(p, piece, MPI_BYTE, 0, d->comm, &r);
        wait_all(d->rank, &r, 1, d->set.timeout_s, "a broadcast from rank 0", -1);
        p += piece;
        len -= (size_t)piece;
    }
    return 0;
}

/* Every rank's per_rank bytes at buf + rank * per_rank, in place, into
 * every rank's buf (all) or rank 0's (the others send from buf's start). */
static int gather_blocks(amp_dist *d, void *buf, size_t per_rank, int all, char *err,
                         size_t errlen) {
    if (!d || !d->mpi || d->world == 1) return 0;
    if (per_rank > (size_t)INT_MAX) {
        snprintf(err, errlen, "a shard of %zu bytes is more than one MPI call moves", per_rank);
        return -1;
    }
    MPI_Request r;
    int n = (int)per_rank;
    if (all)
        MPI_Iallgather(MPI_IN_PLACE, 0, MPI_BYTE, buf, n, MPI_BYTE, d->comm, &r);
    else
        MPI_Igather(d->rank == 0 ? MPI_IN_PLACE : buf, n, MPI_BYTE, buf, n, MPI_BYTE, 0, d->comm,
                    &r);
    wait_all(d->rank, &r, 1, d->set.timeout_s, "gathering the sharded optimizer state", -1);
    return 0;
}

int amp_dist_allgather(amp_dist *d, void *buf, size_t per_rank, char *err, size_t errlen) {
    return gather_blocks(d, buf, per_rank, 1, err, errlen);
}

int amp_dist_gather(amp_dist *d, void *buf, size_t per_rank, char *err, size_t errlen) {
    return gather_blocks(d, buf, per_rank, 0, err, errlen);
}

int amp_dist_allgatherv(amp_dist *d, const void *mine, void *all, const size_t *bytes,
                        const size_t *displ, uint64_t *sent, char *err, size_t errlen) {
    if (!d || !d->mpi || d->world == 1) return 0;
    int W = d->world, *c = calloc(4 * (size_t)W, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int rc = 0;
    for (int r = 0; r < W; r++) {
        if (bytes[r] > (size_t)INT_MAX || displ[r] > (size_t)INT_MAX) rc = -1;
        c[r] = r == d->rank ? 0 : (int)bytes[d->rank];     /* mine to every other rank */
        c[W + r] = 0;
        c[2 * W + r] = r == d->rank ? 0 : (int)bytes[r];   /* theirs into place */
        c[3 * W + r] = (int)displ[r];
        if (r != d->rank) *sent += bytes[d->rank];
    }
    if (rc != 0) {
        snprintf(err, errlen, "a shard of the weights is more than 2 GiB, more than one MPI call moves");
        free(c);
        return -1;
    }
    MPI_Request r;
    MPI_Ialltoallv(mine, c, c + W, MPI_BYTE, all, c + 2 * W, c + 3 * W, MPI_BYTE, d->comm, &r);
    wait_all(d->rank, &r, 1, d->set.timeout_s, "gathering the updated weights", -1);
    free(c);
    return 0;
}

/* n doubles reduced with op across the ranks, in place. */
static int allreduce(amp_dist *d, double *v, int n, MPI_Op op, const char *what) {
    if (!d || !d->mpi || d->world == 1) return 0;
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, op, d->comm, &r);
    wait_all(d->rank, &r, 1, d->set.timeout_s, what, -1);
    return 0;
}

int amp_dist_sum(amp_dist *d, double *v, int n, char *err, size_t errlen) {
    return allreduce(d, v, n, MPI_SUM, "a sum over the ranks");
}

int amp_dist_max(amp_dist *d, double *v, int n, char *err, size_t errlen) {
    return allreduce(d, v, n, MPI_MAX, "a max over the ranks");
}

int amp_dist_reduce_step(amp_dist *d, double *v, int n, char *err, size_t errlen) {
    if (!d || !d->mpi || d->world == 1) return 0;
    if (d->step_n != n) {
        if (d->step_type != MPI_DATATYPE_NULL) MPI_Type_free(&d->step_type);
        MPI_Type_contiguous(n, MPI_DOUBLE, &d->step_type);
        MPI_Type_commit(&d->step_type);
        d->step_n = n;
    }
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, v, 1, d->step_type, d->step_op, d->comm, &r);
    wait_all(d->rank, &r, 1, d->set.timeout_s, "the step statistics", -1);
    return 0;
}

int amp_dist_compare(amp_dist *d, const uint32_t *sums, const char *const *labels, int n,
                     int64_t step, char *err, size_t errlen) {
    if (!d || !d->mpi || d->world == 1) return 0;
    uint32_t *all = malloc((size_t)d->world * (size_t)n * sizeof *all);
    if (!all) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    MPI_Request r;
    MPI_Iallgather(sums, n, MPI_UINT32_T, all, n, MPI_UINT32_T, d->comm, &r);
    wait_all(d->rank, &r, 1, d->set.timeout_s, "the replica check", step);
    int differ = 0;
    for (int k = 1; k < d->world; k++)
        for (int i = 0; i < n; i++) differ |= all[(size_t)k * n + i] != all[i];
    if (differ && d->rank != 0) err[0] = '\0'; /* rank 0 says it for all */
    if (differ && d->rank == 0) {
        int len = snprintf(err, errlen,
                           "the ranks diverged after step %lld ([dist] check_every): CRC32 of",
                           (long long)step);
        for (int i = 0; i < n && len >= 0 && (size_t)len < errlen; i++) {
            len += snprintf(err + len, errlen - (size_t)len, "%s %s:", i ? ";" : "", labels[i]);
            for (int k = 0; k < d->world && len >= 0 && (size_t)len < errlen; k++)
                len += snprintf(err + len, errlen - (size_t)len, " rank %d %08x", k,
                                (unsigned)all[(size_t)k * n + i]);
        }
    }
    free(all);
    if (differ) d->agreed = 1; /* every rank fails here, together */
    return differ ? 1 : 0;
}

void amp_dist_exit(amp_dist *d, int code) {
    if (!d || !d->mpi || d->world == 1 || code == 0 || code >= 128 || code == d->agreed) return;
    /* This rank fails alone: the others wait for it in the next collective. */
    fprintf(stderr, "amptrain: rank %d failed (exit %d); stopping all ranks\n", d->rank, code);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

int amp_dist_select_cuda_device(amp_dist *d, char *err, size_t errlen) {
    if (!d || d->world == 1) return 0;
#if AMP_HAVE_NCCL
    return amp_dist_nccl_select_device(d->local_rank, d->local_size, err, errlen);
#else
    snprintf(err, errlen,
             "[run] device = cuda on %d ranks needs NCCL for the gradients, and this amptrain was "
             "built without it (nccl.h and libnccl from the CUDA toolkit at configure time); use "
             "[run] device = cpu or rebuild with NCCL",
             d->world);
    return -1;
#endif
}

/* ---- the MPI gradient transport (host memory) ----
 *
 * A bucket is reduce-scattered, not all-reduced: every element has one
 * owner (rank i / part), each rank sends the owners their pieces of its
 * bucket (MPI_Ialltoallv, direct sends), and the owner adds the N
 * contributions itself in rank order, x0 + x1 + ... + x(N-1), each
 * addition rounded (to f32, or to bf16 for grad_dtype = bf16, as the bf16
 * MPI operation did). So the sum of an element has the same bits whatever
 * the partition and whatever MPI would choose for an allreduce: a sharded
 * run (keep_shard) and shard = none, which gathers the sums back to every
 * rank (a second MPI_Ialltoallv), add the same numbers in the same order.
 * On two ranks x0 + x1 is the only order there is, so this is the same as
 * the MPI_Iallreduce it replaces. */

typedef struct mpi_piece_plan {
    int *cnt[4];    /* [world] each: send counts, send displacements, receive counts, receive
                     * displacements, in elements */
    size_t lo, len; /* this rank's piece of the bucket (flat offset, elements) */
} mpi_piece_plan;

typedef struct mpi_grads {
    amp_dist *d;
    MPI_Comm comm;
    MPI_Comm back;          /* the gathers back, ordered apart from the scatters (d's) */
    int gathered;           /* buckets whose gather back is posted this step */
    MPI_Request *req;       /* [nbuckets] */
    mpi_piece_plan *scatter, *gather; /* [nbuckets] */
    void **stage;           /* [nbuckets] world x the rank's piece: the contributions */
} mpi_grads;

static void *base_of(const dist_grads *g) {
    return g->dtype == AMP_DIST_BF16 ? (void *)g->wire : (void *)g->grads;
}

/* Where bucket k's contributions arrive: its own stage, or its slot's. */
static void *stage_of(const dist_grads *g, const mpi_grads *m, int k) {
    return g->bucket_slot ? g->slot_stage[g->bucket_slot[k]] : m->stage[k];
}

/* The counts of bucket k's two exchanges, once at open. */
static int plan_pieces(dist_grads *g, mpi_grads *m) {
    int W = g->world;
    for (int k = 0; k < g->nbuckets; k++) {
        const dist_bucket *b = &g->buckets[k];
        mpi_piece_plan *S = &m->scatter[k], *G = &m->gather[k];
        for (int i = 0; i < 4; i++) {
            S->cnt[i] = calloc((size_t)W, sizeof(int));
            G->cnt[i] = calloc((size_t)W, sizeof(int));
            if (!S->cnt[i] || !G->cnt[i]) return -1;
        }
        dist_piece(g, g->rank, b->offset, b->count, &S->lo, &S->len);
        G->lo = S->lo;
        G->len = S->len;
        for (int r = 0; r < W; r++) {
            size_t lo, len;
            dist_piece(g, r, b->offset, b->count, &lo, &len);
            /* scatter: my part of r's piece to r; r's part of my piece into stage row r */
            S->cnt[0][r] = (int)len;
            S->cnt[1][r] = (int)(lo - b->offset);
            S->cnt[2][r] = (int)S->len;
            S->cnt[3][r] = (int)((size_t)r * S->len);
            /* gather back: my summed piece to every other rank, theirs into place */
            G->cnt[0][r] = r == g->rank ? 0 : (int)S->len;
            G->cnt[1][r] = 0;
            G->cnt[2][r] = r == g->rank ? 0 : (int)len;
            G->cnt[3][r] = (int)(lo - b->offset);
        }
        if (g->bucket_slot) continue; /* the slots' stages */
        m->stage[k] = malloc((size_t)W * (S->len ? S->len : 1) * dist_esize(g));
        if (!m->stage[k]) return -1;
    }
    return 0;
}

/* The owner's sum of its piece: stage rows 0..N-1 added in rank order. */
static void add_in_rank_order(dist_grads *g, mpi_grads *m, int k) {
    const mpi_piece_plan *S = &m->scatter[k];
    size_t n = S->len;
    int W = g->world;
    if (g->dtype == AMP_DIST_BF16) {
        const uint16_t *st = stage_of(g, m, k);
        uint16_t *out = g->wire + (S->lo - g->grads_lo);
        for (size_t i = 0; i < n; i++) {
            uint16_t acc = st[i];
            for (int r = 1; r < W; r++)
                acc = amp_round16(amp_widen16(acc, AMP_DTYPE_BF16) +
                                      amp_widen16(st[(size_t)r * n + i], AMP_DTYPE_BF16),
                                  AMP_DTYPE_BF16, NULL);
            out[i] = acc;
        }
    } else {
        const float *st = stage_of(g, m, k);
        float *out = g->grads + (S->lo - g->grads_lo);
        for (size_t i = 0; i < n; i++) {
            float acc = st[i];
            for (int r = 1; r < W; r++) acc += st[(size_t)r * n + i];
            out[i] = acc;
        }
    }
}

static MPI_Datatype wire_type(const dist_grads *g) {
    return g->dtype == AMP_DIST_BF16 ? MPI_UINT16_T : MPI_FLOAT;
}

static int mpi_post(dist_grads *g, int k, char *err, size_t errlen) {
    mpi_grads *m = g->impl;
    const dist_bucket *b = &g->buckets[k];
    const mpi_piece_plan *S = &m->scatter[k];
    char *base = g->bucket_slot ? (char *)dist_slot_send(g, k)
                                : (char *)base_of(g) + b->offset * dist_esize(g);
    if (MPI_Ialltoallv(base, S->cnt[0], S->cnt[1], wire_type(g), stage_of(g, m, k), S->cnt[2], S->cnt[3],
                       wire_type(g), m->comm, &m->req[k]) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Ialltoallv (reduce-scatter) of gradient bucket %d failed", k);
        return -1;
    }
    g->sent += dist_scatter_bytes(g, k);
    g->buckets[k].phase = 1;
    if (k == 0) m->gathered = 0;
    return 0;
}

/* Posts the gather of bucket k's sums to every rank (shard = none). */
static int post_gather(dist_grads *g, mpi_grads *m, int k, char *err, size_t errlen) {
    const mpi_piece_plan *G = &m->gather[k];
    char *base = (char *)base_of(g);
    /* sent from the stage: OpenMPI takes a send buffer equal to the receive
     * buffer (a piece at the bucket's start) for MPI_IN_PLACE */
    memcpy(m->stage[k], base + G->lo * dist_esize(g), G->len * dist_esize(g));
    if (MPI_Ialltoallv(m->stage[k], G->cnt[0], G->cnt[1], wire_type(g),
                       base + g->buckets[k].offset * dist_esize(g), G->cnt[2], G->cnt[3], wire_type(g),
                       m->back, &m->req[k]) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Ialltoallv (gathering the sums) of bucket %d failed", k);
        return -1;
    }
    g->sent += dist_gather_bytes(g, k);
    g->buckets[k].phase = 2;
    return 0;
}

/* Moves every posted bucket on as far as it goes without blocking: a
 * scatter that arrived is summed; the gathers back (shard = none) go out on
 * their own communicator in bucket order, so every rank posts the same
 * collectives in the same order whenever its scatters complete. 1 when
 * all posted buckets are done, 0 not yet, -1 on an MPI error. */
static int advance(dist_grads *g, char *err, size_t errlen) {
    mpi_grads *m = g->impl;
    int all = 1;
    for (int k = 0; k < g->next; k++) {
        dist_bucket *b = &g->buckets[k];
        if (b->phase == 1 || b->phase == 2) {
            int done = 0;
            if (MPI_Test(&m->req[k], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                snprintf(err, errlen, "MPI_Test on gradient bucket %d failed", k);
                return -1;
            }
            if (done && b->phase == 1) {
                add_in_rank_order(g, m, k);
                dist_slot_release(g, k);
                b->phase = g->keep_shard ? 3 : 4;
            } else if (done) {
                b->phase = 3;
            }
        }
        if (b->phase != 3) all = 0;
    }
    while (m->gathered < g->next && g->buckets[m->gathered].phase == 4) {
        if (post_gather(g, m, m->gathered, err, errlen) != 0) return -1;
        m->gathered++;
        all = 0;
    }
    return all;
}

/* OpenMPI advances non-blocking collectives only inside MPI calls: a test
 * at every ready point is what lets them run during backward. */
static int mpi_progress(dist_grads *g, char *err, size_t errlen) {
    return advance(g, err, errlen) < 0 ? -1 : 0;
}

/* As wait_all: bounded by [dist] timeout, yielding while it waits. */
static int mpi_wait(dist_grads *g, char *err, size_t errlen) {
    double t0 = amp_clock_ms();
    for (unsigned spin = 0;; spin++) {
        int rc = advance(g, err, errlen);
        if (rc < 0) amp_dist_fatal(g->rank, "MPI failed in the gradient reduce-scatter: %s", err);
        if (rc == 1) return 0;
        dist_wait_more(g, t0, spin, "in the gradient reduce-scatter");
    }
}

static void mpi_close(dist_grads *g) {
    mpi_grads *m = g->impl;
    if (!m) return;
    for (int k = 0; k < g->nbuckets; k++) {
        for (int i = 0; i < 4; i++) {
            if (m->scatter) free(m->scatter[k].cnt[i]);
            if (m->gather) free(m->gather[k].cnt[i]);
        }
        if (m->stage) free(m->stage[k]);
    }
    free(m->scatter);
    free(m->gather);
    free(m->stage);
    free(m->req);
    free(m);
    g->impl = NULL;
}

/* the sharded weights are gathered on the host (amp_dist_allgatherv) */
static const dist_transport mpi_transport = {"mpi",    1,    mpi_post,  mpi_progress,
                                             mpi_wait, NULL, mpi_close, NULL, NULL};

/* amp_dist_test_device_gather: NCCL's gather of equal blocks in place
 * (MPI_Iallgather), on the CPU backend's memory. */
static int mpi_allgather_blocks(dist_grads *g, void *buf, size_t block, char *err,
                                size_t errlen) {
    mpi_grads *m = g->impl;
    return amp_dist_allgather(m->d, buf, block, err, errlen);
}

static const dist_transport mpi_block_transport = {"mpi",    1,    mpi_post,  mpi_progress,
                                                   mpi_wait, NULL, mpi_close, mpi_allgather_blocks, NULL};

int amp_dist_mpi_grads_open(amp_dist *d, dist_grads *g, char *err, size_t errlen) {
    mpi_grads *m = calloc(1, sizeof *m);
    g->impl = m;
    g->tr = d->test_device_gather && g->be->device == AMP_DEVICE_CPU ? &mpi_block_transport
                                                                     : &mpi_transport;
    size_t nb = (size_t)g->nbuckets;
    if (m) {
        m->req = calloc(nb, sizeof *m->req);
        m->scatter = calloc(nb, sizeof *m->scatter);
        m->gather = calloc(nb, sizeof *m->gather);
        m->stage = calloc(nb, sizeof *m->stage);
    }
    if (!m || !m->req || !m->scatter || !m->gather || !m->stage || plan_pieces(g, m) != 0) {
        snprintf(err, errlen, "out of host memory");
        return -1; /* amp_dist_grads_close frees what was made */
    }
    for (int k = 0; k < g->nbuckets; k++) m->req[k] = MPI_REQUEST_NULL;
    m->d = d;
    m->comm = d->comm;
    m->back = d->back;
    return 0;
}

/* ======================================================================= */
#else /* no MPI: one process */

amp_dist *amp_dist_init(int *argc, char ***argv, double join_timeout_s, char *err, size_t errlen) {
    (void)join_timeout_s; /* no MPI_Init to wait in */
    const char *var = NULL;
    long n = launcher_world(&var);
    if (n > 1) {
        snprintf(err, errlen,
                 "started as one of %ld ranks (%s is set), but this amptrain was built without MPI: "
                 "each rank would train alone into the same output folder. Rebuild with MPI "
                 "(Debian: libopenmpi-dev openmpi-bin, cmake -DAMP_MPI=ON) or run it without mpirun",
                 n, var);
        return NULL;
    }
    amp_dist *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    dist_defaults(d);
    return d;
}

void amp_dist_finalize(amp_dist *d) { free(d); }
void amp_dist_join(amp_dist *d) { (void)d; }

int amp_dist_agree(amp_dist *d, int code, int *who) {
    if (who) *who = code ? 0 : -1;
    if (d) d->agreed = code;
    return code;
}

int amp_dist_bcast(amp_dist *d, void *buf, size_t len, char *err, size_t errlen) { return 0; }
int amp_dist_allgather(amp_dist *d, void *buf, size_t per_rank, char *err, size_t errlen) {
    return 0; /* one rank: its shard is the whole */
}
int amp_dist_gather(amp_dist *d, void *buf, size_t per_rank, char *err, size_t errlen) {
    return 0;
}
int amp_dist_allgatherv(amp_dist *d, const void *mine, void *all, const size_t *bytes,
                        const size_t *displ, uint64_t *sent, char *err, size_t errlen) {
    return 0;
}
int amp_dist_sum(amp_dist *d, double *v, int n, char *err, size_t errlen) { return 0; }
int amp_dist_max(amp_dist *d, double *v, int n, char *err, size_t errlen) { return 0; }
int amp_dist_reduce_step(amp_dist *d, double *v, int n, char *err, size_t errlen) { return 0; }
int amp_dist_compare(amp_dist *d, const uint32_t *sums, const char *const *labels, int n,
                     int64_t step, char *err, size_t errlen) {
    return 0;
}
void amp_dist_exit(amp_dist *d, int code) {}
int amp_dist_select_cuda_device(amp_dist *d, char *err, size_t errlen) { return 0; }

int amp_dist_mpi_grads_open(amp_dist *d, dist_grads *g, char *err, size_t errlen) {
    snprintf(err, errlen, "this amptrain was built without MPI");
    return -1;
}

#endif
/* ======================================================================= */

/* ---- buckets (any transport) ---- */

void amp_dist_grads_close(amp_dist_grads *g) {
    if (!g) return;
    if (g->tr && g->tr->close) g->tr->close(g);
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
