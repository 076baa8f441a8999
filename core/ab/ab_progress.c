/* The progress of an A/B study on stderr (ab_progress.h). */
#include "ab/ab_progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "io/file.h"
#include "train/train_progress.h"

void amp_ab_progress_start(amp_ab_progress *p, int narms, int nseeds) {
    memset(p, 0, sizeof *p);
    p->tty = isatty(fileno(stderr));
    p->narms = narms;
    p->nseeds = nseeds;
    p->t_study = amp_clock_s();
}

/* The last "step i/N" line of the run's log (the child logs every step off
 * a terminal): 0 with *step and *steps, -1 when there is none yet. */
static int last_step(const char *log, long long *step, long long *steps) {
    char err[64], buf[4096];
    FILE *f = amp_file_fopen_read(log, NULL, err, sizeof err);
    if (!f) return -1;
    long at = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    size_t n = 0;
    if (at >= 0 && fseek(f, at > (long)sizeof buf - 1 ? at - (long)sizeof buf + 1 : 0, SEEK_SET) == 0)
        n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    int found = -1;
    for (char *l = buf, *nl; (nl = strchr(l, '\n')) != NULL; l = nl + 1) /* whole lines only */
        if (sscanf(l, "step %lld/%lld ", step, steps) == 2 && *steps > 0) found = 0;
    return found;
}

/* A run of arm a: its arm's mean wall time, else every finished run's. */
static double run_estimate(const amp_ab_progress *p, int a) {
    if (p->finished[a]) return p->wall_sum[a] / p->finished[a];
    double sum = 0;
    int n = 0;
    for (int i = 0; i < p->narms; i++) {
        sum += p->wall_sum[i];
        n += p->finished[i];
    }
    return n ? sum / n : -1;
}

/* Seconds left in the study at time now, or -1 when nothing is known yet
 * to estimate them from. */
static double eta(const amp_ab_progress *p, double now) {
    double ran = now - p->t_run, left = 0;
    long long step = 0, steps = 0;
    double cur = run_estimate(p, p->arm);
    if (!p->finished[p->arm] && p->log_ready && last_step(p->log, &step, &steps) == 0 && step > 0)
        cur = ran * (double)steps / (double)step; /* this run's own pace */
    for (int a = 0; a < p->narms; a++) {
        int waiting = p->nseeds - p->started[a];
        if (!waiting) continue;
        double e = run_estimate(p, a);
        if (e < 0) e = cur; /* before any run has finished: as the current one */
        if (e < 0) return -1;
        left += waiting * e;
    }
    if (cur < 0) return -1;
    return left + (cur > ran ? cur - ran : 0);
}

static void draw(amp_ab_progress *p, double now) {
    char run[16], study[16], left[16] = "-", step[48] = "";
    long long i, n;
    if (p->log_ready && last_step(p->log, &i, &n) == 0) snprintf(step, sizeof step, " | step %lld/%lld", i, n);
    amp_progress_duration(run, sizeof run, now - p->t_run);
    amp_progress_duration(study, sizeof study, now - p->t_study);
    double e = eta(p, now);
    if (e >= 0) amp_progress_duration(left, sizeof left, e);
    /* \033[K clears what a longer earlier line left */
    fprintf(stderr, "\r[%d/%d] %s seed %llu%s | %s | study %s | ETA %s\033[K", p->k,
            p->narms * p->nseeds, p->name, (unsigned long long)p->seed, step, run, study, left);
    fflush(stderr);
    p->drawn = 1;
    p->last_draw = now;
}

/* The run's line as it always was, up to its result. */
static void run_head(const amp_ab_progress *p) {
    if (p->drawn) fputs("\r\033[K", stderr);
    fprintf(stderr, "[%d/%d] %s seed %llu ... ", p->k, p->narms * p->nseeds, p->name,
            (unsigned long long)p->seed);
}

void amp_ab_progress_run(amp_ab_progress *p, int arm, const char *name, uint64_t seed,
                         const char *dir) {
    p->k++;
    p->arm = arm;
    p->name = name;
    p->seed = seed;
    p->started[arm]++;
    snprintf(p->log, sizeof p->log, "%s/train.log", dir);
    p->log_ready = 0;
    p->t_run = amp_clock_s();
    if (p->tty)
        draw(p, p->t_run);
    else
        run_head(p);
}

void amp_ab_progress_tick(amp_ab_progress *p) {
    double now = amp_clock_s();
    p->log_ready = 1; /* the run is under way: it truncated its log as it started */
    if (p->tty && now - p->last_draw >= 0.9) draw(p, now);
}

void amp_ab_progress_done(amp_ab_progress *p, const amp_ab_run *r) {
    p->wall_sum[p->arm] += r->parent_wall_s;
    p->finished[p->arm]++;
    if (p->tty) run_head(p);
    if (r->has_val_loss)
        fprintf(stderr, "val_loss %.4f (%.1f s)\n", r->test_loss, r->parent_wall_s);
    else
        fprintf(stderr, "test_acc %.4f test_loss %.4f (%.1f s)\n", r->test_acc, r->test_loss,
                r->parent_wall_s);
    p->drawn = 0;
}

void amp_ab_progress_failed(amp_ab_progress *p) {
    if (p->tty) run_head(p);
    fputs("failed\n", stderr);
    p->drawn = 0;
}
