/* The GPT under the fp8 policy against PyTorch: scripts/gpt_fp8_reference.py
 * ran the model of tests/data/gpt_reference.safetensors (2 layers, 2 heads,
 * 32 wide, block 16, batch 4, bias; the same initial weights and batch) for
 * 4 AdamW steps with FP8 GEMM operands on every Linear but lm_head (delayed
 * scaling, hybrid: E4M3 input and weight, E5M2 output gradient; history 4,
 * amax max, margin 0) and wrote tests/data/gpt_fp8_reference.safetensors:
 * each step's loss, every (layer, role) slot's scale and amax, the
 * gradients of the first and the last step and the final weights.
 *
 * Here a session opens with [precision] plugin = fp8 and those keys (the
 * plugin decides every layer's operand formats, as a run's config does),
 * the reference weights and batch go into its model, and 4 steps run with
 * the kit's quantizers and the host's end-of-step scale update:
 *
 *   loss:      every step within 1e-5 relative;
 *   scale:     every slot, every step, within 1e-6 relative (step 0: 1);
 *   amax:      every slot, every step, within AMAX_TOL relative: the
 *              activations and output gradients come out of GEMMs that
 *              accumulate in another order, so a value can round to the
 *              neighbouring bf16 (2^-8 relative);
 *   gradients: step 0 and step 3, each tensor within GRAD_TOL of its
 *              largest |reference| (as test_gpt_reference.c states its
 *              own): bf16 alone is 0.02 there; an input that rounds to the
 *              other bf16 can also take the other E4M3/E5M2 code (1/8, 1/4
 *              of its value);
 *   weights:   after the 4 steps, each tensor's distance to the reference
 *              within WEIGHT_TOL of how far the reference moved it
 *              (||w - w_ref|| <= WEIGHT_TOL ||w_ref - w_0||, L2): AdamW
 *              moves a value by about lr per step whatever its gradient's
 *              size, so a tiny gradient of the other sign moves it 2 lr
 *              away; a per-value bound relative to max |w_ref| (the biases
 *              start at 0) could not tell noise from error.
 *
 * FP8 is visible at these tolerances: the script prints step 0 under the
 * plain bf16 policy against fp8 (loss 4.9e-5 relative, gradients up to 13%
 * of a tensor's largest value), and the scales after step 0 are far from 1.
 *
 * An argument names another reference file in place of FP8_PATH (e.g. a
 * perturbed copy, which must fail). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "expect.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "model.h"
#include "scaled.h"
#include "session.h"
#include "session_helpers.h"

#define REF_PATH AMP_TEST_SOURCE_DIR "/tests/data/gpt_reference.safetensors"
#define FP8_DEFAULT AMP_TEST_SOURCE_DIR "/tests/data/gpt_fp8_reference.safetensors"

static const char *FP8_PATH = FP8_DEFAULT;

#define STEPS 4
#define LOSS_TOL 1e-5
#define SCALE_TOL 1e-6
#define AMAX_TOL 1e-2
#define GRAD_TOL 0.03
#define WEIGHT_TOL 0.1

static const int B = 4, T = 16;
static const char *const ROLE_NAMES[AMP_ROLE_COUNT] = {"input", "weight", "grad_output"};
static const char *const FP8_LINEARS[] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};

static float *tensor_of(amp_safetensors *f, const char *path, const char *name, size_t *numel) {
    char err[512];
    for (int i = 0; i < amp_safetensors_count(f); i++) {
        if (strcmp(amp_safetensors_name(f, i), name) != 0) continue;
        int ndim;
        const int64_t *shape;
        amp_safetensors_info(f, i, NULL, &ndim, &shape);
        size_t n = 1;
        for (int k = 0; k < ndim; k++) n *= (size_t)shape[k];
        float *p = malloc(n * sizeof(float));
        if (!p || amp_safetensors_get_f32(f, name, ndim, shape, p, err, sizeof err) != 0) {
            fprintf(stderr, "FAIL: reading %s: %s\n", name, err);
            exit(1);
        }
        if (numel) *numel = n;
        return p;
    }
    fprintf(stderr, "FAIL: %s has no tensor %s (rerun scripts/gpt_fp8_reference.py)\n", path, name);
    exit(1);
}

static amp_safetensors *open_or_fail(const char *path) {
    char err[512];
    amp_safetensors *f = NULL;
    if (amp_safetensors_open(&f, path, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: %s\n", err);
        exit(1);
    }
    return f;
}

static const char *const gpt_fp8[] = {
    "run.device=cpu", "data.dataset=text", "data.path=" AMP_TEST_SOURCE_DIR "/data/tinyshakespeare.txt",
    "data.batch_size=4", "data.eval_iters=1", "model.name=gpt", "model.n_layer=2", "model.n_head=2",
    "model.n_embd=32", "model.block_size=16", "model.bias=true",
    /* the reference ran F.gelu(approximate="tanh") */
    "model.activation=gelu_tanh", "optim.name=adamw", "optim.lr=1e-3", "optim.beta1=0.9",
    "optim.beta2=0.99", "optim.eps=1e-8", "optim.weight_decay=0.1", "train.steps=4",
    "precision.plugin=fp8", "precision.recipe=delayed", "precision.format=hybrid",
    "precision.amax_history_len=4", "precision.amax_compute=max", "precision.margin=0",
    "precision.layer.lm_head=bf16", "scaler.plugin=none", NULL};

