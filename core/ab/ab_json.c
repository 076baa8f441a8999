/* ab.json: every run's summary, per-arm statistics across seeds and the
 * pairwise comparisons (b - a, paired t 95% intervals; Welch's when seeds differ). Schema "amptrain-ab/1";
 * docs/ab-testing.md describes it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/ab_recommend.h"
#include "ab/ab_scan.h"
#include "io/json.h"

/* Re-serialises a parsed value (an embedded summary.json). */
static void write_value(FILE *f, const amp_jval *v, int indent) {
    switch (v->type) {
    case AMP_JNULL: fputs("null", f); break;
    case AMP_JBOOL: fputs(v->b ? "true" : "false", f); break;
    case AMP_JNUM: amp_json_num(f, v->num); break;
    case AMP_JSTR: amp_json_str(f, v->str); break;
    case AMP_JARR:
    case AMP_JOBJ: {
        int obj = v->type == AMP_JOBJ;
        fputc(obj ? '{' : '[', f);
        for (size_t i = 0; i < v->n; i++) {
            fprintf(f, "%s\n%*s", i ? "," : "", indent + 2, "");
            if (obj) {
                amp_json_str(f, v->keys[i]);
                fputs(": ", f);
            }
            write_value(f, &v->items[i], indent + 2);
        }
        if (v->n) fprintf(f, "\n%*s", indent, "");
        fputc(obj ? '}' : ']', f);
        break;
    }
    }
}

static void write_summary_stats(FILE *f, const amp_ab_summary *s) {
    fprintf(f, "{\"n\": %d, \"mean\": ", s->n);
    amp_json_num(f, s->mean);
    fputs(", \"sd\": ", f);
    amp_json_num(f, s->sd);
    fputs(", \"min\": ", f);
    amp_json_num(f, s->min);
    fputs(", \"max\": ", f);
    amp_json_num(f, s->max);
    fputc('}', f);
}

/* "[lo, hi]" (null for a non-finite end). */
static void write_pair(FILE *f, double lo, double hi) {
    fputc('[', f);
    amp_json_num(f, lo);
    fputs(", ", f);
    amp_json_num(f, hi);
    fputc(']', f);
}

static void write_welch(FILE *f, const amp_ab_welch *w) {
    fputs("{\"diff\": ", f);
    amp_json_num(f, w->diff);
    fprintf(f, ", \"test\": \"%s\", \"n\": %d", w->paired ? "paired" : "welch", w->n);
    if (w->has_ci) {
        fputs(", \"ci95\": ", f);
        write_pair(f, w->lo, w->hi);
        fputs(", \"df\": ", f);
        amp_json_num(f, w->df);
        fputs(", \"se\": ", f);
        amp_json_num(f, w->se);
        fprintf(f, ", \"significant\": %s}", w->significant ? "true" : "false");
    } else {
        fputs(", \"ci95\": null, \"df\": null, \"se\": null, \"significant\": null}", f);
    }
}

/* The verdict's per-seed differences b - a, in seed order (null when the
 * arms' seeds differ). */
static void write_seed_deltas(FILE *f, const amp_ab_study *st, int a, int b) {
    double *d = malloc((size_t)(st->arms[b].nruns > 0 ? st->arms[b].nruns : 1) * sizeof *d);
    int n = d ? amp_ab_seed_deltas(st, a, b, d) : 0;
    fputs(",\n     \"verdict_per_seed\": ", f);
    if (n == 0) fputs("null", f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ", " : "[", f);
        amp_json_num(f, d[i]);
    }
    if (n) fputc(']', f);
    free(d);
}

