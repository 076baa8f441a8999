/* `amptrain ab`: the data an A/B study collects, shared by the runner
 * (cmd_ab.c), the loader of each run's files (ab_load.c), ab.json
 * (ab_json.c), the terminal table (ab_table.c) and report.html
 * (ab_report.c). An arm is one config; a run is one (arm, seed). */
#ifndef AMP_AB_H
#define AMP_AB_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "ab/ab_stats.h"
#include "io/json_read.h"

#define AMP_AB_MAX_MEM 16    /* memory categories read from summary.json */
#define AMP_AB_LEVEL 0.95    /* confidence level of every interval */

typedef struct amp_ab_point { /* one metrics.jsonl step line */
    int64_t step;
    double loss, scale, step_ms; /* loss NAN when it was not finite */
    double cpu_ms;               /* process CPU time of the step; NAN in older files */
    int skipped;
    double underflow, overflow;
} amp_ab_point;

typedef struct amp_ab_eval { /* one metrics.jsonl evaluation line */
    int64_t step;
    double test_loss, test_acc;
} amp_ab_eval;

typedef struct amp_ab_layer { /* per-layer rounding totals from summary.json */
    char name[96];
    double fwd_under, fwd_over, fwd_rounded;
    double grad_under, grad_over, grad_rounded;
} amp_ab_layer;

typedef struct amp_ab_run {
    uint64_t seed;
    char dir[PATH_MAX];
    double parent_wall_s; /* measured around the child process */
    amp_jval *summary;    /* summary.json as read, owned */
    char device[32], precision[64], scaler[64];
    double steps, skipped, final_loss, test_loss, test_acc, final_scale, wall_s, median_ms;
    double world_size, median_comm_ms; /* data parallel: 1 and 0 when the summary has none */
    double median_cpu_ms;         /* process CPU time per step; NAN in older summaries */
    double load_start, load_end;  /* 1-minute load average around the steps; NAN if unknown */
    int has_val_loss;             /* summary.json has val_loss: a language model */
    int order;                    /* 0-based position of the run within its seed's round */
    double underflow, overflow, rounded;
    double mem[AMP_AB_MAX_MEM]; /* indexed like amp_ab_study.mem_names */
    amp_ab_layer *layers; /* [nlayers], owned */
    int nlayers;
    amp_ab_point *pts; /* every step (the runner sets train.log_every = 1) */
    size_t npts;
    amp_ab_eval *evals;
    size_t nevals;
} amp_ab_run;

typedef struct amp_ab_arm {
    char name[128];        /* [run] name */
    char slug[128];        /* name made safe for a folder name */
    char config[PATH_MAX]; /* the INI path as given */
    char precision[64], scaler[64]; /* plugin names */
    amp_ab_run *runs;      /* [nruns], in seed order */
    int nruns;
    /* across seeds, filled by amp_ab_arm_stats */
    amp_ab_summary final_loss, test_loss, test_acc, median_ms, cpu_ms, wall_s, skipped,
        underflow, overflow, mem[AMP_AB_MAX_MEM];
} amp_ab_arm;

typedef struct amp_ab_diff { /* a setting that is not the same in every arm */
    char section[64], key[128];
    char **values; /* [narms] resolved values ("(unset)" when an arm has none) */
} amp_ab_diff;

/* What the verdict compares: accuracy for classifiers, validation loss (and
 * perplexity) for language models. */
typedef enum amp_ab_metric { AMP_AB_METRIC_AUTO, AMP_AB_METRIC_ACC, AMP_AB_METRIC_LOSS } amp_ab_metric;

/* Whether the timing can carry a speed verdict (ab_speed.c). */
typedef struct amp_ab_timing {
    int cpu_basis;        /* the speedup compares CPU time per step, not wall time */
    int disturbed;        /* other work on the machine changed the wall times */
    double ratio_lo, ratio_hi; /* wall / CPU time per step, extremes over runs */
    double load_max;      /* highest 1-minute load average seen at a run's start or end */
    char why[256];        /* what showed the disturbance; "" when none */
} amp_ab_timing;

typedef struct amp_ab_study {
    amp_ab_arm *arms; /* arms[0] is the baseline */
    int narms;
    uint64_t *seeds;
    int nseeds;
    char mem_names[AMP_AB_MAX_MEM][32];
    int nmem;
    amp_ab_diff *diffs;
    int ndiffs;
    int allow_diff;
    const char *const *sets; /* the user's --set options, applied to every arm */
    int nsets;
    char created[32]; /* UTC, ISO 8601 */
    char host[128], cpu[160], device[32];
    int ncpu;
    double wall_s;
    amp_ab_metric metric; /* resolved: ACC or LOSS */
    int metric_forced;    /* chosen by --metric, not from the model */
    amp_ab_timing timing;
} amp_ab_study;

/* Speed of b against a, paired by seed: the geometric mean over seeds of
 * a's step time / b's on the study's basis (wall or CPU), with a t interval
 * on the log ratios. significant is never set when the timing was disturbed
 * or the seeds disagree. */
typedef struct amp_ab_speed {
    double speedup, lo, hi; /* > 1 means b is faster */
    int n, has_ci, significant;
    double seed_lo, seed_hi; /* smallest and largest per-seed ratio */
    int noisy;               /* the per-seed ratios spread too far to judge */
} amp_ab_speed;

/* Baseline (a) against another arm (b): b - a with Welch intervals. */
typedef struct amp_ab_cmp {
    int a, b;
    amp_ab_welch final_loss, test_loss, test_acc, median_ms;
    amp_ab_welch verdict; /* test_acc or test_loss, after st->metric */
    amp_ab_speed speed;
    double speedup;   /* = speed.speedup */
    double mem_ratio; /* mean total memory of b / of a */
} amp_ab_cmp;

/* Reads dir/summary.json and dir/metrics.jsonl into r (r->dir and r->seed
 * set by the caller). The first run read fixes st->mem_names; later runs
 * must have the same categories. 0, or -1 with "file:line: message". */
int amp_ab_run_load(amp_ab_run *r, amp_ab_study *st, char *err, size_t errlen);
void amp_ab_run_free(amp_ab_run *r);
/* Fills the arm's across-seed summaries. */
void amp_ab_arm_stats(amp_ab_arm *arm, int nmem);
void amp_ab_compare(amp_ab_cmp *out, const amp_ab_study *st, int a, int b);
/* Fills st->timing from the loaded runs (call after amp_ab_arm_stats). */
void amp_ab_timing_check(amp_ab_study *st);
void amp_ab_speed_compare(amp_ab_speed *out, const amp_ab_study *st, int a, int b);
/* A run's step time on the study's basis, ms. */
double amp_ab_run_step_ms(const amp_ab_study *st, const amp_ab_run *r);
/* "CPU" or "wall". */
const char *amp_ab_speed_basis(const amp_ab_study *st);
/* "validation loss" or "test accuracy"; the short form for table heads. */
const char *amp_ab_metric_name(const amp_ab_study *st);
/* Index of "total" in mem_names, or -1. */
int amp_ab_mem_total(const amp_ab_study *st);

/* ab.json. Returns 0, or -1 when writing failed. */
int amp_ab_write_json(const amp_ab_study *st, FILE *f);
/* report.html: self-contained HTML with inline CSS and SVG. */
int amp_ab_write_report(const amp_ab_study *st, FILE *f);
/* The summary table for the terminal. */
void amp_ab_print_table(const amp_ab_study *st, FILE *f);

#endif