static int layer_index(const amp_model *m, const char *name) {
    for (int l = 0; l < m->desc.nlayers; l++)
        if (strcmp(m->desc.layers[l].name, name) == 0) return l;
    fprintf(stderr, "FAIL: the GPT has no layer %s\n", name);
    exit(1);
}

/* The reference's initial weights and batch (gpt_reference.safetensors). */
static void load_start(amp_model *m, amp_safetensors *ref) {
    char err[512];
    const amp_model_desc *d = &m->desc;
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        if (amp_safetensors_get_f32(ref, P->name, P->ndim, P->shape, m->master + P->offset, err,
                                    sizeof err) != 0) {
            fprintf(stderr, "FAIL: %s\n", err);
            exit(1);
        }
    }
    float *x = tensor_of(ref, REF_PATH, "ref.x", NULL), *y = tensor_of(ref, REF_PATH, "ref.y", NULL);
    int32_t *mx = m->x;
    for (int i = 0; i < B * T; i++) {
        mx[i] = (int32_t)x[i];
        m->y[i] = (int32_t)y[i];
    }
    free(x);
    free(y);
}

/* One forward and backward at loss scale 1; returns the mean loss. */
static double forward_backward(amp_model *m) {
    amp_backend *be = m->be;
    amp_forward_args fa = {B, 1, 1.0f / (float)(B * T)};
    amp_backward_args ba = {B, 0};
    if (be->ops->zero(be, m->stats, amp_model_stats_bytes(m->desc.nlayers)) ||
        m->ops->cast_weights(m) || m->ops->forward(m, &fa) || m->ops->backward(m, &ba)) {
        fprintf(stderr, "FAIL: gpt step: %s\n", be->err);
        exit(1);
    }
    return m->stats->loss_sum / (double)(B * T);
}

/* Each tensor of `values` (the parameter table's layout) against the
 * reference's "<prefix><name>": max |ours - ref| <= tol * max |ref|.
 * Returns the worst ratio. */
static double compare_tensors(amp_model *m, amp_safetensors *f, const char *prefix,
                              const float *values, double tol) {
    const amp_model_desc *d = &m->desc;
    double worst = 0.0;
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, P->name);
        size_t n = 0;
        float *r = tensor_of(f, FP8_PATH, name, &n);
        EXPECT(n == P->numel, "%s: %zu elements, the model has %zu", name, n, P->numel);
        double mx = 0.0, diff = 0.0;
        for (size_t j = 0; j < n && j < P->numel; j++) {
            mx = fmax(mx, fabs(r[j]));
            diff = fmax(diff, fabs(values[P->offset + j] - r[j]));
        }
        double rel = mx > 0 ? diff / mx : diff;
        worst = fmax(worst, rel);
        EXPECT(mx > 0, "%s is all zeros in the reference", name);
        EXPECT(rel <= tol, "%s: max |amptrain - torch| = %.3g, %.3g of max |torch| %.3g (limit %g)",
               name, diff, rel, mx, tol);
        free(r);
    }
    return worst;
}

