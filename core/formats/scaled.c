/* Scaled-operand state (scaled.h): creation, the scale rules, the history. */
#include "formats/scaled.h"

#include "formats/family.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double amp_format_max(uint32_t format) {
    return format == AMP_FORMAT_F8_E4M3   ? (double)AMP_FP8_E4M3_MAX
           : format == AMP_FORMAT_F8_E5M2 ? (double)AMP_FP8_E5M2_MAX
           : format == AMP_FORMAT_NVFP4   ? 6.0
                                          : 0.0;
}

uint64_t amp_scaled_nvfp4_key(amp_scaled *s, amp_scaled_slot *sl) {
    uint64_t tensor = ((uint64_t)(sl - s->slot) << 32) | sl->nv_calls++;
    return amp_nvfp4_tensor_key(s->seed, (uint64_t)s->step, tensor);
}

uint32_t amp_scaled_nvfp4_signs(const amp_scaled *s) {
    return amp_hadamard16_signs(s->seed, (uint64_t)s->step);
}

int amp_format_fp8(uint32_t format) {
    return format == AMP_FORMAT_F8_E5M2 ? AMP_FP8_E5M2 : AMP_FP8_E4M3;
}

int amp_scaled_create(amp_scaled **out, int nlayers, const amp_layer_precision *prec,
                      const char *const *layer_names, char *err, size_t errlen) {
    *out = NULL;
    amp_scaled *s = calloc(1, sizeof *s);
    size_t longest = 0; /* the longest amax history, for s->ordered */
    size_t nidx = (size_t)nlayers * AMP_ROLE_COUNT;
    if (!s || !(s->index = malloc((nidx ? nidx : 1) * sizeof *s->index))) goto oom;
    s->nlayers = nlayers;
    s->layer_names = layer_names;
    s->loss_scale = 1.0f;
    for (size_t i = 0; i < nidx; i++) {
        const amp_operand_format *f = &prec[i / AMP_ROLE_COUNT].operand[i % AMP_ROLE_COUNT];
        s->index[i] = f->format != AMP_FORMAT_DTYPE ? s->nslots++ : -1;
    }
    if (s->nslots && (!(s->slot = calloc((size_t)s->nslots, sizeof *s->slot)) ||
                      !(s->saved = calloc((size_t)s->nslots, sizeof *s->saved))))
        goto oom;
    for (size_t i = 0; i < nidx; i++) {
        if (s->index[i] < 0) continue;
        amp_scaled_slot *sl = &s->slot[s->index[i]];
        sl->layer = (int)(i / AMP_ROLE_COUNT);
        sl->role = (int)(i % AMP_ROLE_COUNT);
        sl->fmt = prec[sl->layer].operand[sl->role];
        sl->family = amp_format_family_of(&sl->fmt);
        sl->flags = prec[sl->layer].operand_flags[sl->role];
        sl->scale = 1.0f;
        if (sl->fmt.scaling != AMP_SCALING_DELAYED) continue;
        size_t H = sl->fmt.history_len ? sl->fmt.history_len : 1;
        if (!(sl->history = calloc(H, sizeof(double)))) goto oom;
        if (H > longest) longest = H;
    }
    if (longest && !(s->ordered = malloc(longest * sizeof *s->ordered))) goto oom;
    *out = s;
    return 0;
oom:
    amp_scaled_free(s);
    snprintf(err, errlen, "out of host memory for the scaled-operand state");
    return -1;
}

void amp_scaled_free(amp_scaled *s) {
    if (!s) return;
    for (int i = 0; s->slot && i < s->nslots; i++) free(s->slot[i].history);
    free(s->slot);
    free(s->saved);
    free(s->ordered);
    free(s->index);
    free(s);
}

amp_scaled_slot *amp_scaled_find(amp_scaled *s, int layer, int role) {
    if (!s || layer < 0 || layer >= s->nlayers || role < 0 || role >= AMP_ROLE_COUNT) return NULL;
    int i = s->index[layer * AMP_ROLE_COUNT + role];
    return i < 0 ? NULL : &s->slot[i];
}

float amp_scaled_unit(const amp_scaled *s, const amp_scaled_slot *sl) {
    return sl->role == AMP_ROLE_GRAD_OUTPUT ? s->loss_scale : 1.0f;
}

/* The slots hold no pointer an evaluation changes (the histories move only
 * in amp_scaled_step_end), so a copy of the structs is the whole state. */
void amp_scaled_eval_begin(amp_scaled *s) {
    if (s && s->nslots) memcpy(s->saved, s->slot, (size_t)s->nslots * sizeof *s->slot);
}

void amp_scaled_eval_end(amp_scaled *s) {
    if (s && s->nslots) memcpy(s->slot, s->saved, (size_t)s->nslots * sizeof *s->slot);
}

