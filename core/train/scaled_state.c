#include "scaled_state.h"

#include "formats/family.h"

#include "backend/kernels/convert.h"
#include "io/json.h"
#include "io/le_bytes.h"
#include "util/log.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const role_names[AMP_ROLE_COUNT] = {"input", "weight", "grad_output"};

void amp_scaled_wire(amp_scaled *s, amp_plugin *precision) {
    if (!s) return;
    const amp_precision_vtable *pv = amp_plugin_precision(precision);
    int has = pv->struct_size > offsetof(amp_precision_vtable, scale_update) && pv->scale_update;
    s->update = has ? pv->scale_update : NULL;
    s->update_ctx = has ? precision->self : NULL;
    s->policy = precision->entry->name;
    s->policy_err = precision->host.err;
}

int amp_scaled_end_step(amp_scaled *s, amp_dist *d, amp_plugin *precision, char *err,
                        size_t errlen) {
    if (!s) return 0;
    int n = s->nslots;
    if (n > 0 && amp_dist_world(d) > 1) {
        /* [n] amax, then [3n] counts of the WEIGHT slots: maxed (every rank
         * casts the same master weights, so one rank's counts are all's);
         * then [3n] counts of the others: summed (each rank saw its rows). */
        double *v = calloc((size_t)n * 7, sizeof *v);
        if (!v) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        double *amax = v, *same = v + n, *counts = v + 4 * (size_t)n;
        for (int i = 0; i < n; i++) {
            const amp_fp8_stats *st = &s->slot[i].step;
            double *c = (s->slot[i].role == AMP_ROLE_WEIGHT ? same : counts) + 3 * i;
            amax[i] = st->amax;
            c[0] = (double)st->saturated;
            c[1] = (double)st->flushed;
            c[2] = (double)st->nan;
        }
        int rc = amp_dist_max(d, v, 4 * n, err, errlen) || amp_dist_sum(d, counts, 3 * n, err, errlen);
        for (int i = 0; !rc && i < n; i++) {
            amp_fp8_stats *st = &s->slot[i].step;
            const double *c = (s->slot[i].role == AMP_ROLE_WEIGHT ? same : counts) + 3 * i;
            st->amax = (float)amax[i];
            st->saturated = (unsigned long long)c[0];
            st->flushed = (unsigned long long)c[1];
            st->nan = (unsigned long long)c[2];
        }
        free(v);
        if (rc) return -1;
    }
    if (amp_scaled_step_end(s, err, errlen) != 0) return -1; /* naming the plugin, the step */
    if (amp_plugin_misuse(precision)) {
        snprintf(err, errlen, "%s, in scale_update", amp_plugin_misuse(precision));
        return -1;
    }
    return 0;
}

void amp_scaled_json(FILE *f, const amp_scaled *s, const char *sep) {
    static const char *const formats[AMP_FORMAT_COUNT] = {"dtype", "e4m3", "e5m2", "nvfp4"};
    static const char *const scalings[AMP_SCALING_COUNT] = {"delayed", "current", "mx32",
                                                            "nvfp4_1d", "nvfp4_2d"};
    if (!s || s->nslots == 0) return;
    fputs(",\"fp8\":[", f);
    for (int i = 0; i < s->nslots; i++) {
        const amp_scaled_slot *sl = &s->slot[i];
        fprintf(f, "%s%s{\"layer\":", i ? "," : "", sep);
        amp_json_str(f, s->layer_names ? s->layer_names[sl->layer] : "");
        fprintf(f, ",\"role\":\"%s\",\"format\":\"%s\",\"scaling\":\"%s\",\"amax\":",
                role_names[sl->role],
                sl->fmt.format < AMP_FORMAT_COUNT ? formats[sl->fmt.format]
                : sl->family                      ? sl->family->name
                                                  : "unknown",
                sl->fmt.scaling < AMP_SCALING_COUNT ? scalings[sl->fmt.scaling] : "unknown");
        amp_json_num(f, sl->last.amax);
        fputs(",\"scale\":", f);
        amp_json_num(f, sl->scale);
        fprintf(f, ",\"saturated\":%llu,\"flushed\":%llu,\"nan\":%llu,\"kept\":%lld",
                sl->last.saturated, sl->last.flushed, sl->last.nan, (long long)sl->kept);
        if (sl->family && sl->family->json) sl->family->json(f, sl); /* its own counts */
        fputs("}", f);
    }
    fputs("]", f);
}