/* ||w - w_ref|| / ||w_ref - w_0|| per tensor (w_0: the initial weights in
 * gpt_reference.safetensors); returns the worst. */
static double compare_final(amp_model *m, amp_safetensors *ref, amp_safetensors *f, const float *w,
                            double tol) {
    const amp_model_desc *d = &m->desc;
    double worst = 0.0;
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        char name[160];
        snprintf(name, sizeof name, "fp8.final.%s", P->name);
        size_t n = 0, n0 = 0;
        float *r = tensor_of(f, FP8_PATH, name, &n), *r0 = tensor_of(ref, REF_PATH, P->name, &n0);
        EXPECT(n == P->numel && n0 == P->numel, "%s: %zu elements, the model has %zu", name, n,
               P->numel);
        double err2 = 0.0, moved2 = 0.0;
        for (size_t j = 0; j < n && j < n0 && j < P->numel; j++) {
            err2 += (w[P->offset + j] - (double)r[j]) * (w[P->offset + j] - (double)r[j]);
            moved2 += ((double)r[j] - r0[j]) * ((double)r[j] - r0[j]);
        }
        double rel = sqrt(err2 / moved2);
        worst = fmax(worst, rel);
        EXPECT(moved2 > 0 && rel <= tol,
               "%s: ||amptrain - torch|| = %.3g of how far torch moved it %.3g (limit %g)", name,
               rel, sqrt(moved2), tol);
        free(r);
        free(r0);
    }
    return worst;
}

typedef struct ref_slot {
    char name[128];
    amp_scaled_slot *slot;
    float *scale, *amax; /* [STEPS] */
} ref_slot;

