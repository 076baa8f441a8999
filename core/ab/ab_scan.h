/* Layer-sensitivity scan (`amptrain ab --scan GROUPS`): the candidate policy
 * run with each group of layers kept at the baseline's precision, ranked by
 * how much of the candidate's gap to the baseline each group closes. */
#ifndef AMP_AB_SCAN_H
#define AMP_AB_SCAN_H

#include <stddef.h>
#include <stdio.h>

#include "ab/ab.h"
#include "amptrain/plugin.h"

typedef struct amp_ab_group {
    char label[128]; /* "transformer.h.0.*", "fc1", or the user's glob: what layer.<glob> takes */
    char name[128];  /* from the layer names: "transformer.h.0", "fc1"; names the group's arm */
    int *members;    /* [nmembers] indices into the layer names, owned */
    int nmembers;
} amp_ab_group;

/* A layer's block: the name up to its first all-digit component ("h.3" for
 * "h.3.attn.c_proj"); a name without one is its own block. */
void amp_ab_layer_block(char *out, size_t cap, const char *name);

/* Groups from a --scan value: "blocks" (one per block), "layers" (one per
 * layer) or comma-separated globs (`*` also crosses dots). 0, or -1 with
 * err naming the item (an empty item, a glob that matches no layer, more
 * than max groups, ...). */
int amp_ab_scan_groups(amp_ab_group **out, int *ngroups, const char *spec,
                       const char *const *names, int nnames, int max, char *err, size_t errlen);
void amp_ab_groups_free(amp_ab_group *g, int n);

/* Moves the groups whose every layer the candidate (cand[layer]) already
 * computes exactly as the baseline (base[layer]) does, dtypes, scaled
 * formats and flags alike (keeping such a group would run the candidate
 * again), from g to a new array *skipped, keeping the order. 0, or -1 when
 * out of memory. */
int amp_ab_scan_split(amp_ab_group *g, int *ng, amp_ab_group **skipped, int *nskipped,
                      const amp_layer_precision *base, const amp_layer_precision *cand);
/* The [run] name of group i's arm (at most 64 characters of letters, digits
 * and . _ - +): "CAND+keep-NAME", numbered where that is too long or taken
 * by an earlier group's. */
void amp_ab_scan_arm_name(char out[65], const char *cand, const amp_ab_group *g, int i);

/* One group's effect: how much better (on the verdict metric) the candidate
 * gets with the group kept at the baseline's precision, paired by seed, and
 * that as a fraction of the gap. */
typedef struct amp_ab_scan_row {
    int arm;                 /* the study's arm for this group */
    double gain, lo, hi;     /* mean per-seed improvement over the candidate, t interval */
    double closed, closed_lo, closed_hi; /* gain / gap */
    int has_ci, significant; /* the gain's interval excludes 0 */
} amp_ab_scan_row;

typedef struct amp_ab_scan {
    const amp_ab_group *groups; /* [ngroups]; group g is arm first_arm + g */
    int ngroups, first_arm;     /* arms 0 (baseline) and 1 (candidate) come first */
    const amp_ab_group *skipped; /* [nskipped] already at the baseline's precision: not run */
    int nskipped;
    char base_dtype[AMP_AB_MAX_SCAN][8]; /* the baseline's dtype per group ("f32") */
    amp_ab_welch gap;           /* baseline - candidate on the metric, oriented (> 0: a gap) */
    amp_ab_scan_row rows[AMP_AB_MAX_SCAN]; /* ranked, most closed first */
} amp_ab_scan;

void amp_ab_scan_rank(amp_ab_scan *sc, const amp_ab_study *st);
/* The ranking and the `layer.<glob> = dtype` lines for the terminal. */
void amp_ab_scan_print(const amp_ab_scan *sc, const amp_ab_study *st, FILE *f);
const amp_ab_group *amp_ab_scan_group(const amp_ab_scan *sc, const amp_ab_scan_row *r);
/* The baseline's dtype for the row's group ("f32"). */
const char *amp_ab_scan_dtype(const amp_ab_scan *sc, const amp_ab_scan_row *r);
/* The skipped groups: rows of the terminal table, a JSON member (",
 * \"skipped\": [...]"), a report paragraph. */
void amp_ab_scan_print_skipped(const amp_ab_scan *sc, const amp_ab_study *st, FILE *f);
void amp_ab_scan_json_skipped(const amp_ab_scan *sc, FILE *f);
void amp_ab_scan_html_skipped(const amp_ab_scan *sc, const amp_ab_study *st, FILE *f);
/* The candidate is significantly worse than the baseline: a gap to close. */
int amp_ab_scan_has_gap(const amp_ab_scan *sc);

#endif
