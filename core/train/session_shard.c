/* [dist] shard: each rank keeps the FP32 master weights and optimizer
 * moments of its shard of the trained elements only (model.h: master,
 * opt, wts). After the optimizer steps the shard, the owner rounds it into
 * the working dtype of each tensor (bf16/fp16 for a tensor with a 16-bit
 * working copy, FP32 for the rest) and the ranks gather those values: the
 * "weights wire" is the trained elements, tensor by tensor, each in its
 * working dtype, and rank r's block is the part of it that encodes
 * elements [r S, (r + 1) S). The rounding is the one the unsharded cast
 * does, so every working copy holds the same bits; it is counted into the
 * owner's cast counts, which the ranks' statistics add up. For a
 * checkpoint (or the weights file) the FP32 masters and the moments are
 * gathered whole on rank 0's host (amp_session_gather_optim), which sends
 * every rank its count of non-finite weights. Over MPI the wire
 * is gathered in host memory (MPI_Ialltoallv's direct sends); over NCCL in
 * device memory with ncclAllGather, each rank's block padded to the
 * longest (dev_block bytes), and the working copies are written from
 * there by device copies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers/layers.h"
#include "session.h"

/* Bytes of tensor t's values on the weights wire: FP32 where a forward
 * reads them in FP32, a tied tensor with a 16-bit copy too (every rank
 * rounds that copy from the FP32 values it received). */
static size_t wire_size(amp_model *m, int t) {
    amp_working_copy wc;
    return amp_model_copy16(m, t, &wc) && !wc.also_f32 ? 2 : 4;
}

/* The wire's byte offset of trained element i (i <= ntrained). */
static size_t wire_byte(const amp_session *s, size_t i) {
    const amp_model_desc *d = &s->model->desc;
    for (int t = 0; t < d->nparam_tensors && !d->params[t].buffer; t++) {
        const amp_param_desc *P = &d->params[t];
        if (i < P->offset + P->numel) return s->wire_at[t] + (i - P->offset) * wire_size(s->model, t);
    }
    return s->wire_at[d->nparam_tensors];
}

int amp_session_shard_open(amp_session *s, char *err, size_t errlen) {
    amp_model *m = s->model;
    const amp_model_desc *d = &m->desc;
    int W = s->world, nt = d->nparam_tensors;
    s->wire_at = calloc((size_t)nt + 1, sizeof *s->wire_at);
    s->block_bytes = calloc((size_t)W, sizeof *s->block_bytes);
    s->block_at = calloc((size_t)W, sizeof *s->block_at);
    s->master_full = s->rank == 0 ? malloc(d->nparams * sizeof(float)) : NULL;
    if (!s->wire_at || !s->block_bytes || !s->block_at || (s->rank == 0 && !s->master_full)) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    size_t at = 0, widest = s->shard;
    for (int t = 0; t < nt; t++) {
        s->wire_at[t] = at;
        if (d->params[t].buffer) continue; /* each rank's own */
        at += d->params[t].numel * wire_size(m, t);
        if (d->params[t].numel > widest) widest = d->params[t].numel;
    }
    s->wire_at[nt] = at;
    for (int r = 0; r < W; r++) {
        size_t a = (size_t)r * s->shard, b = a + s->shard;
        if (a > d->ntrained) a = d->ntrained;
        if (b > d->ntrained) b = d->ntrained;
        s->block_at[r] = wire_byte(s, a);
        s->block_bytes[r] = wire_byte(s, b) - s->block_at[r];
    }
    s->wire = malloc(at ? at : 1);
    s->wire_mine = malloc(s->block_bytes[s->rank] ? s->block_bytes[s->rank] : 1);
    s->dev16 = s->be->ops->alloc(s->be, (widest ? widest : 1) * sizeof(uint16_t));
    if (!s->wire || !s->wire_mine || !s->dev16) {
        snprintf(err, errlen, "the sharded weights' gather buffers: %s",
                 !s->dev16 ? s->be->err : "out of host memory");
        return -1;
    }
    s->master_full_step = -1;
    return 0;
}

int amp_session_shard_device(amp_session *s, char *err, size_t errlen) {
    if (!amp_dist_grads_on_device(s->grads)) return 0;
    size_t widest = 0;
    for (int r = 0; r < s->world; r++)
        if (s->block_bytes[r] > widest) widest = s->block_bytes[r];
    s->dev_block = (widest + 15) / 16 * 16;
    if (!s->dev_block) s->dev_block = 16;
    s->dev_wire = s->be->ops->alloc(s->be, (size_t)s->world * s->dev_block);
    if (!s->dev_wire || s->be->ops->zero(s->be, s->dev_wire, (size_t)s->world * s->dev_block)) {
        snprintf(err, errlen, "the sharded weights' device gather buffer: %s", s->be->err);
        return -1;
    }
    /* the host wire is not used */
    free(s->wire);
    free(s->wire_mine);
    s->wire = s->wire_mine = NULL;
    return 0;
}

