/* The optimizer's fused cast (amp_backend_ops.optim_step_cast): the step
 * writes the working copies as it updates the weights, counting what the
 * rounding lost per layer; the next cast_weights then only adds those
 * counts to the stats record instead of casting again. */
#include <stdio.h>
#include <stdlib.h>

#include "kit_state.h"

int amp_kit_cast_begin(amp_model *m) {
    amp_kit *k = m->kit;
    k->cast_fresh = 0;
    return m->be->ops->zero(m->be, k->cast_cnt, (size_t)m->desc.nlayers * sizeof *k->cast_cnt);
}

amp_round_count *amp_kit_cast_count(amp_model *m, int layer) { return &m->kit->cast_cnt[layer]; }

void amp_kit_cast_end(amp_model *m, int wrote) { m->kit->cast_fresh = wrote; }

int amp_model_cast_reuse(amp_model *m) {
    amp_kit *k = m->kit;
    if (!k->cast_fresh) return 0;
    k->cast_fresh = 0;
    amp_backend *be = m->be;
    size_t nl = (size_t)m->desc.nlayers, bytes = 2 * nl * sizeof(amp_round_count);
    amp_round_count *cast = malloc(nl * sizeof *cast), *rounds = malloc(bytes);
    amp_round_count *dev = amp_stats_rounds(m->stats, 0, 0); /* every layer's two slots */
    int rc = !cast || !rounds || be->ops->download(be, cast, k->cast_cnt, nl * sizeof *cast) ||
             be->ops->download(be, rounds, dev, bytes);
    for (size_t l = 0; !rc && l < nl; l++) {
        amp_round_count *r = &rounds[2 * l + AMP_ROUND_FWD];
        r->nonzero += cast[l].nonzero;
        r->underflow += cast[l].underflow;
        r->overflow += cast[l].overflow;
    }
    rc = rc || be->ops->upload(be, dev, rounds, bytes);
    if (!cast || !rounds) snprintf(be->err, sizeof be->err, "out of host memory");
    free(cast);
    free(rounds);
    return rc ? -1 : 1;
}