double amp_scaled_default_rule(const amp_scale_stats *st, int *kept) {
    double amax = st->amax;
    for (uint32_t i = 0; i < st->history_count; i++)
        if (!(st->history[i] <= amax)) amax = st->history[i]; /* a NaN wins, and keeps */
    *kept = !(amax > 0.0) || !isfinite(amax);
    return *kept ? st->scale : st->format_max / amax;
}

/* The next scale of slot sl from the hook or the default rule; a failure
 * names the policy and the step (both scalings come here). */
static int ask(amp_scaled *s, amp_scaled_slot *sl, amp_scale_stats *st, char *err, size_t errlen) {
    double next;
    char why[512];
    if (s->update) {
        next = NAN;
        if (s->policy_err) s->policy_err[0] = '\0';
        if (s->update(s->update_ctx, st, &next) != 0) {
            snprintf(why, sizeof why, "scale_update failed for layer '%s' role %d", st->layer,
                     sl->role);
            goto fail;
        }
        if (!isfinite(next) || !(next > 0.0)) {
            snprintf(why, sizeof why, "scale_update returned the scale %g for layer '%s' role %d "
                     "(a scale must be finite and > 0)", next, st->layer, sl->role);
            goto fail;
        }
        if (!(st->amax > 0.0) || !isfinite(st->amax)) sl->kept++;
    } else {
        int kept;
        next = amp_scaled_default_rule(st, &kept);
        sl->kept += kept;
    }
    float f = (float)next;
    if (!isfinite(f) || !(f > 0.0f)) {
        snprintf(why, sizeof why, "the scale %g of layer '%s' role %d does not fit an FP32 scale",
                 next, st->layer, sl->role);
        goto fail;
    }
    sl->scale = f;
    return 0;
fail:;
    const char *said = s->update && s->policy_err ? s->policy_err : "";
    if (s->policy)
        snprintf(err, errlen, "precision plugin '%s' at step %lld: %s%s%s", s->policy,
                 (long long)s->step, why, said[0] ? ": " : "", said);
    else
        snprintf(err, errlen, "%s%s%s", why, said[0] ? ": " : "", said);
    return -1;
}

static void fill(const amp_scaled *s, const amp_scaled_slot *sl, amp_scale_stats *st) {
    memset(st, 0, sizeof *st);
    st->struct_size = (uint32_t)sizeof *st;
    st->layer = s->layer_names ? s->layer_names[sl->layer] : "";
    st->role = (uint32_t)sl->role;
    st->format = sl->fmt.format;
    st->scaling = sl->fmt.scaling;
    st->step = s->step;
    st->format_max = amp_format_max(sl->fmt.format);
    st->scale = sl->scale;
    st->history_len = sl->fmt.history_len;
}

int amp_scaled_current(amp_scaled *s, amp_scaled_slot *sl, float amax, char *err, size_t errlen) {
    amp_scale_stats st;
    fill(s, sl, &st);
    double a = amax;
    st.amax = a;
    st.saturated = (int64_t)sl->step.saturated;
    st.flushed = (int64_t)sl->step.flushed;
    st.history = &a;
    st.history_count = 1;
    return ask(s, sl, &st, err, errlen);
}

int amp_scaled_step_end(amp_scaled *s, char *err, size_t errlen) {
    double *ordered = s ? s->ordered : NULL;
    int rc = 0;
    for (int i = 0; s && i < s->nslots && rc == 0; i++) {
        amp_scaled_slot *sl = &s->slot[i];
        sl->step.amax /= amp_scaled_unit(s, sl); /* exact for a power-of-two loss scale */
        if (sl->fmt.scaling == AMP_SCALING_DELAYED) {
            uint32_t H = sl->fmt.history_len ? sl->fmt.history_len : 1;
            sl->head = sl->count ? (sl->head + 1) % H : 0;
            sl->history[sl->head] = sl->step.amax;
            if (sl->count < H) sl->count++;
            for (uint32_t k = 0; k < sl->count; k++) /* newest first */
                ordered[k] = sl->history[(sl->head + H - k) % H];
            amp_scale_stats st;
            fill(s, sl, &st);
            st.amax = sl->step.amax;
            st.saturated = (int64_t)sl->step.saturated;
            st.flushed = (int64_t)sl->step.flushed;
            st.history = ordered;
            st.history_count = sl->count;
            rc = ask(s, sl, &st, err, errlen);
        }
        sl->last = sl->step;
        memset(&sl->step, 0, sizeof sl->step);
        sl->nv_last = sl->nv_step;
        memset(&sl->nv_step, 0, sizeof sl->nv_step);
        sl->nv_calls = 0;
    }
    if (rc == 0 && s) s->step++;
    if (s) s->loss_scale = 1.0f;
    return rc;
}
