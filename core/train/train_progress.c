/* Progress on stderr (train_progress.h). */
#include "train_progress.h"

#include <stdio.h>
#include <unistd.h>

#include "util/clock.h"

void amp_progress_start(amp_progress *p, const amp_session *s, int talk, double prior_s) {
    p->talk = talk;
    p->tty = talk && isatty(fileno(stderr));
    p->drawn = 0;
    p->t0 = amp_clock_s();
    p->prior_s = prior_s;
    p->last_draw = -1e30;
    p->step0 = s->step;
    p->eval_step = -1;
}

void amp_progress_duration(char *out, size_t n, double sec) {
    long long t = sec > 0 && sec < 1e9 ? (long long)(sec + 0.5) : 0;
    if (t >= 3600)
        snprintf(out, n, "%lldh%02lldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(out, n, "%lldm%02llds", t / 60, t % 60);
    else
        snprintf(out, n, "%llds", t);
}

static const char *eval_name(const amp_session *s) {
    return s->data_ops->eval_is_validation ? "val_loss" : "test_loss";
}

/* A language model's evaluation is its validation loss (the held-out 10%
 * of the text, or the val tokens); a classifier's the test set's loss and
 * accuracy (in the order each line always had them). */
static void eval_text(char *out, size_t n, const amp_session *s, double loss, double acc,
                      int acc_first) {
    if (s->data_ops->eval_is_validation)
        snprintf(out, n, "val_loss %.4f", loss);
    else if (acc_first)
        snprintf(out, n, "test_acc %.4f test_loss %.4f", acc, loss);
    else
        snprintf(out, n, "test_loss %.4f test_acc %.4f", loss, acc);
}

static void draw(amp_progress *p, const amp_session *s, const amp_step_record *r, double now) {
    double run_s = now - p->t0;
    int64_t done = r->step - p->step0, left = s->total_steps - r->step;
    double ms = done > 0 ? 1000.0 * run_s / (double)done : 0.0;
    /* rows per step: samples, or tokens for a text model (targets per row) */
    int text = s->model->input.targets > 1;
    double per_s = ms > 0 ? (double)amp_session_rows_per_step(s) * 1000.0 / ms : 0.0;
    char ev[64] = "", el[16], eta[16];
    if (p->eval_step >= 0)
        snprintf(ev, sizeof ev, " | %s %.4f", eval_name(s), p->eval_loss);
    amp_progress_duration(el, sizeof el, p->prior_s + run_s);
    amp_progress_duration(eta, sizeof eta, (double)left * ms / 1000.0);
    /* \033[K clears what a longer earlier line left */
    fprintf(stderr, "\rstep %lld/%lld | loss %.4f%s%s | %.1f ms/step | %.0f %s/s | %s | ETA %s\033[K",
            (long long)r->step, (long long)s->total_steps, r->loss, r->skipped ? " (skipped)" : "",
            ev, ms, per_s, text ? "tok" : "samples", el, eta);
    p->drawn = 1;
    p->last_draw = now;
    if (r->step == s->total_steps) amp_progress_end(p);
    fflush(stderr);
}

void amp_progress_step(amp_progress *p, const amp_session *s, const amp_step_record *r,
                       int logged) {
    if (!p->talk) return;
    if (p->tty) {
        double now = amp_clock_s();
        if (now - p->last_draw >= 0.1 || r->step == s->total_steps) draw(p, s, r, now);
    } else if (logged) {
        fprintf(stderr, "step %lld/%lld epoch %lld loss %.4f scale %g grad_norm %.4g%s\n",
                (long long)r->step, (long long)s->total_steps, (long long)r->epoch, r->loss, r->scale,
                r->grad_norm, r->skipped ? " skipped" : "");
    }
}

void amp_progress_eval(amp_progress *p, const amp_session *s, double loss, double acc) {
    if (!p->talk) return;
    if (p->tty) {
        if (p->drawn) fputs("\r\033[K", stderr); /* the line goes above the live one */
        p->drawn = 0;
        p->eval_step = s->step;
        p->eval_loss = loss;
        p->last_draw = -1e30; /* the live line comes back at the next step */
    }
    char what[96];
    eval_text(what, sizeof what, s, loss, acc, 0);
    fprintf(stderr, "eval at step %lld: %s\n", (long long)s->step, what);
}

void amp_progress_final(const amp_session *s, double loss, double acc, double wall_s) {
    char what[96];
    eval_text(what, sizeof what, s, loss, acc, 1);
    fprintf(stderr, "amptrain: %s: %s, %lld steps (%lld skipped), %.1f s\n", s->set.name, what,
            (long long)s->step, (long long)s->skipped, wall_s);
}

void amp_progress_end(amp_progress *p) {
    if (p->drawn) fputc('\n', stderr);
    p->drawn = 0;
}
