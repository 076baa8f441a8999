/* The MPI gradient transport (host memory): buckets reduce-scattered with
 * direct sends and added by their owners in rank order (dist_internal.h's
 * transport table). Without MPI only the refusal is built. */
#include "dist/dist_internal.h"
#include "dist/dist_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if AMP_HAVE_MPI

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
                                             mpi_wait, NULL, mpi_close, NULL, NULL, NULL};

/* amp_dist_test_device_gather: NCCL's gather of equal blocks in place
 * (MPI_Iallgather), on the CPU backend's memory. */
static int mpi_allgather_blocks(dist_grads *g, void *buf, size_t block, char *err,
                                size_t errlen) {
    mpi_grads *m = g->impl;
    return amp_dist_allgather(m->d, buf, block, err, errlen);
}

static const dist_transport mpi_block_transport = {"mpi",    1,    mpi_post,  mpi_progress,
                                                   mpi_wait, NULL, mpi_close, mpi_allgather_blocks, NULL,
                                                   NULL};

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

#else /* no MPI */

int amp_dist_mpi_grads_open(amp_dist *d, dist_grads *g, char *err, size_t errlen) {
    snprintf(err, errlen, "this amptrain was built without MPI");
    return -1;
}

#endif
