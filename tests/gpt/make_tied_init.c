/* make_tied_init WEIGHTS OUTDIR: from a GPT's weights.safetensors (the tied
 * weight stored once, as transformer.wte.weight), the files nanoGPT users
 * have, for [model] init (tests/gpt/init_tied.sh):
 *   state_dict.safetensors  every tensor and lm_head.weight, an equal copy of
 *                           transformer.wte.weight (the tied model's
 *                           state_dict: both names);
 *   save_model.safetensors  the tie under lm_head.weight alone (what
 *                           safetensors.torch.save_model keeps);
 *   differ.safetensors      both names, lm_head.weight[0][1] changed by 0.5;
 *   no_head.safetensors     neither name;
 *   compiled.safetensors    the state_dict of a torch.compile'd model of an
 *                           older nanoGPT: every name under "_orig_mod.", and
 *                           each block's causal mask buffer attn.bias
 *                           [1, 1, T, T]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

#define MAX_TENSORS 256

static void die(const char *what, const char *err) {
    fprintf(stderr, "make_tied_init: %s: %s\n", what, err);
    exit(1);
}

static void write_file(const char *dir, const char *name, const amp_st_tensor *t, int n) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (amp_safetensors_write(path, t, n, NULL, err, sizeof err) != 0) die(path, err);
}

/* t[0..n) (the tie under both names) as compiled.safetensors. */
static void write_compiled(const char *dir, const amp_st_tensor *t, int n, int wte) {
    static char names[MAX_TENSORS][128];
    amp_st_tensor c[MAX_TENSORS];
    int nc = 0;
    int64_t T = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, "transformer.wpe.weight") == 0) T = t[i].shape[0];
    float *mask = calloc((size_t)(T * T), sizeof *mask);
    if (!mask) die(dir, "out of memory");
    for (int64_t r = 0; r < T; r++)
        for (int64_t k = 0; k <= r; k++) mask[r * T + k] = 1.0f;
    for (int i = 0; i <= n && nc + 2 < MAX_TENSORS; i++) {
        c[nc] = i < n ? t[i] : t[wte];
        /* by now t[wte] is named lm_head.weight: the copy takes wte's name */
        snprintf(names[nc], sizeof names[nc], "_orig_mod.%s",
                 i < n ? t[i].name : "transformer.wte.weight");
        c[nc].name = names[nc];
        nc++;
        int layer;
        char rest[64];
        if (i < n && sscanf(t[i].name, "transformer.h.%d.%63s", &layer, rest) == 2 &&
            strcmp(rest, "ln_1.weight") == 0) {
            snprintf(names[nc], sizeof names[nc], "_orig_mod.transformer.h.%d.attn.bias", layer);
            c[nc] = (amp_st_tensor){names[nc], mask, 4, {1, 1, T, T}};
            nc++;
        }
    }
    write_file(dir, "compiled.safetensors", c, nc);
    free(mask);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: make_tied_init WEIGHTS.safetensors OUTDIR\n");
        return 2;
    }
    char err[512];
    amp_safetensors *st = NULL;
    if (amp_safetensors_open(&st, argv[1], err, sizeof err) != 0) die(argv[1], err);
    int n = amp_safetensors_count(st), wte = -1;
    if (n + 1 > MAX_TENSORS) die(argv[1], "too many tensors");
    amp_st_tensor t[MAX_TENSORS];
    for (int i = 0; i < n; i++) {
        const int64_t *shape;
        size_t numel = 1;
        t[i].name = amp_safetensors_name(st, i);
        amp_safetensors_info(st, i, NULL, &t[i].ndim, &shape);
        for (int k = 0; k < t[i].ndim; k++) numel *= (size_t)(t[i].shape[k] = shape[k]);
        float *data = malloc(numel * sizeof *data);
        if (!data || amp_safetensors_get_f32(st, t[i].name, t[i].ndim, t[i].shape, data, err,
                                             sizeof err) != 0)
            die(argv[1], data ? err : "out of memory");
        t[i].data = data;
        if (strcmp(t[i].name, "transformer.wte.weight") == 0) wte = i;
    }
    if (wte < 0) die(argv[1], "no transformer.wte.weight");
    t[n] = t[wte];
    t[n].name = "lm_head.weight";
    write_file(argv[2], "state_dict.safetensors", t, n + 1);
    float *changed = malloc((size_t)(t[wte].shape[0] * t[wte].shape[1]) * sizeof *changed);
    if (!changed) die(argv[2], "out of memory");
    memcpy(changed, t[wte].data, (size_t)(t[wte].shape[0] * t[wte].shape[1]) * sizeof *changed);
    changed[1] += 0.5f;
    t[n].data = changed;
    write_file(argv[2], "differ.safetensors", t, n + 1);
    t[wte].name = "lm_head.weight";
    write_file(argv[2], "save_model.safetensors", t, n);
    amp_st_tensor rest[MAX_TENSORS];
    int nrest = 0;
    for (int i = 0; i < n; i++)
        if (i != wte) rest[nrest++] = t[i];
    write_file(argv[2], "no_head.safetensors", rest, nrest);
    write_compiled(argv[2], t, n, wte);
    for (int i = 0; i < n; i++) free((void *)t[i].data);
    free(changed);
    amp_safetensors_close(st);
    return 0;
}
