/* A Hugging Face GPT-2 folder (and a Llama one) through [model] init, against transformers:
 * scripts/hf_reference.py made a tiny random GPT2LMHeadModel from a
 * GPT2Config, saved it with save_pretrained (tests/data/hf_gpt2) and wrote
 * what transformers computes with it (tests/data/hf_gpt2_reference.safetensors).
 * Here a session is opened with `[model] init = tests/data/hf_gpt2` and no
 * architecture key at all: config.json gives n_layer, n_head, n_embd,
 * block_size and the activation (gelu_new: amptrain's gelu_tanh), the
 * loader transposes the Conv1D weights. Checked, FP32 on the CPU:
 *   - logits within 1e-5 of max |torch logit| (max |amptrain - torch|);
 *   - the loss within 1e-5 relative;
 *   - every gradient tensor within 1e-5 of its largest |torch| value,
 *     read through the gpt2 name map (transformers' names and layouts);
 *   - one AdamW step (nanoGPT's grouping): the loss after it within 1e-5
 *     relative, every weight within 1e-3 of how far torch's step moved it
 *     (a norm; see compare());
 *   - tests/data/hf_gpt2_sharded (BF16, two shards and an index, the
 *     `_orig_mod.` prefix, attn.bias/masked_bias buffers) loads the same
 *     weights rounded to BF16, bit for bit;
 *   - tests/data/hf_gpt2_exported, written by `amptrain export --hf` from a
 *     run of two steps, gives the logits that transformers' from_pretrained
 *     computed on it (hf_gpt2_export_check.safetensors, written by the
 *     script's --check-export), within 1e-5 of the largest;
 *   - tests/data/hf_llama (the script's --llama: GQA with 4 heads and 2
 *     key/value heads, RoPE, SwiGLU, an untied head; config.json gives
 *     names = llama, norm = rmsnorm, position = rope, mlp = swiglu and the
 *     sizes): the same checks as the FP32 GPT-2 folder, and
 *     tests/data/hf_llama_exported (a two-step run, exported) against
 *     LlamaForCausalLM.from_pretrained's logits on it
 *     (hf_llama_export_check.safetensors), within 1e-5 of the largest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "gpt_ref.h"
#include "io/name_map.h"
#include "session_helpers.h"

#define DATA AMP_TEST_SOURCE_DIR "/tests/data/"
#define SCRIPT "scripts/hf_reference.py"

static const int B = 2, T = 32, V = 65;
static gpt_ref ref, start; /* start: the folder's weights, the step's start */
static const char *map_type = "gpt2"; /* the folder's model_type: its name map */

/* The session on a folder's weights; close it with close_folder. */
static amp_session *open_folder(const char *folder, amp_config **cfg) {
    char init[512];
    snprintf(init, sizeof init, "model.init=%s", folder);
    const char *const sets[] = {"run.device=cpu", "data.dataset=text", "data.batch_size=2",
                                "optim.name=adamw", init, NULL};
    *cfg = make_config(sets);
    return open_or_die(*cfg);
}

static void close_folder(amp_session *s, amp_config *cfg) {
    amp_session_close(s);
    amp_config_free(cfg);
}

/* The reference's "<prefix><transformers name of P>" in the kit's layout. */
static float *ref_param(const gpt_ref *r, const amp_param_desc *P, const char *prefix) {
    char file[160], name[200];
    int tr = 0;
    amp_name_map_to_file(amp_name_map_find(map_type), P->name, file, sizeof file, &tr);
    snprintf(name, sizeof name, "%s%s", prefix, file);
    size_t n = 0;
    float *t = gpt_ref_tensor(r, name, &n), *out = malloc(P->numel * sizeof *out);
    if (n != P->numel) {
        fprintf(stderr, "FAIL: %s holds %zu values, %s has %zu\n", name, n, P->name, P->numel);
        exit(1);
    }
    int64_t rows = tr ? P->shape[1] : 1, cols = tr ? P->shape[0] : (int64_t)n;
    for (int64_t i = 0; i < rows; i++) /* [rows, cols] in the file -> [cols, rows] */
        for (int64_t j = 0; j < cols; j++) out[tr ? j * rows + i : j] = t[i * cols + j];
    free(t);
    return out;
}

