/* The FP8 operand telemetry of a run over its steps: the "fp8" array of
 * every metrics.jsonl step line (layer, role, scale, saturated and flushed
 * counts per scaled GEMM operand), for the report's scale chart and its
 * saturation / flush heat maps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/ab_formats.h"

/* A count or scale; null (not finite when written) reads as NAN. */
static int slot_num(const amp_jval *o, const char *key, double *out, const char *file, int lineno,
                    size_t i, char *err, size_t errlen) {
    const amp_jval *v = amp_json_get(o, key);
    if (v && v->type == AMP_JNULL) {
        *out = NAN;
        return 0;
    }
    if (!v || v->type != AMP_JNUM) {
        snprintf(err, errlen, "%s:%d: fp8[%zu]: \"%s\" is %s, expected a number", file, lineno, i,
                 key, v ? "not a number" : "missing");
        return -1;
    }
    *out = v->num;
    return 0;
}

static const char *slot_str(const amp_jval *o, const char *key, const char *file, int lineno,
                            size_t i, char *err, size_t errlen) {
    const amp_jval *v = amp_json_get_type(o, key, AMP_JSTR);
    if (!v) snprintf(err, errlen, "%s:%d: fp8[%zu]: \"%s\" is not a string", file, lineno, i, key);
    return v ? v->str : NULL;
}

/* The first step line's array names the slots. */
static int set_slots(amp_ab_fp8 *fp, const amp_jval *arr, const char *file, int lineno,
                     char *err, size_t errlen) {
    size_t n = arr->n;
    fp->layer = calloc(n, sizeof *fp->layer);
    fp->role = calloc(n, sizeof *fp->role);
    fp->block = calloc(n, sizeof *fp->block);
    fp->family = calloc(n, sizeof *fp->family);
    if (!fp->layer || !fp->role || !fp->block || !fp->family) {
        snprintf(err, errlen, "%s: out of memory", file);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const amp_jval *o = &arr->items[i];
        const char *layer = slot_str(o, "layer", file, lineno, i, err, errlen);
        const char *role = layer ? slot_str(o, "role", file, lineno, i, err, errlen) : NULL;
        const char *scaling = role ? slot_str(o, "scaling", file, lineno, i, err, errlen) : NULL;
        const char *format = scaling ? slot_str(o, "format", file, lineno, i, err, errlen) : NULL;
        if (!format) return -1;
        snprintf(fp->layer[i], sizeof fp->layer[i], "%s", layer);
        snprintf(fp->role[i], sizeof fp->role[i], "%s", role);
        fp->block[i] = strcmp(scaling, "mx32") == 0;
        fp->family[i] = amp_ab_family_of(format, scaling);
    }
    fp->nslots = (int)n;
    return 0;
}

static int grow(amp_ab_fp8 *fp) {
    if (fp->npts < fp->cap) return 0;
    size_t nc = fp->cap ? 2 * fp->cap : 1024, per = (size_t)fp->nslots * sizeof(double);
    double *a = realloc(fp->scale, nc * per);
    if (!a) return -1;
    fp->scale = a;
    if (!(a = realloc(fp->saturated, nc * per))) return -1;
    fp->saturated = a;
    if (!(a = realloc(fp->flushed, nc * per))) return -1;
    fp->flushed = a;
    fp->cap = nc;
    return 0;
}

int amp_ab_fp8_add(amp_ab_fp8 *fp, const amp_jval *v, const char *file, int lineno, char *err,
                   size_t errlen) {
    const amp_jval *arr = amp_json_get(v, "fp8");
    if (arr && (arr->type != AMP_JARR || arr->n == 0 || arr->n > (1u << 16))) {
        snprintf(err, errlen, "%s:%d: \"fp8\" is not an array of 1 to %u operands", file, lineno,
                 1u << 16);
        return -1;
    }
    int first = fp->npts == 0 && fp->nslots == 0 && fp->layer == NULL;
    if (first && !arr) { /* a run without scaled operands: every line must agree */
        fp->layer = calloc(1, sizeof *fp->layer);
        return fp->layer ? 0 : -1;
    }
    if (first && set_slots(fp, arr, file, lineno, err, errlen)) return -1;
    size_t n = arr ? arr->n : 0;
    if (n != (size_t)fp->nslots) {
        snprintf(err, errlen, "%s:%d: the step line lists %zu fp8 operands, the first step line %d",
                 file, lineno, n, fp->nslots);
        return -1;
    }
    if (n == 0) return 0;
    if (grow(fp)) {
        snprintf(err, errlen, "%s: out of memory", file);
        return -1;
    }
    size_t base = fp->npts * n;
    for (size_t i = 0; i < n; i++) {
        const amp_jval *o = &arr->items[i];
        const char *layer = slot_str(o, "layer", file, lineno, i, err, errlen);
        const char *role = layer ? slot_str(o, "role", file, lineno, i, err, errlen) : NULL;
        if (!role) return -1;
        if (strcmp(layer, fp->layer[i]) != 0 || strcmp(role, fp->role[i]) != 0) {
            snprintf(err, errlen, "%s:%d: fp8[%zu] is %s %s, on the first step line %s %s", file,
                     lineno, i, layer, role, fp->layer[i], fp->role[i]);
            return -1;
        }
        if (slot_num(o, "scale", &fp->scale[base + i], file, lineno, i, err, errlen) ||
            slot_num(o, "saturated", &fp->saturated[base + i], file, lineno, i, err, errlen) ||
            slot_num(o, "flushed", &fp->flushed[base + i], file, lineno, i, err, errlen))
            return -1;
    }
    fp->npts++;
    return 0;
}

void amp_ab_fp8_free(amp_ab_fp8 *fp) {
    free(fp->layer);
    free(fp->role);
    free(fp->block);
    free(fp->family);
    free(fp->scale);
    free(fp->saturated);
    free(fp->flushed);
    memset(fp, 0, sizeof *fp);
}
