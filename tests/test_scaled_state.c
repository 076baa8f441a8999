/* The host's scaled-operand state (core/train/scaled_state.h): a checkpoint's
 * bytes restore every slot bit for bit, a state of other slots is refused,
 * the policy's hook is wired in and a bad scale from it names the plugin. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "train/scaled_state.h"


static const char *const names[] = {"fc1", "ln", "fc2"};

/* fc1 and fc2 scaled (delayed, history `hist`; fc2's grad current), ln not. */
static amp_scaled *make(uint32_t hist, uint32_t grad_format) {
    amp_layer_precision prec[3];
    memset(prec, 0, sizeof prec);
    for (int l = 0; l < 3; l += 2)
        for (int r = 0; r < AMP_ROLE_COUNT; r++)
            prec[l].operand[r] = (amp_operand_format){
                r == AMP_ROLE_GRAD_OUTPUT ? grad_format : AMP_FORMAT_F8_E4M3,
                l == 2 && r == AMP_ROLE_GRAD_OUTPUT ? AMP_SCALING_CURRENT : AMP_SCALING_DELAYED,
                hist, 0};
    amp_scaled *s = NULL;
    char err[256];
    if (amp_scaled_create(&s, 3, prec, names, err, sizeof err) != 0) {
        fprintf(stderr, "amp_scaled_create: %s\n", err);
        exit(1);
    }
    return s;
}

/* A few steps of made-up stats so histories wrap and scales move. */
static void run_steps(amp_scaled *s, amp_plugin *pl, int steps, int from) {
    char err[512];
    for (int t = from; t < from + steps; t++) {
        for (int i = 0; i < s->nslots; i++) {
            s->slot[i].step.amax = t % 5 == 3 ? 0.0f : (float)(0.5 + 0.37 * i + 0.11 * t);
            s->slot[i].step.saturated = (unsigned long long)(t + i);
            s->slot[i].step.flushed = (unsigned long long)(2 * t);
        }
        EXPECT(amp_scaled_end_step(s, NULL, pl, err, sizeof err) == 0, "step %d: %s", t, err);
    }
}

static int same(const amp_scaled *a, const amp_scaled *b) {
    if (a->nslots != b->nslots || a->step != b->step) return 0;
    for (int i = 0; i < a->nslots; i++) {
        const amp_scaled_slot *x = &a->slot[i], *y = &b->slot[i];
        if (memcmp(&x->scale, &y->scale, 4) || x->head != y->head || x->count != y->count ||
            x->kept != y->kept || memcmp(&x->last, &y->last, sizeof x->last))
            return 0;
        if (x->history && memcmp(x->history, y->history, x->fmt.history_len * sizeof(double)))
            return 0;
    }
    return 1;
}

static int bad_mode; /* 0: the default rule; 1: NaN; 2: -1; 3: the hook fails */
static int hook(void *ctx, const amp_scale_stats *st, double *scale) {
    (void)ctx;
    if (bad_mode == 3) return 1;
    *scale = bad_mode == 1 ? NAN : bad_mode == 2 ? -1.0 : st->format_max / (st->amax + 1.0);
    return 0;
}

static const amp_plugin_info entry = {AMP_PLUGIN_ABI_MAJOR, AMP_PLUGIN_ABI_MINOR,
                                      sizeof(amp_plugin_info), AMP_PLUGIN_KIND_PRECISION,
                                      "testpolicy", "1.0", "", NULL, NULL};

int main(void) {
    static amp_plugin pl; /* a loaded policy as far as the state sees it */
    pl.entry = &entry;
    pl.kind = AMP_PLUGIN_KIND_PRECISION;
    pl.vt.precision.struct_size = sizeof(amp_precision_vtable);
    char err[512];

    /* N steps straight equal N/2 + save + load + N/2, bit for bit */
    amp_scaled *a = make(4, AMP_FORMAT_F8_E5M2), *b = make(4, AMP_FORMAT_F8_E5M2);
    run_steps(a, &pl, 10, 0);
    run_steps(b, &pl, 5, 0);
    uint8_t *bytes;
    size_t len;
    EXPECT(amp_scaled_state_save(b, &bytes, &len) == 0 && len > 0, "save");
    amp_scaled *c = make(4, AMP_FORMAT_F8_E5M2);
    EXPECT(amp_scaled_state_load(c, bytes, len, "testpolicy", err, sizeof err) == 0, "load: %s", err);
    EXPECT(same(b, c), "the loaded state differs from the saved one");
    run_steps(c, &pl, 5, 5);
    EXPECT(same(a, c), "10 steps differ from 5 + resume + 5");

    /* another policy's slots, no slots at all, a cut or padded state */
    amp_scaled *other = make(8, AMP_FORMAT_F8_E5M2), *e4 = make(4, AMP_FORMAT_F8_E4M3);
    EXPECT(amp_scaled_state_load(other, bytes, len, "fp8", err, sizeof err) != 0 &&
              strstr(err, "another policy") && strstr(err, "history 4"),
          "another history length: '%s'", err);
    EXPECT(amp_scaled_state_load(e4, bytes, len, "fp8", err, sizeof err) != 0 &&
              strstr(err, "layer 'fc1' grad_output"),
          "another format: '%s'", err);
    EXPECT(amp_scaled_state_load(e4, NULL, 0, "fp8", err, sizeof err) != 0 &&
              strstr(err, "no FP8/MX operand state"),
          "a checkpoint without state: '%s'", err);
    EXPECT(amp_scaled_state_load(e4, bytes, len - 3, "fp8", err, sizeof err) != 0,
          "a cut state loaded");
    uint8_t *pad = malloc(len + 1);
    memcpy(pad, bytes, len);
    pad[len] = 0;
    EXPECT(amp_scaled_state_load(c, pad, len + 1, "fp8", err, sizeof err) != 0 &&
              strstr(err, "after the last"),
          "a padded state: '%s'", err);
    free(pad);
    EXPECT(same(a, c), "a refused load changed the state");

    /* the hook: wired from the vtable, its scale used, a bad one named */
    pl.vt.precision.scale_update = hook;
    amp_scaled *h = make(4, AMP_FORMAT_F8_E5M2);
    amp_scaled_wire(h, &pl);
    EXPECT(h->update == hook, "scale_update not wired");
    bad_mode = 0;
    run_steps(h, &pl, 1, 0);
    EXPECT(h->slot[0].scale == (float)(448.0 / (h->slot[0].last.amax + 1.0)),
          "the hook's scale %g", (double)h->slot[0].scale);
    for (bad_mode = 1; bad_mode <= 3; bad_mode++) {
        h->slot[0].step.amax = 1.0f;
        int rc = amp_scaled_end_step(h, NULL, &pl, err, sizeof err);
        EXPECT(rc != 0 && strstr(err, "precision plugin 'testpolicy'") && strstr(err, "fc1"),
              "bad hook mode %d: rc %d '%s'", bad_mode, rc, err);
    }
    pl.vt.precision.scale_update = NULL;
    amp_scaled_wire(h, &pl);
    EXPECT(h->update == NULL, "no hook: the default rule");

    free(bytes);
    amp_scaled_free(a);
    amp_scaled_free(b);
    amp_scaled_free(c);
    amp_scaled_free(other);
    amp_scaled_free(e4);
    amp_scaled_free(h);
    if (amp_test_failures) fprintf(stderr, "test_scaled_state: %d failure(s)\n", amp_test_failures);
    return amp_test_failures ? 1 : 0;
}