/* Per tensor, against the reference's "<prefix><name>": gradients (moved 0)
 * as max |ours - ref| / max |ref|; weights after a step (moved 1) as
 * ||ours - ref|| / ||ref - start||, how far from torch's result against how
 * far torch's step went (Adam's first step is about lr * sign(g) for every
 * element, so an element whose gradient is near 0 may land anywhere in
 * [-lr, lr] on either side: a norm, not a max; c_attn's key bias has a
 * gradient of exactly 0 in exact arithmetic, so its step is all such
 * elements: measured 3.5e-4 there, 3e-5 elsewhere). Returns the worst. */
static double compare(amp_model *m, const char *prefix, const float *ours, int moved, double tol) {
    double worst = 0.0;
    for (int i = 0; i < m->desc.nparam_tensors; i++) {
        const amp_param_desc *P = &m->desc.params[i];
        float *r = ref_param(&ref, P, prefix), *s = moved ? ref_param(&start, P, "") : NULL;
        double scale = 0.0, diff = 0.0;
        for (size_t j = 0; j < P->numel; j++) {
            double d = ours[P->offset + j] - (double)r[j], e = moved ? (double)r[j] - s[j] : r[j];
            scale = moved ? scale + e * e : fmax(scale, fabs(e));
            diff = moved ? diff + d * d : fmax(diff, fabs(d));
        }
        double rel = moved ? sqrt(diff / scale) : diff / scale;
        worst = fmax(worst, rel);
        EXPECT(scale > 0 && rel <= tol, "%s%s: |amptrain - torch| is %.3g of %s (limit %g)", prefix,
               P->name, rel, moved ? "||torch's step||" : "max |torch|", tol);
        free(r);
        free(s);
    }
    return worst;
}

/* amptrain's logits on the batch against `want` [B, T, V]: returns max
 * |ours - want|, and max |want| in *mx. */
static double logits_diff(amp_model *m, const float *want, double *mx) {
    float *row = malloc((size_t)V * sizeof *row);
    double diff = 0.0;
    *mx = 0.0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            if (m->ops->logits(m, b, t, row) != 0) exit(1);
            for (int v = 0; v < V; v++) {
                double r = want[((size_t)b * T + t) * V + v];
                diff = fmax(diff, fabs(row[v] - r));
                *mx = fmax(*mx, fabs(r));
            }
        }
    free(row);
    return diff;
}

static void check_architecture(amp_model *m) {
    /* 2 blocks of 12 tensors (biases included), wte, wpe, ln_f: from config.json */
    EXPECT(m->desc.nparam_tensors == 2 + 2 * 12 + 2, "%d parameter tensors", m->desc.nparam_tensors);
    const amp_param_desc *wpe = &m->desc.params[1];
    EXPECT(strcmp(wpe->name, "transformer.wpe.weight") == 0 && wpe->shape[0] == T &&
           wpe->shape[1] == 64, "%s [%lld, %lld]", wpe->name, (long long)wpe->shape[0],
           (long long)wpe->shape[1]);
}

/* tests/data/hf_llama: GQA (4 heads, 2 key/value heads), RoPE, SwiGLU 128
 * wide, an untied head, under Hugging Face Llama's names */
static void check_llama(amp_model *m) {
    /* 2 blocks of 9 tensors, embed_tokens, model.norm, lm_head: no position table */
    EXPECT(m->desc.nparam_tensors == 1 + 2 * 9 + 2, "%d parameter tensors", m->desc.nparam_tensors);
    int k = amp_model_desc_find(&m->desc, "model.layers.1.self_attn.k_proj.weight");
    int g = amp_model_desc_find(&m->desc, "model.layers.0.mlp.gate_proj.weight");
    EXPECT(k >= 0 && m->desc.params[k].shape[0] == 32 && g >= 0 &&
               m->desc.params[g].shape[0] == 128 &&
               amp_model_desc_find(&m->desc, "lm_head.weight") >= 0 &&
               amp_model_desc_find(&m->desc, "model.embed_positions.weight") < 0,
           "the Llama's tensors are not config.json's");
}