int main(int argc, char **argv) {
    if (argc > 1) FP8_PATH = argv[1];
    amp_safetensors *ref = open_or_fail(REF_PATH), *fp8 = open_or_fail(FP8_PATH);
    amp_config *cfg = make_config(gpt_fp8);
    amp_session *s = open_or_die(cfg);
    amp_model *m = s->model;
    char err[1024];

    /* The policy's slots: three per FP8 Linear, none on lm_head. */
    EXPECT(m->scaled != NULL, "the fp8 policy gave the model no scaled-operand state");
    ref_slot slots[2 * 4 * AMP_ROLE_COUNT];
    int nslots = 0;
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++) {
            char layer[96];
            snprintf(layer, sizeof layer, "transformer.h.%d.%s", b, FP8_LINEARS[k]);
            int l = layer_index(m, layer);
            for (int r = 0; r < AMP_ROLE_COUNT; r++) {
                ref_slot *rs = &slots[nslots++];
                snprintf(rs->name, sizeof rs->name, "%s.%s", layer, ROLE_NAMES[r]);
                rs->slot = amp_scaled_find(m->scaled, l, r);
                char key[160];
                snprintf(key, sizeof key, "fp8.scale.%s", rs->name);
                rs->scale = tensor_of(fp8, FP8_PATH, key, NULL);
                snprintf(key, sizeof key, "fp8.amax.%s", rs->name);
                rs->amax = tensor_of(fp8, FP8_PATH, key, NULL);
                uint32_t want = r == AMP_ROLE_GRAD_OUTPUT ? AMP_FORMAT_F8_E5M2 : AMP_FORMAT_F8_E4M3;
                if (!rs->slot) {
                    EXPECT(0, "%s has no scaled slot under the fp8 policy", rs->name);
                    continue;
                }
                EXPECT(rs->slot->fmt.format == want && rs->slot->fmt.scaling == AMP_SCALING_DELAYED &&
                           rs->slot->fmt.history_len == 4,
                       "%s: format %u scaling %u history %u, want %u delayed 4", rs->name,
                       rs->slot->fmt.format, rs->slot->fmt.scaling, rs->slot->fmt.history_len, want);
            }
        }
    int head = layer_index(m, "lm_head");
    for (int r = 0; r < AMP_ROLE_COUNT; r++)
        EXPECT(amp_scaled_find(m->scaled, head, r) == NULL,
               "lm_head has a scaled %s slot despite layer.lm_head = bf16", ROLE_NAMES[r]);
    if (amp_test_failures) {
        fprintf(stderr, "%d failure(s) in the policy's slots\n", amp_test_failures);
        return 1;
    }

    load_start(m, ref);
    float *losses = tensor_of(fp8, FP8_PATH, "fp8.losses", NULL);
    amp_settings st;
    memset(&st, 0, sizeof st);
    st.optim = AMP_OPTIM_ADAMW;
    st.beta1 = 0.9;
    st.beta2 = 0.99;
    st.eps = 1e-8;
    st.weight_decay = 0.1;
    double worst_loss = 0, worst_scale = 0, worst_amax = 0, worst_grad[2] = {0, 0};
    for (int i = 0; i < STEPS; i++) {
        for (int k = 0; k < nslots; k++) {
            double r = fabs(slots[k].slot->scale - slots[k].scale[i]) / slots[k].scale[i];
            worst_scale = fmax(worst_scale, r);
            EXPECT(r <= SCALE_TOL, "step %d %s: scale %.9g, torch %.9g (rel %.3g)", i, slots[k].name,
                   slots[k].slot->scale, slots[k].scale[i], r);
        }
        double loss = forward_backward(m);
        double rl = fabs(loss - losses[i]) / fabs(losses[i]);
        worst_loss = fmax(worst_loss, rl);
        EXPECT(rl <= LOSS_TOL, "step %d: loss %.8f, torch %.8f (rel %.3g > %g)", i, loss, losses[i],
               rl, LOSS_TOL);
        if (i == 0 || i == STEPS - 1)
            worst_grad[i != 0] = compare_tensors(m, fp8, i == 0 ? "fp8.step0.grad." : "fp8.last.grad.",
                                                 m->grads, GRAD_TOL);
        if (amp_model_scaled_collect(m) != 0) {
            fprintf(stderr, "FAIL: scaled_collect: %s\n", m->be->err);
            return 1;
        }
        for (int k = 0; k < nslots; k++) {
            double a = slots[k].slot->step.amax, want = slots[k].amax[i];
            double r = fabs(a - want) / want;
            worst_amax = fmax(worst_amax, r);
            EXPECT(r <= AMAX_TOL, "step %d %s: amax %.9g, torch %.9g (rel %.3g)", i, slots[k].name,
                   a, want, r);
        }
        if (amp_model_optimizer_step(m, &st, 1e-3, i + 1) != 0) {
            fprintf(stderr, "FAIL: optimizer: %s\n", m->be->err);
            return 1;
        }
        /* alone: no ranks to reduce the stats across */
        if (amp_scaled_step_end(m->scaled, err, sizeof err) != 0) {
            fprintf(stderr, "FAIL: scale update: %s\n", err);
            return 1;
        }
    }
    float *w = amp_session_weights(s, err, sizeof err);
    if (!w) {
        fprintf(stderr, "FAIL: weights: %s\n", err);
        return 1;
    }
    double worst_w = compare_final(m, ref, fp8, w, WEIGHT_TOL);
    printf("fp8 GPT vs torch, %d steps: losses worst rel %.2e (limit %g), scales %.2e (limit %g), "
           "amax %.2e (limit %g)\n", STEPS, worst_loss, LOSS_TOL, worst_scale, SCALE_TOL, worst_amax,
           AMAX_TOL);
    printf("  gradients worst of max|ref|: step 0 %.2e, step %d %.2e (limit %g); final weights "
           "||w - w_ref|| / ||w_ref - w_0|| %.2e (limit %g)\n", worst_grad[0], STEPS - 1, worst_grad[1], GRAD_TOL, worst_w,
           WEIGHT_TOL);
    free(w);
    free(losses);
    for (int k = 0; k < nslots; k++) free(slots[k].scale), free(slots[k].amax);
    amp_session_close(s);
    amp_config_free(cfg);
    amp_safetensors_close(ref);
    amp_safetensors_close(fp8);
    if (amp_test_failures) fprintf(stderr, "%d failure(s)\n", amp_test_failures);
    return amp_test_failures ? 1 : 0;
}
