/* The layer-sensitivity scan: groups of layers from a --scan value, and the
 * ranking of the groups by the share of the candidate's gap to the baseline
 * that keeping each at the baseline's precision closes. Runs are paired by
 * seed (same start, same batches), so a group's gain is the mean of per-seed
 * differences with a t interval; the share divides it by the mean gap. */
#include "ab/ab_scan.h"

#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void amp_ab_layer_block(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s", name);
    for (char *p = out; *p;) {
        char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        int digits = n > 0;
        for (size_t i = 0; i < n; i++) digits &= p[i] >= '0' && p[i] <= '9';
        if (digits) {
            p[n] = '\0';
            return;
        }
        if (!dot) return;
        p = dot + 1;
    }
}

void amp_ab_groups_free(amp_ab_group *g, int n) {
    for (int i = 0; g && i < n; i++) free(g[i].members);
    free(g);
}

/* Adds layer l to the group labelled label, making the group if new. */
static int add_member(amp_ab_group *g, int *ng, int max, const char *label, const char *name,
                      int l, int nnames, char *err, size_t errlen) {
    int i = 0;
    while (i < *ng && strcmp(g[i].label, label) != 0) i++;
    if (i == *ng) {
        if (*ng == max) {
            snprintf(err, errlen, "--scan: more than %d groups; name fewer (globs, or 'blocks')", max);
            return -1;
        }
        snprintf(g[i].label, sizeof g[i].label, "%s", label);
        snprintf(g[i].name, sizeof g[i].name, "%s", name);
        g[i].members = calloc((size_t)nnames, sizeof *g[i].members);
        g[i].nmembers = 0;
        if (!g[i].members) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        (*ng)++;
    }
    g[i].members[g[i].nmembers++] = l;
    return 0;
}

/* A glob group's name: its one layer's, else the glob less a trailing ".*"
 * ("transformer.h.*.mlp.*" names "transformer.h.*.mlp"). */
static void glob_name(amp_ab_group *g, const char *const *names) {
    if (g->nmembers == 1) {
        snprintf(g->name, sizeof g->name, "%s", names[g->members[0]]);
        return;
    }
    size_t n = strlen(g->name);
    if (n > 2 && strcmp(g->name + n - 2, ".*") == 0) g->name[n - 2] = '\0';
}

static void list_layers(char *err, size_t errlen, const char *const *names, int nnames) {
    size_t n = strlen(err);
    n += (size_t)snprintf(err + n, n < errlen ? errlen - n : 0, "; the model's layers:");
    for (int l = 0; l < nnames && n < errlen; l++)
        n += (size_t)snprintf(err + n, errlen - n, " %s", names[l]);
}

