/* The GPT against PyTorch (the llm.c test_gpt2 idea): scripts/gpt_reference.py
 * wrote tests/data/gpt_reference.safetensors from nanoGPT's model (2 layers,
 * 2 heads, 32 wide, block 16, batch 4, bias): the initial weights, a batch,
 * the logits, the loss, every gradient, 10 AdamW losses, and the loss and
 * gradients under FP16 and BF16 autocast semantics. Here the same weights
 * are loaded by name into amptrain's GPT on the CPU backend and compared:
 *
 *   fp32: loss within 1e-5 relative; logits within 1e-5 absolute; every
 *         gradient tensor within 1e-4 of its largest |reference| value
 *         (max |amptrain - torch| <= 1e-4 * max |torch|); the 10 AdamW
 *         losses within 1e-5 relative (nanoGPT's grouping: decay on the
 *         2-D tensors only).
 *   bf16: loss within 1e-4 relative, each gradient tensor within 0.02 of
 *         its largest |reference| (8 significant bits: both sides round at
 *         the same points, but a GEMM that accumulates in another order can
 *         round a value to the neighbouring bf16; measured 4e-3).
 *   fp16: loss within 1e-4 relative, gradients within 5e-3 of the largest
 *         |reference| (11 bits; measured 8e-4), under a static loss scale
 *         of 1024 as the reference used.
 *
 * A gradient with a wrong term misses these by far (the FP32 check is what
 * tests/test_transformer_ops.c's finite differences pin per op; this one
 * pins the wiring: names, layouts, the tied head, the residuals). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "expect.h"
#include "gpt_ref.h"
#include "io/config.h"
#include "model.h"
#include "train/session.h"

#define REF_PATH AMP_TEST_SOURCE_DIR "/tests/data/gpt_reference.safetensors"

static gpt_ref ref;
static int B = 4, T = 16, V = 65;

static float *ref_tensor(const char *name, size_t *numel) {
    return gpt_ref_tensor(&ref, name, numel);
}

/* What the fp32/fp16/bf16 policies answer for every layer (policy_common.c). */
static amp_layer_precision policy(amp_dtype low) {
    amp_layer_precision p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    for (int c = 0; c < AMP_OP_COUNT; c++) p.compute[c] = AMP_DTYPE_F32;
    p.compute[AMP_OP_GEMM] = p.compute[AMP_OP_CONV] = low;
    p.compute[AMP_OP_ATTENTION] = p.compute[AMP_OP_POINTWISE] = low;
    p.activation = p.param = low;
    return p;
}

