/* The table of scaled-format families (family.h): one row per family; a
 * new one is its file and a row here. Registered families (a test's, a
 * program's) come after the rows. */
#include "formats/family.h"

extern const amp_format_family amp_family_fp8_tensor, amp_family_mx, amp_family_nvfp4;

static const amp_format_family *const table[] = {
    &amp_family_fp8_tensor, /* FP8 E4M3/E5M2, one scale per tensor (delayed, current) */
    &amp_family_mx,         /* MXFP8: E8M0 scales per 32 values */
    &amp_family_nvfp4,      /* FP4 E2M1 in blocks of 16, E4M3 block scales */
};

enum { EXTRA_MAX = 8 };
static const amp_format_family *extra[EXTRA_MAX];
static int nextra;

const amp_format_family *amp_format_family_of(const amp_operand_format *f) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i]->serves(f)) return table[i];
    for (int i = 0; i < nextra; i++)
        if (extra[i]->serves(f)) return extra[i];
    return NULL;
}

int amp_format_family_register(const amp_format_family *f) {
    if (nextra == EXTRA_MAX) return -1;
    extra[nextra++] = f;
    return 0;
}
