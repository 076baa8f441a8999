/* Data parallel: launch detection, agreement between ranks, the
 * collectives (broadcast, gathers, the one statistics reduction per step)
 * and the replica check. The gradient buckets are dist_buckets.c, their MPI
 * transport dist_mpi.c. Without MPI (AMP_HAVE_MPI=0) only the
 * single-process half is built. See dist.h. */
#include "dist/dist_internal.h"
#include "dist/dist_state.h"
#include "dist/dist_device.h"
#include "dist/dist_watch.h"

#include <limits.h>
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
#include "process/launcher_rank.h"
#include "util/log.h"

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
    int rc = g->tr->allgather(g, buf, block, err, errlen);
    if (rc != 0) g->failed = 1;
    return rc;
}

void amp_dist_configure(amp_dist *d, const amp_dist_settings *set) {
    if (d) d->set = *set;
}

const amp_dist_settings *amp_dist_settings_of(const amp_dist *d) { return d ? &d->set : NULL; }

void amp_dist_test_device_gather(amp_dist *d, int on) {
    if (d) d->test_device_gather = on;
}

void amp_dist_test_fail_collective(amp_dist *d, int rank, int64_t step) {
    if (!d) return;
    d->test_fail_rank = rank;
    d->test_fail_step = step < 0 ? 0 : step + 1;
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

/* MPI_Init waits inside the launcher's fence for every rank, with no
 * timeout of its own: a watchdog ends this rank when it is late. */
typedef struct init_late {
    double timeout_s;
    long world;
} init_late;

static void init_was_late(void *arg) {
    const init_late *w = arg;
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
    init_late late = {join_timeout_s, world};
    amp_dist_watch *watch = amp_dist_watch_start(join_timeout_s, init_was_late, &late);
    int provided = 0;
    int up = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS;
    amp_dist_watch_stop(watch);
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

#if AMP_HAVE_NCCL
/* Every rank opens its GPU (dist_device.h), then all compare what they
 * opened; every rank takes part in the gather, failed or not, so none waits
 * in it for one that stopped. */
static int select_nccl_device(amp_dist *d, char *err, size_t errlen) {
    typedef struct pick {
        amp_dist_gpu_id id;
        int failed;
    } pick;
    pick *all = calloc((size_t)d->world, sizeof *all);
    if (!all) amp_dist_fatal(d->rank, "out of host memory choosing a GPU");
    pick *me = &all[d->rank];
    int visible = 0, dev = 0;
    if (amp_dist_nccl_device_count(&visible, err, errlen) != 0 ||
        amp_dist_device_for_rank(d->local_rank, d->local_size, visible,
                                 getenv("CUDA_VISIBLE_DEVICES"), &dev, err, errlen) != 0 ||
        amp_dist_nccl_open_device(dev, me->id.uuid, err, errlen) != 0)
        me->failed = 1;
    if (gethostname(me->id.host, sizeof me->id.host - 1) != 0)
        snprintf(me->id.host, sizeof me->id.host, "(unknown)");
    char gerr[256];
    int rc = amp_dist_allgather(d, all, sizeof *all, gerr, sizeof gerr);
    if (rc != 0 && !me->failed) snprintf(err, errlen, "%s", gerr);
    for (int r = 0; rc == 0 && !me->failed && r < d->world; r++)
        if (all[r].failed) {
            snprintf(err, errlen, "rank %d could not open its GPU (its message says why)", r);
            rc = -1;
        }
    if (rc == 0 && !me->failed) {
        amp_dist_gpu_id *ids = calloc((size_t)d->world, sizeof *ids);
        if (!ids) amp_dist_fatal(d->rank, "out of host memory choosing a GPU");
        for (int r = 0; r < d->world; r++) ids[r] = all[r].id;
        rc = amp_dist_devices_distinct(ids, d->world, err, errlen);
        free(ids);
    }
    rc = me->failed ? -1 : rc;
    free(all);
    return rc;
}
#endif

int amp_dist_select_cuda_device(amp_dist *d, char *err, size_t errlen) {
    if (!d || d->world == 1) return 0;
#if AMP_HAVE_NCCL
    return select_nccl_device(d, err, errlen);
#else
    snprintf(err, errlen,
             "[run] device = cuda on %d ranks needs NCCL for the gradients, and this amptrain was "
             "built without it (nccl.h and libnccl from the CUDA toolkit at configure time); use "
             "[run] device = cpu or rebuild with NCCL",
             d->world);
    return -1;
#endif
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

#endif
/* ======================================================================= */