/* ---- the checkpoint bytes (little-endian) ---- */

/* 2: a GRAD_OUTPUT's amaxes, history and scale in unscaled units (1: in
 * the loss-scaled units of each step; the same bytes under a loss scale of 1) */
#define STATE_MAGIC "AMPSCLD2"
#define STATE_MAGIC_V1 "AMPSCLD1"
#define SLOT_FIXED (7 * 4 + 4 + 8 + 4 + 3 * 8)

static uint64_t f64_bits(double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    return u;
}

/* The scaling with the operand flags above bit 16 (0 before NVFP4, so an
 * older state reads the same): a resume under other flags is refused. */
static uint32_t scaling_word(const amp_scaled_slot *sl) { return sl->fmt.scaling | sl->flags << 16; }

static size_t history_of(const amp_scaled_slot *sl) {
    return sl->fmt.scaling == AMP_SCALING_DELAYED ? sl->fmt.history_len : 0;
}

int amp_scaled_state_save(const amp_scaled *s, uint8_t **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (!s || s->nslots == 0) return 0;
    size_t n = 8 + 4 + 8;
    for (int i = 0; i < s->nslots; i++) n += SLOT_FIXED + 8 * history_of(&s->slot[i]);
    uint8_t *b = malloc(n), *p = b;
    if (!b) return -1;
    memcpy(p, STATE_MAGIC, 8);
    p = amp_le_put(p + 8, (uint32_t)s->nslots, 4);
    p = amp_le_put(p, (uint64_t)s->step, 8);
    for (int i = 0; i < s->nslots; i++) {
        const amp_scaled_slot *sl = &s->slot[i];
        uint32_t fixed[7] = {(uint32_t)sl->layer, (uint32_t)sl->role, sl->fmt.format,
                             scaling_word(sl), sl->fmt.history_len, sl->head, sl->count};
        for (int k = 0; k < 7; k++) p = amp_le_put(p, fixed[k], 4);
        p = amp_le_put(p, amp_f32_bits(sl->scale), 4);
        p = amp_le_put(p, (uint64_t)sl->kept, 8);
        p = amp_le_put(p, amp_f32_bits(sl->last.amax), 4);
        p = amp_le_put(p, sl->last.saturated, 8);
        p = amp_le_put(p, sl->last.flushed, 8);
        p = amp_le_put(p, sl->last.nan, 8);
        for (size_t k = 0; k < history_of(sl); k++) p = amp_le_put(p, f64_bits(sl->history[k]), 8);
    }
    *out = b;
    *len = n;
    return 0;
}

static void slot_text(char *out, size_t outlen, const amp_scaled *s, const uint32_t *f) {
    const char *layer = f[0] < (uint32_t)s->nlayers && s->layer_names ? s->layer_names[f[0]] : "?";
    snprintf(out, outlen, "layer '%s' %s: format %u, scaling %u, history %u", layer,
             f[1] < AMP_ROLE_COUNT ? role_names[f[1]] : "?", f[2], f[3], f[4]);
}

