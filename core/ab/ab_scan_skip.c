/* The scan's groups that need no run: every layer of the group is computed
 * by the candidate exactly as by the baseline (an fp8 candidate keeps its
 * embeddings, final norm and lm_head in BF16; a BF16 baseline does the
 * same), so "the candidate with the group kept at the baseline's precision"
 * is the candidate itself. Running it would only measure seed noise and
 * rank it among the real groups; it is listed as skipped instead. Also the
 * arm names, which come from the groups' layer names. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab_html.h"
#include "ab/ab_scan.h"
#include "io/json.h"

static int same_prec(const amp_layer_precision *a, const amp_layer_precision *b) {
    int same = a->activation == b->activation && a->param == b->param;
    for (int c = 0; c < AMP_OP_COUNT; c++) same &= a->compute[c] == b->compute[c];
    for (int r = 0; r < AMP_ROLE_COUNT; r++)
        same &= a->operand[r].format == b->operand[r].format &&
                a->operand[r].scaling == b->operand[r].scaling &&
                a->operand[r].history_len == b->operand[r].history_len &&
                a->operand_flags[r] == b->operand_flags[r];
    return same;
}

int amp_ab_scan_split(amp_ab_group *g, int *ng, amp_ab_group **skipped, int *nskipped,
                      const amp_layer_precision *base, const amp_layer_precision *cand) {
    *skipped = calloc((size_t)*ng + 1, sizeof **skipped);
    *nskipped = 0;
    if (!*skipped) return -1;
    int kept = 0;
    for (int i = 0; i < *ng; i++) {
        int all = 1;
        for (int m = 0; m < g[i].nmembers; m++) all &= same_prec(&base[g[i].members[m]], &cand[g[i].members[m]]);
        if (all) (*skipped)[(*nskipped)++] = g[i];
        else g[kept++] = g[i];
    }
    *ng = kept;
    return 0;
}

/* Letters, digits and . _ - + (what [run] name allows); others become '_'. */
static void clean(char *s) {
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-+", *s)) *s = '_';
}

void amp_ab_scan_arm_name(char out[65], const char *cand, const amp_ab_group *g, int i) {
    char name[65];
    int n = snprintf(name, sizeof name, "%s+keep-%s", cand, g[i].name);
    clean(name);
    int taken = 0;
    for (int j = 0; j < i && !taken; j++) {
        char other[65];
        int k = snprintf(other, sizeof other, "%s+keep-%s", cand, g[j].name);
        clean(other);
        taken = k < (int)sizeof other && strcmp(other, name) == 0;
    }
    /* the number keeps names apart when the name is cut or two clean alike */
    if (n >= (int)sizeof name || taken) {
        snprintf(name, sizeof name, "%s+keep%d-%s", cand, i + 1, g[i].name);
        clean(name);
    }
    memcpy(out, name, sizeof name);
}

void amp_ab_scan_print_skipped(const amp_ab_scan *sc, const amp_ab_study *st, FILE *f) {
    for (int i = 0; i < sc->nskipped; i++)
        fprintf(f, "%4s  %-32s  %6d  skipped: already at %s's precision under %s (not run)\n", "-",
                sc->skipped[i].label, sc->skipped[i].nmembers, st->arms[0].name, st->arms[1].name);
}

void amp_ab_scan_json_skipped(const amp_ab_scan *sc, FILE *f) {
    fputs(", \"skipped\": [", f);
    for (int i = 0; i < sc->nskipped; i++) {
        fputs(i ? ",\n    {\"group\": " : "\n    {\"group\": ", f);
        amp_json_str(f, sc->skipped[i].label);
        fputs(", \"name\": ", f);
        amp_json_str(f, sc->skipped[i].name);
        fprintf(f, ", \"layers\": %d, \"reason\": \"already at the baseline's precision\"}",
                sc->skipped[i].nmembers);
    }
    fputs(sc->nskipped ? "\n  ]" : "]", f);
}

void amp_ab_scan_html_skipped(const amp_ab_scan *sc, const amp_ab_study *st, FILE *f) {
    if (!sc->nskipped) return;
    fputs("<p class=\"note\" id=\"scan-skipped\">Skipped, not run: the candidate already computes "
          "these groups at the baseline's precision (", f);
    amp_ab_html_esc(f, st->arms[1].name);
    fputs(" and ", f);
    amp_ab_html_esc(f, st->arms[0].name);
    fputs(" differ in nothing there):", f);
    for (int i = 0; i < sc->nskipped; i++) {
        fputs(i ? ", <code>" : " <code>", f);
        amp_ab_html_esc(f, sc->skipped[i].label);
        fprintf(f, "</code> (%d layer%s)", sc->skipped[i].nmembers,
                sc->skipped[i].nmembers == 1 ? "" : "s");
    }
    fputs(".</p>\n", f);
}
