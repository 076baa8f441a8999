/* The trainer's loop run over a session (amp_train_session, what the
 * benches and the GPU parity tests use): the hook sees every step in
 * order, the steps are the ones amp_session_step gives by hand, a hook's
 * failure and a stop flag end the loop where they say. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "train/trainer.h"

#include "expect.h"
#include "session_helpers.h"
#include "train_hooks.h"

#define STEPS 12

static const char *const tiny[] = {
    "run.device=cpu", "data.dataset=tiny", "data.train_size=256", "data.test_size=64",
    "data.features=8", "data.batch_size=32", "model.hidden=16", "precision.plugin=fp16",
    "scaler.plugin=dynamic", "optim.name=sgd", "optim.lr=0.05", "train.steps=12",
    "train.eval_every=4", NULL};

/* The loop's losses and final evaluation are those of the same steps run
 * by hand: the trainer adds no step and changes none (its evaluations
 * between steps included). */
static void test_same_steps_as_by_hand(void) {
    amp_config *ca = make_config(tiny), *cb = make_config(tiny);
    amp_session *a = open_or_die(ca), *b = open_or_die(cb);
    double loss[STEPS], by_hand[STEPS];
    amp_train_result res;
    char err[1024] = "";
    EXPECT(train_keeping_losses(a, loss, STEPS, &res, err, sizeof err) == 0, "trainer: %s", err);
    for (int i = 0; i < STEPS; i++) {
        amp_step_record r;
        step_or_die(b, &r);
        by_hand[i] = r.loss;
    }
    for (int i = 0; i < STEPS; i++)
        EXPECT(memcmp(&loss[i], &by_hand[i], sizeof loss[i]) == 0,
               "step %d: the trainer's loss %.17g, by hand %.17g", i + 1, loss[i], by_hand[i]);
    double tl, ta;
    EXPECT(amp_session_evaluate(b, &tl, &ta, err, sizeof err) == 0, "evaluate: %s", err);
    EXPECT(memcmp(&tl, &res.test_loss, sizeof tl) == 0 && memcmp(&ta, &res.test_acc, sizeof ta) == 0,
           "final evaluation: trainer %.17g/%.17g, by hand %.17g/%.17g", res.test_loss,
           res.test_acc, tl, ta);
    EXPECT(a->skipped == b->skipped, "skipped steps: trainer %lld, by hand %lld",
           (long long)a->skipped, (long long)b->skipped);
    amp_session_close(a);
    amp_session_close(b);
    amp_config_free(ca);
    amp_config_free(cb);
}

typedef struct stopper {
    int64_t at;                 /* the step after which to act */
    volatile sig_atomic_t flag; /* the session's stop flag */
    int fail;                   /* fail instead of raising the flag */
} stopper;

static int stop_at(void *user, amp_session *s, const amp_step_record *r, double cpu_ms, char *err,
                   size_t errlen) {
    (void)s;
    (void)cpu_ms;
    stopper *st = user;
    if (r->step != st->at) return 0;
    if (st->fail) {
        snprintf(err, errlen, "the hook failed after step %lld", (long long)r->step);
        return 1;
    }
    st->flag = SIGTERM;
    return 0;
}

/* A failing hook ends the loop at once with its message; a stop flag ends
 * it after the step (1: stopped, nothing written without a folder). */
static void test_hook_and_stop_end_the_loop(void) {
    for (int fail = 0; fail < 2; fail++) {
        amp_config *cfg = make_config(tiny);
        amp_session *s = open_or_die(cfg);
        stopper st = {5, 0, fail};
        s->stop_flag = &st.flag;
        amp_train_hooks h = {&st, stop_at};
        amp_train_result res;
        char err[1024] = "";
        int rc = amp_train_session(s, &h, &res, err, sizeof err);
        EXPECT(rc == (fail ? -1 : 1), "%s: returned %d", fail ? "failing hook" : "stop flag", rc);
        EXPECT(s->step == 5, "%s: stopped after step %lld, not 5", fail ? "failing hook" : "stop flag",
               (long long)s->step);
        if (fail)
            EXPECT(strstr(err, "the hook failed after step 5") != NULL, "the error is '%s'", err);
        amp_session_close(s);
        amp_config_free(cfg);
    }
}

int main(void) {
    test_same_steps_as_by_hand();
    test_hook_and_stop_end_the_loop();
    if (amp_test_failures) {
        fprintf(stderr, "%d failure(s)\n", amp_test_failures);
        return 1;
    }
    printf("trainer: all checks passed\n");
    return 0;
}