static void test_fp32(const char *folder, void (*check)(amp_model *)) {
    amp_config *cfg;
    amp_session *s = open_folder(folder, &cfg);
    amp_model *m = s->model;
    check(m);
    gpt_ref_load_batch(m, &ref, B * T);
    float *rl = gpt_ref_tensor(&ref, "loss", NULL);
    double loss = gpt_ref_step(m, B, T, 1.0f, 1), rel = fabs(loss - rl[0]) / rl[0];
    EXPECT(rel <= 1e-5, "loss %.8f, transformers %.8f (rel %.3g)", loss, rl[0], rel);
    size_t nl = 0;
    float *rlog = gpt_ref_tensor(&ref, "logits", &nl);
    EXPECT(nl == (size_t)B * T * V, "logits: %zu values", nl);
    double mx, diff = logits_diff(m, rlog, &mx);
    EXPECT(diff <= 1e-5 * mx, "logits: max |amptrain - transformers| %.3g > 1e-5 * %.3g", diff, mx);
    double gw = compare(m, "grad.", m->grads, 0, 1e-5);
    gpt_ref_update(m, 0);
    double ww = compare(m, "after.", m->master, 1, 1e-3);
    float *ra = gpt_ref_tensor(&ref, "after.loss", NULL);
    double after = gpt_ref_step(m, B, T, 1.0f, 0), rel2 = fabs(after - ra[0]) / ra[0];
    EXPECT(rel2 <= 1e-5, "loss after one AdamW step %.8f, torch %.8f (rel %.3g)", after, ra[0], rel2);
    printf("%s: logits max |diff| %.2e (%.2e of max |logit|); loss %.7f vs %.7f (rel %.2e); gradients "
           "worst %.2e; after one AdamW step: weights worst %.2e of the step, loss rel %.2e\n",
           map_type, diff, diff / mx, loss, rl[0], rel, gw, ww, rel2);
    free(rl), free(rlog), free(ra);
    close_folder(s, cfg);
}

/* RNE to BF16 and back */
static float bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static void test_sharded(void) {
    amp_config *ca, *cb;
    amp_session *a = open_folder(DATA "hf_gpt2", &ca), *b = open_folder(DATA "hf_gpt2_sharded", &cb);
    const amp_model_desc *d = &a->model->desc;
    EXPECT(d->nparams == b->model->desc.nparams, "%zu vs %zu parameters", d->nparams,
           b->model->desc.nparams);
    size_t differ = 0;
    for (size_t i = 0; i < d->nparams; i++)
        differ += bf16(a->model->master[i]) != b->model->master[i];
    EXPECT(differ == 0, "sharded BF16 folder: %zu of %zu weights are not the F32 ones rounded",
           differ, d->nparams);
    printf("sharded BF16 folder: %zu weights, each the F32 folder's rounded to BF16\n", d->nparams);
    close_folder(a, ca);
    close_folder(b, cb);
}

/* A folder `amptrain export --hf` wrote (committed), against the logits
 * transformers' from_pretrained computed on it (check, written by the
 * script's --check-export). */
static void test_exported(const char *folder, const char *check) {
    gpt_ref chk = gpt_ref_open(check, SCRIPT " --check-export");
    amp_config *cfg;
    amp_session *s = open_folder(folder, &cfg);
    amp_model *m = s->model;
    gpt_ref_load_batch(m, &chk, B * T);
    gpt_ref_step(m, B, T, 1.0f, 0);
    size_t nl = 0;
    float *want = gpt_ref_tensor(&chk, "logits", &nl);
    EXPECT(nl == (size_t)B * T * V, "%s: exported logits: %zu values", map_type, nl);
    double mx, diff = logits_diff(m, want, &mx);
    EXPECT(diff <= 1e-5 * mx, "%s exported folder: max |amptrain - from_pretrained| %.3g > 1e-5 * %.3g",
           map_type, diff, mx);
    printf("%s exported folder: logits max |amptrain - from_pretrained| %.2e (%.2e of max |logit|)\n",
           map_type, diff, diff / mx);
    free(want);
    close_folder(s, cfg);
    gpt_ref_close(&chk);
}

int main(void) {
    ref = gpt_ref_open(DATA "hf_gpt2_reference.safetensors", SCRIPT);
    start = gpt_ref_open(DATA "hf_gpt2/model.safetensors", SCRIPT);
    test_fp32(DATA "hf_gpt2", check_architecture);
    test_sharded();
    test_exported(DATA "hf_gpt2_exported", DATA "hf_gpt2_export_check.safetensors");
    gpt_ref_close(&ref);
    gpt_ref_close(&start);
    ref = gpt_ref_open(DATA "hf_llama_reference.safetensors", SCRIPT " --llama");
    start = gpt_ref_open(DATA "hf_llama/model.safetensors", SCRIPT " --llama");
    map_type = "llama";
    test_fp32(DATA "hf_llama", check_llama);
    test_exported(DATA "hf_llama_exported", DATA "hf_llama_export_check.safetensors");
    gpt_ref_close(&ref);
    gpt_ref_close(&start);
    if (amp_test_failures) fprintf(stderr, "%d failure(s)\n", amp_test_failures);
    return amp_test_failures ? 1 : 0;
}