static amp_model *build(amp_backend *be, amp_config *cfg, amp_dtype low, int opt_buffers) {
    char err[1024];
    const amp_model_ops *ops = amp_model_find("gpt");
    amp_model_input in;
    memset(&in, 0, sizeof in);
    in.batch = B;
    in.features = in.targets = T;
    in.classes = V;
    in.x_is_tokens = 1;
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (!ops || ops->describe(&desc, cfg, &in, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: gpt describe: %s\n", ops ? err : "gpt is not registered");
        exit(1);
    }
    amp_layer_precision *prec = calloc((size_t)desc.nlayers, sizeof *prec);
    for (int l = 0; l < desc.nlayers; l++) prec[l] = policy(low);
    amp_model *m = NULL;
    if (amp_model_create(&m, ops, be, &desc, prec, &in, opt_buffers, cfg, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: gpt create: %s\n", err);
        exit(1);
    }
    free(prec);
    return m;
}

static amp_config *gpt_config(void) {
    static const char *const sets[] = {"model.name=gpt", "model.n_layer=2", "model.n_head=2",
                                       "model.n_embd=32", "model.block_size=16", "model.bias=true",
                                       /* the reference ran F.gelu(approximate="tanh") */
                                       "model.activation=gelu_tanh", NULL};
    char err[512];
    amp_config *cfg = amp_config_new_empty("test_gpt_reference");
    for (int i = 0; sets[i]; i++)
        if (amp_config_set(cfg, sets[i], err, sizeof err) != 0) {
            fprintf(stderr, "FAIL: %s\n", err);
            exit(1);
        }
    return cfg;
}

static void test_fp32(amp_backend *be) {
    amp_config *cfg = gpt_config();
    amp_model *m = build(be, cfg, AMP_DTYPE_F32, 2);
    gpt_ref_load_params(m, &ref, "", m->master);
    gpt_ref_load_batch(m, &ref, B * T);
    float *rl = ref_tensor("ref.loss", NULL);
    double loss = gpt_ref_step(m, B, T, 1.0f, 1);
    double rel = fabs(loss - rl[0]) / fabs(rl[0]);
    EXPECT(rel <= 1e-5, "fp32 loss %.8f, torch %.8f (rel %.3g > 1e-5)", loss, rl[0], rel);
    printf("fp32 loss %.7f torch %.7f (rel %.2e)\n", loss, rl[0], rel);
    /* logits */
    size_t nl = 0;
    float *ref_logits = ref_tensor("ref.logits", &nl), *row = malloc((size_t)V * sizeof(float));
    EXPECT(nl == (size_t)B * T * V, "ref.logits has %zu values", nl);
    double lw = 0.0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            if (m->ops->logits(m, b, t, row) != 0) exit(1);
            for (int v = 0; v < V; v++)
                lw = fmax(lw, fabs(row[v] - ref_logits[((size_t)b * T + t) * V + v]));
        }
    EXPECT(lw <= 1e-5, "fp32 logits: max |amptrain - torch| %.3g > 1e-5", lw);
    printf("fp32 logits max |diff| %.2e\n", lw);
    double gw = gpt_ref_compare(m, &ref, "grad.", m->grads, 1.0f, 1e-4);
    printf("fp32 gradients: worst tensor max|diff|/max|ref| %.2e\n", gw);

    /* 10 AdamW steps on the same batch, nanoGPT's decay grouping */
    float *rlosses = ref_tensor("ref.losses", NULL);
    /* the gradient check above left the weights as loaded, but be explicit */
    gpt_ref_load_params(m, &ref, "", m->master);
    double worst = 0.0;
    for (int i = 0; i < 10; i++) {
        double l = gpt_ref_step(m, B, T, 1.0f, 1);
        double r = fabs(l - rlosses[i]) / fabs(rlosses[i]);
        worst = fmax(worst, r);
        EXPECT(r <= 1e-5, "AdamW step %d: loss %.8f, torch %.8f (rel %.3g)", i, l, rlosses[i], r);
        gpt_ref_update(m, i);
    }
    printf("fp32 10 AdamW losses: worst rel diff %.2e (last torch %.6f)\n", worst, rlosses[9]);
    /* Without the grouping (decay on every tensor) the losses move: the
     * check above can tell. */
    free(rl), free(ref_logits), free(row), free(rlosses);
    amp_model_free(m);
    amp_config_free(cfg);
}

static void test_16(amp_backend *be, amp_dtype dt) {
    const char *tag = dt == AMP_DTYPE_F16 ? "fp16" : "bf16";
    float scale = dt == AMP_DTYPE_F16 ? 1024.0f : 1.0f;
    double loss_tol = 1e-4, grad_tol = dt == AMP_DTYPE_F16 ? 5e-3 : 0.02;
    amp_config *cfg = gpt_config();
    amp_model *m = build(be, cfg, dt, 0);
    gpt_ref_load_params(m, &ref, "", m->master);
    gpt_ref_load_batch(m, &ref, B * T);
    char name[64];
    snprintf(name, sizeof name, "%s.loss", tag);
    float *rl = ref_tensor(name, NULL);
    double loss = gpt_ref_step(m, B, T, scale, 1);
    double rel = fabs(loss - rl[0]) / fabs(rl[0]);
    EXPECT(rel <= loss_tol, "%s loss %.7f, torch %.7f (rel %.3g > %.g)", tag, loss, rl[0], rel,
           loss_tol);
    /* rounding happened and was counted: the working weights at least */
    unsigned long long rounded = 0;
    for (int l = 0; l < m->desc.nlayers; l++)
        rounded += amp_model_rounds(m, l, AMP_ROUND_FWD)->nonzero +
                   amp_model_rounds(m, l, AMP_ROUND_GRAD)->nonzero;
    EXPECT(rounded > m->desc.nparams, "%s: only %llu values rounded", tag, rounded);
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%s.grad.", tag);
    double gw = gpt_ref_compare(m, &ref, prefix, m->grads, scale, grad_tol);
    printf("%s loss %.7f torch %.7f (rel %.2e); gradients worst %.2e of max|ref| (limit %.g); "
           "%llu values rounded\n", tag, loss, rl[0], rel, gw, grad_tol, rounded);
    free(rl);
    amp_model_free(m);
    amp_config_free(cfg);
}

int main(void) {
    char err[512];
    ref = gpt_ref_open(REF_PATH, "scripts/gpt_reference.py");
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    test_fp32(be);
    test_16(be, AMP_DTYPE_BF16);
    test_16(be, AMP_DTYPE_F16);
    be->ops->destroy(be);
    gpt_ref_close(&ref);
    if (amp_test_failures) fprintf(stderr, "%d failure(s)\n", amp_test_failures);
    return amp_test_failures ? 1 : 0;
}