void amp_session_shard_close(amp_session *s) {
    free(s->wire_at);
    free(s->block_bytes);
    free(s->block_at);
    free(s->master_full);
    free(s->wire);
    free(s->wire_mine);
    if (s->dev16 && s->be) s->be->ops->release(s->be, s->dev16);
    if (s->dev_wire && s->be) s->be->ops->release(s->be, s->dev_wire);
}

/* This rank's shard of the masters into its block, in the working dtypes
 * (the rounding counted in the owner's cast counts): on the host, or (the
 * device wire) in place in the device buffer, where a 16-bit value's byte
 * offset is even (every tensor's values start at an even byte) and the
 * FP32 ones are copied bytewise. */
static int encode_shard(amp_session *s, char *err, size_t errlen) {
    amp_model *m = s->model;
    amp_backend *be = s->be;
    const amp_model_desc *d = &m->desc;
    size_t lo = (size_t)s->rank * s->shard, hi = lo + s->shard;
    uint8_t *block = s->dev_wire ? s->dev_wire + (size_t)s->rank * s->dev_block : s->wire_mine;
    AMP_BE_TRY(s->be, amp_kit_cast_begin(m));
    for (int t = 0; t < d->nparam_tensors && !d->params[t].buffer; t++) {
        const amp_param_desc *P = &d->params[t];
        size_t a = P->offset > lo ? P->offset : lo;
        size_t b = P->offset + P->numel < hi ? P->offset + P->numel : hi;
        if (a >= b) continue;
        const float *src = m->master + (a - lo);
        uint8_t *dst = block + (wire_byte(s, a) - s->block_at[s->rank]);
        amp_working_copy wc;
        amp_round_count *cnt = NULL;
        int w16 = amp_model_copy16(m, t, &wc);
        if (w16) cnt = amp_kit_cast_count(m, wc.layer);
        if (w16 && wc.also_f32) { /* FP32 on the wire; the rounding counted by the owner */
            AMP_BE_TRY(s->be, be->ops->round(be, s->dev16, wc.dt, src, b - a, cnt));
            w16 = 0;
        }
        if (w16 && s->dev_wire) {
            AMP_BE_TRY(s->be, be->ops->round(be, dst, wc.dt, src, b - a, cnt));
        } else if (w16) {
            AMP_BE_TRY(s->be, be->ops->round(be, s->dev16, wc.dt, src, b - a, cnt));
            AMP_BE_TRY(s->be, be->ops->download(be, dst, s->dev16, (b - a) * sizeof(uint16_t)));
        } else if (s->dev_wire) {
            AMP_BE_TRY(s->be, be->ops->copy(be, dst, src, (b - a) * sizeof(float)));
        } else {
            AMP_BE_TRY(s->be, be->ops->download(be, dst, src, (b - a) * sizeof(float)));
        }
    }
    amp_kit_cast_end(m, 1);
    return 0;
}

/* The wire's bytes [at, at + bytes) into device memory dst: from the host
 * wire, or from each rank's block of the device wire that holds part of
 * them. */
static int put_wire(amp_session *s, void *dst, size_t at, size_t bytes, char *err,
                    size_t errlen) {
    amp_backend *be = s->be;
    if (!s->dev_wire) {
        AMP_BE_TRY(s->be, be->ops->upload(be, dst, s->wire + at, bytes));
        return 0;
    }
    for (int r = 0; r < s->world; r++) {
        size_t a = s->block_at[r] > at ? s->block_at[r] : at;
        size_t b = s->block_at[r] + s->block_bytes[r];
        if (b > at + bytes) b = at + bytes;
        if (a < b)
            AMP_BE_TRY(s->be, be->ops->copy(be, (uint8_t *)dst + (a - at),
                              s->dev_wire + (size_t)r * s->dev_block + (a - s->block_at[r]), b - a));
    }
    return 0;
}