int amp_scaled_state_load(amp_scaled *s, const uint8_t *buf, size_t len, const char *policy,
                          char *err, size_t errlen) {
    int have = s ? s->nslots : 0;
    if (len == 0 || !buf) {
        if (have == 0) return 0;
        snprintf(err, errlen, "the checkpoint holds no FP8/MX operand state, but policy '%s' puts "
                 "%d operands in scaled formats; resume it with the policy it was written with",
                 policy, have);
        return -1;
    }
    const uint8_t *p = buf, *end = buf + len;
    int v1 = len >= 20 && memcmp(p, STATE_MAGIC_V1, 8) == 0;
    if (len < 20 || (!v1 && memcmp(p, STATE_MAGIC, 8) != 0)) {
        snprintf(err, errlen, "section SCLD: not a scaled-operand state (%zu bytes)", len);
        return -1;
    }
    if (v1)
        amp_log(AMP_LOG_WARN, "the checkpoint's FP8 state holds the gradients' amaxes in loss-scaled "
                "units (written before they were kept unscaled): under a loss scale other than 1 "
                "the gradients' FP8 scales are off by it until the history has rolled over");
    p += 8;
    uint32_t n = (uint32_t)amp_le_take(&p, 4);
    int64_t step = (int64_t)amp_le_take(&p, 8);
    if ((int)n != have) {
        snprintf(err, errlen, "the checkpoint holds %u scaled (FP8/MX) operands, this run's policy "
                 "'%s' has %d: it was written under another policy or other [precision] keys",
                 n, policy, have);
        return -1;
    }
    /* check every slot before changing any */
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *q = p;
        for (int i = 0; i < have; i++) {
            amp_scaled_slot *sl = &s->slot[i];
            if ((size_t)(end - q) < SLOT_FIXED) goto short_state;
            uint32_t f[7];
            for (int k = 0; k < 7; k++) f[k] = (uint32_t)amp_le_take(&q, 4);
            uint32_t want[5] = {(uint32_t)sl->layer, (uint32_t)sl->role, sl->fmt.format,
                                scaling_word(sl), sl->fmt.history_len};
            if (memcmp(f, want, sizeof want) != 0) {
                char a[200], b[200];
                slot_text(a, sizeof a, s, f);
                slot_text(b, sizeof b, s, want);
                snprintf(err, errlen, "the checkpoint's scaled operand %d (%s) differs from this "
                         "run's (%s, policy '%s'): it was written under another policy or other "
                         "[precision] keys", i, a, b, policy);
                return -1;
            }
            size_t H = history_of(sl);
            if ((H && (f[5] >= H || f[6] > H)) || (!H && (f[5] || f[6]))) {
                snprintf(err, errlen, "section SCLD: operand %d has head %u, count %u for a history "
                         "of %zu", i, f[5], f[6], H);
                return -1;
            }
            uint32_t scale = (uint32_t)amp_le_take(&q, 4);
            int64_t kept = (int64_t)amp_le_take(&q, 8);
            uint32_t amax = (uint32_t)amp_le_take(&q, 4);
            uint64_t c[3] = {amp_le_take(&q, 8), amp_le_take(&q, 8), amp_le_take(&q, 8)};
            if ((size_t)(end - q) < 8 * H) goto short_state;
            if (pass == 1) {
                sl->head = f[5];
                sl->count = f[6];
                memcpy(&sl->scale, &scale, 4);
                sl->kept = kept;
                memcpy(&sl->last.amax, &amax, 4);
                sl->last.saturated = c[0];
                sl->last.flushed = c[1];
                sl->last.nan = c[2];
                memset(&sl->step, 0, sizeof sl->step);
                for (size_t k = 0; k < H; k++) {
                    uint64_t u = amp_le_take(&q, 8);
                    memcpy(&sl->history[k], &u, 8);
                }
            } else {
                float fs;
                memcpy(&fs, &scale, 4);
                if (!isfinite(fs) || !(fs > 0.0f)) {
                    snprintf(err, errlen, "section SCLD: operand %d has the scale %g", i, (double)fs);
                    return -1;
                }
                q += 8 * H;
            }
        }
        if (pass == 0 && q != end) {
            snprintf(err, errlen, "section SCLD: %td bytes after the last operand", end - q);
            return -1;
        }
    }
    s->step = step;
    return 0;
short_state:
    snprintf(err, errlen, "section SCLD: %zu bytes end inside an operand", len);
    return -1;
}