int amp_ab_scan_groups(amp_ab_group **out, int *ngroups, const char *spec,
                       const char *const *names, int nnames, int max, char *err, size_t errlen) {
    *out = NULL;
    *ngroups = 0;
    amp_ab_group *g = calloc((size_t)max, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int ng = 0, rc = 0;
    if (strcmp(spec, "blocks") == 0 || strcmp(spec, "layers") == 0) {
        int blocks = spec[0] == 'b';
        for (int l = 0; l < nnames && rc == 0; l++) {
            char label[128], block[128];
            amp_ab_layer_block(block, sizeof block, names[l]);
            if (!blocks || strcmp(block, names[l]) == 0)
                snprintf(label, sizeof label, "%s", names[l]);
            else
                snprintf(label, sizeof label, "%s.*", block);
            rc = add_member(g, &ng, max, label, strcmp(label, names[l]) ? block : names[l], l,
                            nnames, err, errlen);
        }
    } else {
        const char *p = spec;
        while (rc == 0) {
            size_t n = strcspn(p, ",");
            char glob[128];
            if (n == 0 || n >= sizeof glob) {
                snprintf(err, errlen, "--scan '%s': %s; expected blocks, layers or "
                         "comma-separated layer globs", spec, n ? "a glob is too long" : "an empty group");
                rc = -1;
                break;
            }
            memcpy(glob, p, n);
            glob[n] = '\0';
            int hit = 0;
            for (int l = 0; l < nnames && rc == 0; l++)
                if (fnmatch(glob, names[l], 0) == 0) {
                    hit = 1;
                    rc = add_member(g, &ng, max, glob, glob, l, nnames, err, errlen);
                }
            for (int i = 0; rc == 0 && i < ng; i++)
                if (strcmp(g[i].label, glob) == 0) glob_name(&g[i], names);
            if (rc == 0 && !hit) {
                snprintf(err, errlen, "--scan: '%s' matches no layer", glob);
                list_layers(err, errlen, names, nnames);
                rc = -1;
            }
            if (!p[n]) break;
            p += n + 1;
        }
    }
    if (rc == 0 && ng == 0) {
        snprintf(err, errlen, "--scan '%s': no groups", spec);
        rc = -1;
    }
    if (rc != 0) {
        amp_ab_groups_free(g, ng);
        return -1;
    }
    *out = g;
    *ngroups = ng;
    return 0;
}

/* The metric oriented so that larger is better. */
static double goodness(const amp_ab_study *st, const amp_ab_run *r) {
    return st->metric == AMP_AB_METRIC_LOSS ? -r->test_loss : r->test_acc;
}

static int by_closed(const void *x, const void *y) {
    const amp_ab_scan_row *a = x, *b = y;
    double ca = isfinite(a->gain) ? a->gain : -INFINITY, cb = isfinite(b->gain) ? b->gain : -INFINITY;
    return (cb > ca) - (cb < ca);
}

void amp_ab_scan_rank(amp_ab_scan *sc, const amp_ab_study *st) {
    const amp_ab_arm *base = &st->arms[0], *cand = &st->arms[1];
    double xb[1024], xa[1024];
    int n = cand->nruns < 1024 ? cand->nruns : 1024;
    for (int i = 0; i < n; i++) {
        xb[i] = goodness(st, &base->runs[i]);
        xa[i] = goodness(st, &cand->runs[i]);
    }
    amp_ab_paired_ci(&sc->gap, xa, xb, n, AMP_AB_LEVEL); /* baseline - candidate, per seed */
    for (int g = 0; g < sc->ngroups; g++) {
        amp_ab_scan_row *row = &sc->rows[g];
        const amp_ab_arm *arm = &st->arms[sc->first_arm + g];
        double d[1024];
        for (int i = 0; i < n; i++) d[i] = goodness(st, &arm->runs[i]) - xa[i];
        amp_ab_summary s;
        amp_ab_summarize(&s, d, n);
        row->arm = sc->first_arm + g;
        row->gain = s.mean;
        row->lo = row->hi = NAN;
        row->has_ci = n >= 2;
        if (row->has_ci) {
            double h = amp_ab_t_quantile(0.5 + 0.5 * AMP_AB_LEVEL, n - 1) * s.sd / sqrt(n);
            row->lo = s.mean - h;
            row->hi = s.mean + h;
        }
        row->significant = row->has_ci && row->lo > 0;
        double gap = sc->gap.diff;
        row->closed = gap > 0 ? row->gain / gap : NAN;
        row->closed_lo = gap > 0 ? row->lo / gap : NAN;
        row->closed_hi = gap > 0 ? row->hi / gap : NAN;
    }
    qsort(sc->rows, (size_t)sc->ngroups, sizeof *sc->rows, by_closed);
}

const amp_ab_group *amp_ab_scan_group(const amp_ab_scan *sc, const amp_ab_scan_row *r) {
    return &sc->groups[r->arm - sc->first_arm];
}

const char *amp_ab_scan_dtype(const amp_ab_scan *sc, const amp_ab_scan_row *r) {
    return sc->base_dtype[r->arm - sc->first_arm];
}

int amp_ab_scan_has_gap(const amp_ab_scan *sc) {
    return sc->gap.has_ci && sc->gap.significant && sc->gap.diff > 0;
}

void amp_ab_scan_print(const amp_ab_scan *sc, const amp_ab_study *st, FILE *f) {
    const char *m = st->metric == AMP_AB_METRIC_LOSS ? "val loss" : "test acc";
    int lm = st->metric == AMP_AB_METRIC_LOSS;
    fprintf(f, "\nlayer scan: %s with each group kept at %s's precision; gap %s - %s on %s: "
               "%+.4f",
            st->arms[1].name, st->arms[0].name, st->arms[0].name, st->arms[1].name, m,
            lm ? -sc->gap.diff : sc->gap.diff);
    if (sc->gap.has_ci)
        fprintf(f, " [%+.4f, %+.4f]%s\n", lm ? -sc->gap.hi : sc->gap.lo, lm ? -sc->gap.lo : sc->gap.hi,
                amp_ab_scan_has_gap(sc) ? "" : " (no significant gap: nothing to close)");
    else
        fputs(" (1 seed: no interval)\n", f);
    fprintf(f, "%4s  %-32s  %6s  %-30s  %-24s  %s\n", "rank", "group", "layers",
            lm ? "Δloss vs candidate [95% CI]" : "Δacc vs candidate [95% CI]", "gap closed [95% CI]",
            "signif.");
    for (int i = 0; i < sc->ngroups; i++) {
        const amp_ab_scan_row *r = &sc->rows[i];
        char d[64], c[64];
        double s = lm ? -1 : 1; /* print the metric's own sign: a loss goes down */
        if (r->has_ci)
            snprintf(d, sizeof d, "%+.4f [%+.4f, %+.4f]", s * r->gain, s * (lm ? r->hi : r->lo),
                     s * (lm ? r->lo : r->hi));
        else
            snprintf(d, sizeof d, "%+.4f [n/a: 1 seed]", s * r->gain);
        if (amp_ab_scan_has_gap(sc) && r->has_ci)
            snprintf(c, sizeof c, "%.0f%% [%.0f%%, %.0f%%]", 100 * r->closed, 100 * r->closed_lo,
                     100 * r->closed_hi);
        else
            snprintf(c, sizeof c, "n/a");
        fprintf(f, "%4d  %-32s  %6d  %-30s  %-24s  %s\n", i + 1, amp_ab_scan_group(sc, r)->label,
                amp_ab_scan_group(sc, r)->nmembers, d, c, r->has_ci ? (r->significant ? "yes" : "no") : "n/a");
    }
    amp_ab_scan_print_skipped(sc, st, f);
    int nsig = 0;
    for (int i = 0; i < sc->ngroups; i++) nsig += sc->rows[i].significant;
    if (!amp_ab_scan_has_gap(sc) || nsig == 0) {
        fputs("no group closes a significant part of a significant gap: no overrides to suggest\n", f);
        return;
    }
    fprintf(f, "suggested overrides (the groups that help significantly), for %s's [precision] "
               "section:\n", st->arms[1].name);
    for (int i = 0; i < sc->ngroups; i++)
        if (sc->rows[i].significant)
            fprintf(f, "  layer.%s = %s\n", amp_ab_scan_group(sc, &sc->rows[i])->label,
                    amp_ab_scan_dtype(sc, &sc->rows[i]));
}