/* The gathered wire into every working copy and into wts. */
static int decode_all(amp_session *s, char *err, size_t errlen) {
    amp_model *m = s->model;
    amp_backend *be = s->be;
    const amp_model_desc *d = &m->desc;
    for (int t = 0; t < d->nparam_tensors && !d->params[t].buffer; t++) {
        const amp_param_desc *P = &d->params[t];
        size_t at = s->wire_at[t];
        amp_working_copy wc;
        if (!P->numel) continue;
        int w16 = amp_model_copy16(m, t, &wc);
        if (!w16 || wc.also_f32) {
            float *w = m->wts + m->wts_off[t];
            if (put_wire(s, w, at, P->numel * sizeof(float), err, errlen)) return -1;
            if (!w16) continue;
            /* the 16-bit copy of a tied tensor, as its cast rounds it (counted by the owners) */
            if (!wc.f32_store) {
                AMP_BE_TRY(s->be, be->ops->round(be, wc.ptr, wc.dt, w, P->numel, NULL));
            } else {
                AMP_BE_TRY(s->be, be->ops->round(be, s->dev16, wc.dt, w, P->numel, NULL));
                AMP_BE_TRY(s->be, be->ops->widen(be, wc.ptr, s->dev16, wc.dt, P->numel));
            }
        } else if (!wc.f32_store) {
            if (put_wire(s, wc.ptr, at, P->numel * sizeof(uint16_t), err, errlen)) return -1;
        } else { /* an FP32 array of the 16-bit values */
            if (put_wire(s, s->dev16, at, P->numel * sizeof(uint16_t), err, errlen)) return -1;
            AMP_BE_TRY(s->be, be->ops->widen(be, wc.ptr, s->dev16, wc.dt, P->numel));
        }
    }
    return 0;
}

int amp_session_share_weights(amp_session *s, char *err, size_t errlen) {
    if (!s->shard) return 0;
    if (encode_shard(s, err, errlen) != 0) return -1;
    if (s->dev_wire) {
        if (amp_dist_grads_allgather(s->grads, s->dev_wire, s->dev_block, err, errlen) != 0)
            return -1;
        /* counted as amp_dist_allgatherv counts: this rank's block, to N - 1 ranks */
        s->weights_sent += (uint64_t)(s->world - 1) * s->block_bytes[s->rank];
    } else {
        if (amp_dist_allgatherv(s->dist, s->wire_mine, s->wire, s->block_bytes, s->block_at,
                                &s->weights_sent, err, errlen) != 0)
            return -1;
        memcpy(s->wire + s->block_at[s->rank], s->wire_mine, s->block_bytes[s->rank]);
    }
    if (decode_all(s, err, errlen) != 0) return -1;
    s->model->copies_stale = 0;
    return 0;
}

/* Every rank's `mine` FP32 values at flat offset lo into rank 0's
 * full[0, ntrained) (the others send theirs). */
static int gather_f32(amp_session *s, const float *dev, float *full, char *err, size_t errlen) {
    amp_model *m = s->model;
    size_t nt = m->desc.ntrained, lo = m->opt_lo, mine = lo < nt ? nt - lo : 0;
    int root = s->rank == 0;
    if (mine > s->shard) mine = s->shard;
    memset(s->gather, 0, (size_t)(root ? s->world : 1) * s->shard * sizeof(float));
    if (mine) AMP_BE_TRY(s->be, s->be->ops->download(s->be, s->gather + (root ? lo : 0), dev,
                                                     mine * sizeof(float)));
    if (amp_dist_gather(s->dist, s->gather, s->shard * sizeof(float), err, errlen) != 0)
        return -1;
    if (root) memcpy(full, s->gather, nt * sizeof(float));
    return 0;
}

void amp_session_count_bad(amp_session *s, const float *w) {
    size_t n = s->model->desc.nparams;
    s->weights_bad = s->weights_first = 0;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(w[i]) && s->weights_bad++ == 0) s->weights_first = i;
}

int amp_session_gather_optim(amp_session *s, char *err, size_t errlen) {
    if (!s->shard) return 0;
    amp_model *m = s->model;
    const amp_model_desc *d = &m->desc;
    size_t n = d->nparams, nt = d->ntrained;
    int root = s->rank == 0;
    for (int k = 0; k < m->opt_buffers; k++) {
        if (gather_f32(s, m->opt[k], root ? s->opt_full + (size_t)k * n : NULL, err, errlen) != 0)
            return -1;
        /* the buffers' moments are never stepped: 0, as unsharded */
        if (root) memset(s->opt_full + (size_t)k * n + nt, 0, (n - nt) * sizeof(float));
    }
    if (gather_f32(s, m->master, s->master_full, err, errlen) != 0) return -1;
    /* the buffers (batch norm's running statistics) are rank 0's own */
    for (int t = 0; t < d->nparam_tensors && root; t++)
        if (d->params[t].buffer && d->params[t].numel)
            AMP_BE_TRY(s->be, s->be->ops->download(s->be, s->master_full + d->params[t].offset,
                                     m->wts + m->wts_off[t], d->params[t].numel * sizeof(float)));
    /* rank 0's check of the whole, so every rank takes the same decision */
    uint64_t bad[2] = {0, 0};
    if (root) {
        amp_session_count_bad(s, s->master_full);
        bad[0] = s->weights_bad;
        bad[1] = s->weights_first;
    }
    if (amp_dist_bcast(s->dist, bad, sizeof bad, err, errlen) != 0) return -1;
    s->weights_bad = (size_t)bad[0];
    s->weights_first = (size_t)bad[1];
    s->opt_full_step = s->master_full_step = s->step;
    return 0;
}