/* The recommendation (ab_recommend.h) with each arm's evidence. */
static void write_recommendation(FILE *f, const amp_ab_study *st) {
    static amp_ab_rec rec; /* large: off the stack */
    amp_ab_recommend(&rec, st);
    fputs(",\n  \"recommendation\": {\"arm\": ", f);
    amp_json_str(f, st->arms[rec.best].name);
    fputs(", \"tolerance\": ", f);
    amp_json_num(f, rec.tolerance);
    fprintf(f, ", \"tolerance_from\": \"%s\", \"why\": ", rec.tol_given ? "--tolerance" : "default");
    amp_json_str(f, rec.why);
    fputs(", \"arms\": [", f);
    for (int a = 1; a < st->narms && a < AMP_AB_MAX_ARMS; a++) {
        char emu[256] = "";
        int emulated = amp_ab_emulated(st, a, emu, sizeof emu);
        fputs(a > 1 ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
        amp_json_str(f, st->arms[a].name);
        fprintf(f, ", \"qualifies\": %s, \"emulated\": ", rec.arms[a].qualifies ? "true" : "false");
        if (emulated) amp_json_str(f, emu);
        else fputs("null", f);
        fputs(", \"for\": ", f);
        amp_json_str(f, rec.arms[a].pro);
        fputs(", \"against\": ", f);
        amp_json_str(f, rec.arms[a].con);
        fputc('}', f);
    }
    fputs(st->narms > 1 ? "\n  ]}" : "]}", f);
}

static void write_arm(FILE *f, const amp_ab_study *st, const amp_ab_arm *arm) {
    fputs("    {\n      \"name\": ", f);
    amp_json_str(f, arm->name);
    fputs(",\n      \"config\": ", f);
    amp_json_str(f, arm->config);
    fputs(",\n      \"precision\": ", f);
    amp_json_str(f, arm->precision);
    fputs(",\n      \"scaler\": ", f);
    amp_json_str(f, arm->scaler);
    if (arm->sample) {
        fputs(",\n      \"sample\": ", f);
        amp_json_str(f, arm->sample);
    }
    fputs(",\n      \"runs\": [", f);
    for (int i = 0; i < arm->nruns; i++) {
        const amp_ab_run *r = &arm->runs[i];
        fprintf(f, "%s\n        {\"seed\": %llu, \"dir\": ", i ? "," : "", (unsigned long long)r->seed);
        amp_json_str(f, r->dir);
        fprintf(f, ", \"order\": %d, \"process_seconds\": ", r->order);
        amp_json_num(f, r->parent_wall_s);
        fputs(", \"summary\": ", f);
        write_value(f, r->summary, 8);
        fputc('}', f);
    }
    fputs("\n      ],\n      \"stats\": {", f);
    static const char *const names[] = {"final_train_loss", "test_loss",     "test_acc",
                                        "median_step_ms",   "median_cpu_ms", "wall_seconds",
                                        "skipped_steps",    "underflow",     "overflow"};
    const amp_ab_summary *vals[] = {&arm->final_loss, &arm->test_loss, &arm->test_acc,
                                    &arm->median_ms,  &arm->cpu_ms,    &arm->wall_s,
                                    &arm->skipped,    &arm->underflow, &arm->overflow};
    for (int k = 0; k < 9; k++) {
        fprintf(f, "%s\n        \"%s\": ", k ? "," : "", names[k]);
        write_summary_stats(f, vals[k]);
    }
    fputs(",\n        \"memory_peak_bytes\": {", f);
    for (int m = 0; m < st->nmem; m++) {
        fprintf(f, "%s\n          ", m ? "," : "");
        amp_json_str(f, st->mem_names[m]);
        fputs(": ", f);
        write_summary_stats(f, &arm->mem[m]);
    }
    fputs("\n        }\n      }\n    }", f);
}

static void write_scan(const amp_ab_scan *sc, const amp_ab_study *st, FILE *f) {
    fputs(",\n  \"scan\": {\"baseline\": ", f);
    amp_json_str(f, st->arms[0].name);
    fputs(", \"candidate\": ", f);
    amp_json_str(f, st->arms[1].name);
    fputs(", \"gap\": ", f);
    write_welch(f, &sc->gap);
    fprintf(f, ", \"gap_to_close\": %s, \"groups\": [", amp_ab_scan_has_gap(sc) ? "true" : "false");
    for (int i = 0; i < sc->ngroups; i++) {
        const amp_ab_scan_row *r = &sc->rows[i];
        const amp_ab_group *g = amp_ab_scan_group(sc, r);
        fprintf(f, "%s\n    {\"rank\": %d, \"group\": ", i ? "," : "", i + 1);
        amp_json_str(f, g->label);
        fputs(", \"arm\": ", f);
        amp_json_str(f, st->arms[r->arm].name);
        fprintf(f, ", \"layers\": %d, \"dtype\": ", g->nmembers);
        amp_json_str(f, amp_ab_scan_dtype(sc, r));
        fputs(", \"gain\": ", f);
        amp_json_num(f, r->gain);
        fputs(", \"gain_ci95\": ", f);
        write_pair(f, r->lo, r->hi);
        fputs(", \"gap_closed\": ", f);
        amp_json_num(f, r->closed);
        fputs(", \"gap_closed_ci95\": ", f);
        write_pair(f, r->closed_lo, r->closed_hi);
        fprintf(f, ", \"significant\": %s}", r->significant ? "true" : "false");
    }
    fputs("]", f);
    amp_ab_scan_json_skipped(sc, f);
    fputs("}", f);
}

int amp_ab_write_json(const amp_ab_study *st, FILE *f) {
    fputs("{\n  \"schema\": \"amptrain-ab/1\",\n  \"created\": ", f);
    amp_json_str(f, st->created);
    fputs(",\n  \"machine\": {\"host\": ", f);
    amp_json_str(f, st->host);
    fputs(", \"cpu\": ", f);
    amp_json_str(f, st->cpu);
    fprintf(f, ", \"cpus\": %d, \"device\": ", st->ncpu);
    amp_json_str(f, st->device);
    fputs("},\n  \"confidence_level\": ", f);
    amp_json_num(f, AMP_AB_LEVEL);
    fputs(",\n  \"seeds\": [", f);
    for (int i = 0; i < st->nseeds; i++)
        fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)st->seeds[i]);
    fputs("],\n  \"order\": \"interleaved, rotating per seed\",\n  \"metric\": ", f);
    amp_json_str(f, st->metric == AMP_AB_METRIC_LOSS ? "val_loss" : "test_acc");
    fprintf(f, ", \"metric_from\": \"%s\"", st->metric_forced ? "--metric" : "model");
    const amp_ab_timing *t = &st->timing;
    fprintf(f, ",\n  \"timing\": {\"basis\": \"%s\", \"disturbed\": %s, \"why\": ",
            t->cpu_basis ? "cpu" : "wall", t->disturbed ? "true" : "false");
    amp_json_str(f, t->why);
    fputs(", \"wall_cpu_ratio\": ", f);
    write_pair(f, t->ratio_lo, t->ratio_hi);
    fputs(", \"load_avg_max\": ", f);
    amp_json_num(f, t->load_max);
    fputs("},\n  \"baseline\": ", f);
    amp_json_str(f, st->arms[0].name);
    fputs(",\n  \"overrides\": [", f);
    for (int i = 0; i < st->nsets; i++) {
        fputs(i ? ", " : "", f);
        amp_json_str(f, st->sets[i]);
    }
    fprintf(f, "],\n  \"ranks\": %d,\n  \"allow_diff\": %s,\n  \"config_differences\": [",
            st->ranks > 0 ? st->ranks : 1, st->allow_diff ? "true" : "false");
    for (int d = 0; d < st->ndiffs; d++) {
        const amp_ab_diff *df = &st->diffs[d];
        fprintf(f, "%s\n    {\"section\": ", d ? "," : "");
        amp_json_str(f, df->section);
        fputs(", \"key\": ", f);
        amp_json_str(f, df->key);
        fputs(", \"values\": {", f);
        for (int a = 0; a < st->narms; a++) {
            fputs(a ? ", " : "", f);
            amp_json_str(f, st->arms[a].name);
            fputs(": ", f);
            amp_json_str(f, df->values[a]);
        }
        fputs("}}", f);
    }
    fputs(st->ndiffs ? "\n  ],\n  \"arms\": [\n" : "],\n  \"arms\": [\n", f);
    for (int a = 0; a < st->narms; a++) {
        write_arm(f, st, &st->arms[a]);
        fputs(a + 1 < st->narms ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"comparisons\": [", f);
    int first = 1;
    for (int a = 0; a < st->narms; a++)
        for (int b = a + 1; b < st->narms; b++) {
            amp_ab_cmp c;
            amp_ab_compare(&c, st, a, b);
            fprintf(f, "%s\n    {\"a\": ", first ? "" : ",");
            first = 0;
            amp_json_str(f, st->arms[a].name);
            fputs(", \"b\": ", f);
            amp_json_str(f, st->arms[b].name);
            fputs(",\n     \"test_acc\": ", f);
            write_welch(f, &c.test_acc);
            fputs(",\n     \"test_loss\": ", f);
            write_welch(f, &c.test_loss);
            fputs(",\n     \"final_train_loss\": ", f);
            write_welch(f, &c.final_loss);
            fputs(",\n     \"median_step_ms\": ", f);
            write_welch(f, &c.median_ms);
            fputs(",\n     \"verdict\": ", f);
            write_welch(f, &c.verdict);
            write_seed_deltas(f, st, a, b);
            fputs(",\n     \"speed\": {\"speedup\": ", f);
            amp_json_num(f, c.speed.speedup);
            fputs(", \"ci95\": ", f);
            if (c.speed.has_ci) write_pair(f, c.speed.lo, c.speed.hi);
            else fputs("null", f);
            fprintf(f, ", \"seeds\": %d, \"per_seed\": ", c.speed.n);
            write_pair(f, c.speed.seed_lo, c.speed.seed_hi);
            fprintf(f, ", \"noisy\": %s, \"significant\": %s}", c.speed.noisy ? "true" : "false",
                    c.speed.has_ci ? (c.speed.significant ? "true" : "false") : "null");
            fputs(",\n     \"speedup\": ", f);
            amp_json_num(f, c.speedup);
            fputs(", \"memory_ratio\": ", f);
            amp_json_num(f, c.mem_ratio);
            fputc('}', f);
        }
    fputs(first ? "]" : "\n  ]", f);
    write_recommendation(f, st);
    if (st->scan) write_scan(st->scan, st, f);
    fputs("\n}\n", f);
    return ferror(f) ? -1 : 0;
}
