/* [dist] shard = gradients (ZeRO-2): the buckets' gradients in slots.
 * A rank keeps only its piece of the summed gradients; a bucket's
 * unsummed values need a buffer only from backward's first write into one
 * of its tensors until the bucket is reduce-scattered and summed. A slot
 * is such a buffer (the longest bucket's size), for grad_dtype = bf16 with
 * the bucket's rounded copy, and on MPI with the stage of the
 * contributions (world x this rank's longest piece): taken when backward
 * asks for a tensor's gradient (amp_dist_grads_slot), zeroed, and given
 * back when the owner has added the bucket's pieces (MPI), or once the
 * bucket's collectives are queued on NCCL's stream (whose reads the next
 * user's zeroing waits for: dist_transport.reuse). Every rank takes and
 * gives back the same slots at the same points (the same model, buckets
 * and order), so a rank that waits for a slot waits for a bucket every
 * rank has posted. */
#include "dist/dist_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bucket being written, one travelling, and a bucket held open through
 * the whole backward (a tied embedding's, written at both ends). */
#define DIST_MIN_SLOTS 3

/* One more slot. 0, or -1 with err. */
static int grow(dist_grads *g, char *err, size_t errlen) {
    int n = g->nslots + 1;
    float **buf = realloc(g->slot_buf, (size_t)n * sizeof *buf);
    if (buf) g->slot_buf = buf;
    void **stage = realloc(g->slot_stage, (size_t)n * sizeof *stage);
    if (stage) g->slot_stage = stage;
    int *owner = realloc(g->slot_bucket, (size_t)n * sizeof *owner);
    if (owner) g->slot_bucket = owner;
    uint16_t **wire = realloc(g->slot_wire, (size_t)n * sizeof *wire);
    if (wire) g->slot_wire = wire;
    if (!buf || !stage || !owner || !wire) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int bf16 = g->dtype == AMP_DIST_BF16;
    size_t fbytes = g->slot_elems * sizeof(float), wbytes = bf16 ? g->slot_elems * sizeof(uint16_t) : 0;
    g->slot_buf[g->nslots] = g->be->ops->alloc(g->be, fbytes);
    g->slot_wire[g->nslots] = bf16 ? g->be->ops->alloc(g->be, wbytes) : NULL;
    g->slot_stage[g->nslots] = g->slot_stage_bytes ? malloc(g->slot_stage_bytes) : NULL;
    g->slot_bucket[g->nslots] = -1;
    g->nslots = n; /* released by dist_slots_close, made or not */
    if (!g->slot_buf[n - 1] || (bf16 && !g->slot_wire[n - 1])) {
        snprintf(err, errlen, "a gradient bucket's buffer of %zu bytes: %s", fbytes + wbytes,
                 g->be->err);
        return -1;
    }
    if (g->slot_stage_bytes && !g->slot_stage[n - 1]) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    g->stage_bytes += fbytes + wbytes + g->slot_stage_bytes;
    return 0;
}

int dist_slots_open(dist_grads *g, char *err, size_t errlen) {
    size_t piece = 0;
    for (int k = 0; k < g->nbuckets; k++) {
        size_t lo, len;
        dist_piece(g, g->rank, g->buckets[k].offset, g->buckets[k].count, &lo, &len);
        if (g->buckets[k].count > g->slot_elems) g->slot_elems = g->buckets[k].count;
        if (len > piece) piece = len;
    }
    /* the contributions arrive in host memory on MPI; NCCL sums in place */
    if (g->be->device == AMP_DEVICE_CPU)
        g->slot_stage_bytes = (size_t)g->world * (piece ? piece : 1) * dist_esize(g);
    g->bucket_slot = malloc((size_t)(g->nbuckets ? g->nbuckets : 1) * sizeof *g->bucket_slot);
    if (!g->bucket_slot) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    /* made at once, so that when more are made does not depend on how soon
     * the buckets before were summed: only on the model's order of writes */
    while (g->nslots < DIST_MIN_SLOTS && g->nslots < g->nbuckets)
        if (grow(g, err, errlen) != 0) return -1;
    dist_slots_begin(g);
    return 0;
}

void dist_slots_begin(dist_grads *g) {
    if (!g->bucket_slot) return;
    for (int k = 0; k < g->nbuckets; k++) g->bucket_slot[k] = -1;
    for (int i = 0; i < g->nslots; i++) g->slot_bucket[i] = -1;
}

void dist_slot_release(dist_grads *g, int k) {
    if (!g->bucket_slot || g->bucket_slot[k] < 0) return;
    g->slot_bucket[g->bucket_slot[k]] = -1;
    g->bucket_slot[k] = -1;
}

void dist_slots_close(dist_grads *g) {
    for (int i = 0; i < g->nslots; i++) {
        if (g->slot_buf[i]) g->be->ops->release(g->be, g->slot_buf[i]);
        if (g->slot_wire[i]) g->be->ops->release(g->be, g->slot_wire[i]);
        free(g->slot_stage[i]);
    }
    free(g->slot_buf);
    free(g->slot_wire);
    free(g->slot_stage);
    free(g->slot_bucket);
    free(g->bucket_slot);
}

/* A posted bucket still holds a slot: waiting frees one. */
static int in_flight(const dist_grads *g) {
    for (int k = 0; k < g->next; k++)
        if (g->buckets[k].posted && g->bucket_slot[k] >= 0) return 1;
    return 0;
}

/* A free slot for bucket k, zeroed: one that is free, one a posted bucket
 * gives back, or a new one. */
static void take(dist_grads *g, int k) {
    char err[512] = "";
    double t0 = amp_clock_ms();
    for (unsigned spin = 0;; spin++) {
        for (int i = 0; i < g->nslots; i++) {
            if (g->slot_bucket[i] >= 0) continue;
            g->slot_bucket[i] = k;
            g->bucket_slot[k] = i;
            if (g->tr->reuse && g->tr->reuse(g, i, err, sizeof err) != 0)
                amp_dist_fatal(g->rank, "reusing a gradient bucket's buffer: %s", err);
            if (g->be->ops->zero(g->be, g->slot_buf[i], g->buckets[k].count * sizeof(float)) != 0)
                amp_dist_fatal(g->rank, "zeroing a gradient bucket's buffer: %s", g->be->err);
            if (g->tr->host_timed) g->comm_ms += amp_clock_ms() - t0;
            return;
        }
        if (!in_flight(g)) { /* every slot held by a bucket not complete yet */
            if (grow(g, err, sizeof err) != 0) amp_dist_fatal(g->rank, "%s", err);
            continue;
        }
        if (g->tr->progress(g, err, sizeof err) != 0)
            amp_dist_fatal(g->rank, "the gradient reduce-scatter failed: %s", err);
        dist_wait_more(g, t0, spin, "waiting for a gradient bucket to be summed");
    }
}

float *amp_dist_grads_slot(amp_dist_grads *g, int t) {
    int k = g->tensor_bucket[t];
    if (g->bucket_slot[k] < 0) take(g, k);
    return g->slot_buf[g->bucket_slot[k]] + (g->tensors[t].offset - g->buckets[k].offset);
}

void *dist_slot_send(dist_grads *g, int k) {
    if (g->bucket_slot[k] < 0) take(g, k);
    int i = g->bucket_slot[k];
    return g->dtype == AMP_DIST_BF16 ? (void *)g->slot_wire[i] : (void *)g->slot_buf[i];
}
