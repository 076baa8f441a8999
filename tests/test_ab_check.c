/* test_ab_check DIR SEEDS [--diff section.key] [--same-start]
 * Checks DIR/ab.json from `amptrain ab` against its schema (amptrain-ab/1)
 * and against the run files it summarises: every key and type, the seeds,
 * the statistics recomputed from each run's summary, the comparisons'
 * arithmetic and intervals, and the run folders. --diff: the study must list
 * that config difference (else it must list none). --same-start: for each
 * seed, arms with the same precision policy must report the same first-step
 * loss (same initial weights and first batch), and different seeds must not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"
#include "io/json_read.h"

static const amp_jval *get(const amp_jval *o, const char *key, amp_jtype t, const char *where) {
    const amp_jval *v = amp_json_get(o, key);
    EXPECT(v != NULL, "%s: missing \"%s\"", where, key);
    if (v) EXPECT(v->type == t, "%s: \"%s\" has type %d, expected %d", where, key, v->type, t);
    return v && v->type == t ? v : NULL;
}

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b)) + 1e-12; }

static double num(const amp_jval *o, const char *key, const char *where) {
    const amp_jval *v = get(o, key, AMP_JNUM, where);
    return v ? v->num : NAN;
}

enum { NSTAT = 9 };
static const char *const stat_keys[NSTAT] = {"final_train_loss", "test_loss",    "test_acc",
                                             "median_step_ms",   "wall_seconds", "skipped_steps",
                                             "underflow",        "overflow",     "median_cpu_ms"};
/* the summary.json key each statistic is computed from */
static const char *const summary_keys[NSTAT] = {"final_train_loss", "test_loss",    "test_acc",
                                                "median_step_ms",   "wall_seconds", "skipped_steps",
                                                "underflow",        "overflow",     "median_cpu_ms"};

static void check_stat(const amp_jval *s, const double *x, int n, const char *where) {
    if (!s) return;
    EXPECT(num(s, "n", where) == n, "%s: n", where);
    double mean = 0;
    for (int i = 0; i < n; i++) mean += x[i] / n;
    EXPECT(near(num(s, "mean", where), mean), "%s: mean %g, recomputed %g", where,
           num(s, "mean", where), mean);
    const amp_jval *sd = amp_json_get(s, "sd");
    if (n < 2) {
        EXPECT(sd && sd->type == AMP_JNULL, "%s: sd must be null with one seed", where);
    } else {
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
        EXPECT(sd && sd->type == AMP_JNUM && near(sd->num, sqrt(ss / (n - 1))), "%s: sd", where);
    }
    EXPECT(num(s, "min", where) <= mean + 1e-12 && num(s, "max", where) >= mean - 1e-12,
           "%s: min <= mean <= max", where);
}

/* Every arm of one `ab` run ran the same seeds: each interval is the
 * paired t interval on the nseeds per-seed differences. */
static void check_welch(const amp_jval *w, double diff, int nseeds, const char *where) {
    if (!w) return;
    const amp_jval *test = amp_json_get_type(w, "test", AMP_JSTR);
    EXPECT(test && strcmp(test->str, "paired") == 0, "%s: test is not \"paired\"", where);
    EXPECT(num(w, "n", where) == nseeds, "%s: n %g, expected %d pairs", where, num(w, "n", where), nseeds);
    EXPECT(near(num(w, "diff", where), diff), "%s: diff %g, expected %g", where,
           num(w, "diff", where), diff);
    const amp_jval *ci = amp_json_get(w, "ci95"), *sig = amp_json_get(w, "significant");
    if (nseeds < 2) {
        EXPECT(ci && ci->type == AMP_JNULL, "%s: ci95 must be null with one seed", where);
        EXPECT(sig && sig->type == AMP_JNULL, "%s: significant must be null with one seed", where);
        return;
    }
    EXPECT(ci && ci->type == AMP_JARR && ci->n == 2, "%s: ci95 is [lo, hi]", where);
    EXPECT(sig && sig->type == AMP_JBOOL, "%s: significant is a boolean", where);
    if (!ci || ci->type != AMP_JARR || ci->n != 2 || !sig || sig->type != AMP_JBOOL) return;
    double lo = ci->items[0].num, hi = ci->items[1].num;
    EXPECT(lo <= diff + 1e-12 && diff - 1e-12 <= hi, "%s: diff outside [%g, %g]", where, lo, hi);
    EXPECT(sig->b == (lo > 0 || hi < 0), "%s: significant must mean the CI excludes 0", where);
}

/* The loss of step 1 in a run's metrics.jsonl. */
static double first_loss(const char *dir) {
    char path[4200], line[4096], err[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    EXPECT(f != NULL, "%s: missing", path);
    if (!f) return NAN;
    double loss = NAN;
    if (fgets(line, sizeof line, f)) {
        amp_jval *v = amp_json_parse(line, strlen(line), path, 1, err, sizeof err);
        EXPECT(v != NULL, "%s", err);
        const amp_jval *l = amp_json_get_type(v, "loss", AMP_JNUM);
        const amp_jval *s = amp_json_get_type(v, "step", AMP_JNUM);
        EXPECT(l && s && s->num == 1, "%s: the first line must be step 1 with a loss", path);
        if (l) loss = l->num;
        amp_json_free(v);
    }
    fclose(f);
    return loss;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_ab_check DIR SEEDS [--diff section.key] [--same-start]\n");
        return 2;
    }
    const char *dir = argv[1], *want_diff = NULL;
    int nseeds = atoi(argv[2]), same_start = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--diff") == 0 && i + 1 < argc) want_diff = argv[++i];
        else if (strcmp(argv[i], "--same-start") == 0) same_start = 1;
    }
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/ab.json", dir);
    amp_jval *root = amp_json_parse_file(path, err, sizeof err);
    EXPECT(root != NULL, "%s", err);
    if (!root) return 1;
    const amp_jval *schema = get(root, "schema", AMP_JSTR, "ab.json");
    EXPECT(schema && strcmp(schema->str, "amptrain-ab/1") == 0, "schema name");
    get(root, "created", AMP_JSTR, "ab.json");
    const amp_jval *machine = get(root, "machine", AMP_JOBJ, "ab.json");
    get(machine, "host", AMP_JSTR, "machine");
    get(machine, "cpu", AMP_JSTR, "machine");
    get(machine, "cpus", AMP_JNUM, "machine");
    get(machine, "device", AMP_JSTR, "machine");
    EXPECT(num(root, "confidence_level", "ab.json") == 0.95, "confidence_level");
    const amp_jval *order = get(root, "order", AMP_JSTR, "ab.json");
    EXPECT(order && strcmp(order->str, "interleaved, rotating per seed") == 0, "order");
    const amp_jval *metric = get(root, "metric", AMP_JSTR, "ab.json");
    int by_loss = metric && strcmp(metric->str, "val_loss") == 0;
    EXPECT(metric && (by_loss || strcmp(metric->str, "test_acc") == 0), "metric");
    get(root, "metric_from", AMP_JSTR, "ab.json");
    const amp_jval *timing = get(root, "timing", AMP_JOBJ, "ab.json");
    const amp_jval *basis = get(timing, "basis", AMP_JSTR, "timing");
    int cpu_basis = basis && strcmp(basis->str, "cpu") == 0;
    EXPECT(basis && (cpu_basis || strcmp(basis->str, "wall") == 0), "timing.basis");
    const amp_jval *disturbed = get(timing, "disturbed", AMP_JBOOL, "timing");
    get(timing, "why", AMP_JSTR, "timing");
    get(root, "overrides", AMP_JARR, "ab.json");
    get(root, "allow_diff", AMP_JBOOL, "ab.json");
    const amp_jval *seeds = get(root, "seeds", AMP_JARR, "ab.json");
    EXPECT(seeds && (int)seeds->n == nseeds, "%d seeds expected", nseeds);
    for (size_t i = 1; seeds && i < seeds->n; i++)
        EXPECT(seeds->items[i].num == seeds->items[0].num + (double)i, "seeds are consecutive");

    const amp_jval *diffs = get(root, "config_differences", AMP_JARR, "ab.json");
    int found = 0;
    for (size_t i = 0; diffs && i < diffs->n; i++) {
        const amp_jval *d = &diffs->items[i];
        const amp_jval *sec = get(d, "section", AMP_JSTR, "difference");
        const amp_jval *key = get(d, "key", AMP_JSTR, "difference");
        get(d, "values", AMP_JOBJ, "difference");
        char full[300];
        snprintf(full, sizeof full, "%s.%s", sec ? sec->str : "?", key ? key->str : "?");
        found |= want_diff && strcmp(full, want_diff) == 0;
        EXPECT(want_diff, "unexpected config difference %s", full);
    }
    if (want_diff) EXPECT(found, "config_differences must list %s", want_diff);

    const amp_jval *arms = get(root, "arms", AMP_JARR, "ab.json");
    if (!arms) return 1;
    EXPECT(arms->n >= 2, "at least two arms");
    const amp_jval *baseline = get(root, "baseline", AMP_JSTR, "ab.json");
    int na = (int)arms->n;
    double means[16][NSTAT];
    double step[16][64]; /* each run's step time on the study's basis */
    double first[16][64];
    double per_run[16][2][64]; /* each run's test_loss and test_acc */
    const char *prec[16];
    for (int a = 0; a < na && a < 16; a++) {
        const amp_jval *arm = &arms->items[a];
        const amp_jval *name = get(arm, "name", AMP_JSTR, "arm");
        if (a == 0 && baseline && name) EXPECT(strcmp(baseline->str, name->str) == 0, "baseline is arm 0");
        get(arm, "config", AMP_JSTR, "arm");
        const amp_jval *p = get(arm, "precision", AMP_JSTR, "arm");
        prec[a] = p ? p->str : "";
        get(arm, "scaler", AMP_JSTR, "arm");
        const amp_jval *runs = get(arm, "runs", AMP_JARR, "arm");
        const amp_jval *stats = get(arm, "stats", AMP_JOBJ, "arm");
        if (!runs || !stats) continue;
        EXPECT((int)runs->n == nseeds, "arm %d: %zu runs, expected %d", a, runs->n, nseeds);
        if ((int)runs->n != nseeds || nseeds > 64) continue;
        for (int k = 0; k < NSTAT; k++) {
            double x[64];
            for (int r = 0; r < nseeds; r++) {
                const amp_jval *sum = get(&runs->items[r], "summary", AMP_JOBJ, "run");
                x[r] = num(sum, summary_keys[k], "summary");
                if (k == (cpu_basis ? 8 : 3)) step[a][r] = x[r];
                if (k == 1 || k == 2) per_run[a][k - 1][r] = x[r];
            }
            const amp_jval *s = get(stats, stat_keys[k], AMP_JOBJ, "stats");
            check_stat(s, x, nseeds, stat_keys[k]);
            double m = 0;
            for (int r = 0; r < nseeds; r++) m += x[r] / nseeds;
            means[a][k] = m;
        }
        const amp_jval *mem = get(stats, "memory_peak_bytes", AMP_JOBJ, "stats");
        EXPECT(mem && mem->n >= 1 && amp_json_get(mem, "total"), "memory categories with a total");
        for (int r = 0; r < nseeds; r++) {
            const amp_jval *run = &runs->items[r];
            EXPECT(seeds && num(run, "seed", "run") == seeds->items[r].num, "run %d seed", r);
            num(run, "process_seconds", "run");
            /* the order rotates: seed r's round starts with arm r mod arms */
            EXPECT(num(run, "order", "run") == (a - r % na + na) % na, "arm %d seed %d: order", a, r);
            const amp_jval *rd = get(run, "dir", AMP_JSTR, "run");
            const amp_jval *sum = get(run, "summary", AMP_JOBJ, "run");
            get(sum, "layers", AMP_JARR, "summary");
            get(sum, "memory_peak_bytes", AMP_JOBJ, "summary");
            if (!rd) continue;
            static const char *const files[] = {"summary.json", "metrics.jsonl", "config.ini",
                                                "weights.safetensors", "train.log"};
            for (int f = 0; f < 5; f++) {
                snprintf(path, sizeof path, "%s/%s", rd->str, files[f]);
                EXPECT(access(path, R_OK) == 0, "%s is missing", path);
            }
            first[a][r] = first_loss(rd->str);
        }
    }
    const amp_jval *cmps = get(root, "comparisons", AMP_JARR, "ab.json");
    EXPECT(cmps && (int)cmps->n == na * (na - 1) / 2, "one comparison per pair of arms");
    for (size_t i = 0; cmps && i < cmps->n && na <= 16; i++) {
        const amp_jval *c = &cmps->items[i];
        const amp_jval *an = get(c, "a", AMP_JSTR, "comparison"), *bn = get(c, "b", AMP_JSTR, "comparison");
        int ia = -1, ib = -1;
        for (int a = 0; a < na; a++) {
            const amp_jval *name = amp_json_get_type(&arms->items[a], "name", AMP_JSTR);
            if (name && an && strcmp(name->str, an->str) == 0) ia = a;
            if (name && bn && strcmp(name->str, bn->str) == 0) ib = a;
        }
        EXPECT(ia >= 0 && ib > ia, "comparison names arms a < b");
        if (ia < 0 || ib <= ia) continue;
        check_welch(get(c, "final_train_loss", AMP_JOBJ, "comparison"), means[ib][0] - means[ia][0], nseeds, "final_train_loss");
        check_welch(get(c, "test_loss", AMP_JOBJ, "comparison"), means[ib][1] - means[ia][1], nseeds, "test_loss");
        check_welch(get(c, "test_acc", AMP_JOBJ, "comparison"), means[ib][2] - means[ia][2], nseeds, "test_acc");
        check_welch(get(c, "median_step_ms", AMP_JOBJ, "comparison"), means[ib][3] - means[ia][3], nseeds, "median_step_ms");
        const amp_jval *verdict = get(c, "verdict", AMP_JOBJ, "comparison");
        check_welch(verdict, means[ib][by_loss ? 1 : 2] - means[ia][by_loss ? 1 : 2], nseeds, "verdict");
        const amp_jval *per = get(c, "verdict_per_seed", AMP_JARR, "comparison");
        EXPECT(per && (int)per->n == nseeds, "verdict_per_seed: one difference per seed");
        for (int r = 0; per && (int)per->n == nseeds && r < nseeds && r < 64; r++)
            EXPECT(near(per->items[r].num, per_run[ib][by_loss ? 0 : 1][r] - per_run[ia][by_loss ? 0 : 1][r]),
                   "verdict_per_seed[%d] = %g, expected arm b - arm a of seed %d", r, per->items[r].num, r);
        double lsum = 0;
        for (int r = 0; r < nseeds && r < 64; r++) lsum += log(step[ia][r] / step[ib][r]) / nseeds;
        const amp_jval *speed = get(c, "speed", AMP_JOBJ, "comparison");
        EXPECT(near(num(speed, "speedup", "speed"), exp(lsum)),
               "speedup = geometric mean over seeds of a's / b's step time");
        EXPECT(near(num(c, "speedup", "comparison"), exp(lsum)), "speedup = speed.speedup");
        const amp_jval *sig = amp_json_get(speed, "significant");
        if (disturbed && disturbed->b)
            EXPECT(sig && !(sig->type == AMP_JBOOL && sig->b),
                   "a speed difference called significant on disturbed timing");
        EXPECT(num(c, "memory_ratio", "comparison") > 0, "memory_ratio");
    }
    if (same_start) {
        int pairs = 0;
        for (int a = 0; a < na && a < 16; a++)
            for (int b = a + 1; b < na && b < 16; b++) {
                if (strcmp(prec[a], prec[b]) != 0) continue;
                for (int r = 0; r < nseeds && r < 64; r++) {
                    EXPECT(first[a][r] == first[b][r], "seed %d: arms %d and %d start with losses %.9g and %.9g",
                           r, a, b, first[a][r], first[b][r]);
                    pairs++;
                }
            }
        EXPECT(pairs > 0, "--same-start needs two arms with the same precision policy");
        if (nseeds >= 2) EXPECT(first[0][0] != first[0][1], "different seeds must start differently");
    }
    snprintf(path, sizeof path, "%s/report.html", dir);
    EXPECT(access(path, R_OK) == 0, "%s is missing", path);
    amp_json_free(root);
    if (amp_test_failures) fprintf(stderr, "%d failure(s) in %s/ab.json\n", amp_test_failures, dir);
    return amp_test_failures ? 1 : 0;
}
