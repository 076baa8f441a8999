/* The GPT's data and its whole-model backward:
 *   - SHA-256 against FIPS 180-2's vectors;
 *   - the shipped corpus: size, 65-character vocabulary, the 90/10 split,
 *     its checksum; a wrong expected checksum is refused with the reason;
 *   - the text batcher: training windows from (seed, step) alone (a fresh
 *     batcher at step k draws what a running one drew at step k), y is x
 *     shifted by one, windows stay in their split, the validation windows
 *     are the same for every seed;
 *   - the GPT without biases (the reference test covers bias = true), with
 *     each activation (gelu, gelu_tanh), with RMSNorm and with a SwiGLU MLP
 *     (12 wide): every parameter's FP32 gradient against central finite
 *     differences;
 *   - a GPT session: the LR equal to nanoGPT's get_lr at every step, the decay flags (2-D
 *     tensors only), and the loss going down on Shakespeare in a few steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "model.h"
#include "model_helpers.h"
#include "util/rng.h"
#include "train/session.h"
#include "session_helpers.h"
#include "util/sha256.h"
#include "data/text.h"
#include "data/windows.h"

static void test_sha256(void) {
    static const struct {
        const char *msg;
        const char *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        amp_sha256 s;
        char hex[65];
        amp_sha256_init(&s);
        amp_sha256_update(&s, v[i].msg, strlen(v[i].msg));
        amp_sha256_final_hex(&s, hex);
        EXPECT(strcmp(hex, v[i].hex) == 0, "sha256(\"%s\") = %s", v[i].msg, hex);
    }
    /* a million 'a', fed in uneven pieces */
    amp_sha256 s;
    char hex[65], buf[997];
    memset(buf, 'a', sizeof buf);
    amp_sha256_init(&s);
    for (size_t done = 0; done < 1000000;) {
        size_t k = 1000000 - done < sizeof buf ? 1000000 - done : (done % 7) + 990;
        amp_sha256_update(&s, buf, k);
        done += k;
    }
    amp_sha256_final_hex(&s, hex);
    EXPECT(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
           "sha256(a x 1e6) = %s", hex);
    printf("ok  sha256 vectors\n");
}

static void test_corpus(void) {
    char path[4096], err[1024];
    EXPECT(amp_text_shipped_path(path, sizeof path) == 0, "the shipped corpus was not found");
    amp_text t;
    if (amp_text_load(&t, path, AMP_TEXT_DEFAULT_SHA256, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: %s\n", err);
        exit(1);
    }
    EXPECT(t.n == 1115394 && t.n_train == 1003854, "n %lld, train %lld", (long long)t.n,
           (long long)t.n_train);
    EXPECT(t.vocab == 65 && t.chars[0] == '\n' && t.chars[1] == ' ' && t.chars[64] == 'z',
           "vocabulary of %d characters", t.vocab);
    int sorted = 1, roundtrip = 1;
    for (int i = 1; i < t.vocab; i++) sorted &= t.chars[i] > t.chars[i - 1];
    for (int i = 0; i < t.vocab; i++) roundtrip &= t.ids[t.chars[i]] == i;
    EXPECT(sorted && roundtrip, "vocabulary not sorted or ids do not round-trip");
    EXPECT(strcmp(t.sha256, AMP_TEXT_DEFAULT_SHA256) == 0, "sha256 %s", t.sha256);
    amp_text_free(&t);
    /* the wrong checksum: refused, and the message says what to do */
    char wrong[65];
    memset(wrong, '0', 64);
    wrong[64] = '\0';
    int rc = amp_text_load(&t, path, wrong, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, "sha256") && strstr(err, "restore"),
           "a wrong checksum was accepted or badly reported: %s", err);
    EXPECT(t.tokens == NULL, "a refused file left tokens allocated");
    rc = amp_text_load(&t, "/nonexistent/shakespeare.txt", NULL, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, "/nonexistent/shakespeare.txt"), "missing file: %s", err);
    printf("ok  the shipped corpus: 65 characters, 1003854 + 111540, sha256 checked\n");
}

static void test_batcher(void) {
    char path[4096], err[1024];
    amp_text t;
    if (amp_text_shipped_path(path, sizeof path) != 0 ||
        amp_text_load(&t, path, NULL, err, sizeof err) != 0)
        exit(1);
    int B = 5, T = 32;
    size_t n = (size_t)B * T;
    amp_batcher *a = amp_batcher_text_create(&t, 42, B, T, 8);
    int32_t *x7 = malloc(n * 4), *y7 = malloc(n * 4);
    for (int64_t step = 0; step <= 7; step++) {
        a->ops->begin_step(a, step, 2 * B);
        a->ops->next(a, B);
        a->ops->next(a, B); /* the second micro-batch of the step */
    }
    memcpy(x7, a->hx, n * 4);
    memcpy(y7, a->hy, n * 4);
    /* a fresh batcher (a resumed run) at step 7 draws the same windows */
    amp_batcher *b = amp_batcher_text_create(&t, 42, B, T, 8);
    b->ops->restore(b, 0, 0, 7);
    b->ops->begin_step(b, 7, 2 * B);
    b->ops->next(b, B);
    b->ops->next(b, B);
    EXPECT(memcmp(b->hx, x7, n * 4) == 0 && memcmp(b->hy, y7, n * 4) == 0,
           "step 7's windows depend on more than (seed, step)");
    b->ops->begin_step(b, 8, 2 * B);
    b->ops->next(b, B);
    b->ops->next(b, B);
    EXPECT(memcmp(b->hx, x7, n * 4) != 0, "steps 7 and 8 drew the same windows");
    amp_batcher *c = amp_batcher_text_create(&t, 43, B, T, 8);
    c->ops->begin_step(c, 7, 2 * B);
    c->ops->next(c, B);
    c->ops->next(c, B);
    EXPECT(memcmp(c->hx, x7, n * 4) != 0, "seeds 42 and 43 drew the same windows");
    /* y is x shifted by one, and every training window is in the first 90% */
    const int32_t *x = a->hx, *y = a->hy;
    int shifted = 1;
    for (int r = 0; r < B; r++)
        for (int i = 0; i + 1 < T; i++) shifted &= y[r * T + i] == x[r * T + i + 1];
    EXPECT(shifted, "y is not x shifted by one");
    /* validation: in the last 10%, the same set for every seed */
    const int64_t *ea = amp_batcher_windows_eval_starts(a), *ec = amp_batcher_windows_eval_starts(c);
    int same = 1, inside = 1;
    for (int i = 0; i < 8; i++) {
        same &= ea[i] == ec[i];
        inside &= ea[i] >= 0 && t.n_train + ea[i] + T + 1 <= t.n;
    }
    EXPECT(same && inside, "validation windows differ across seeds (%d) or leave the split (%d)",
           same, inside);
    a->ops->eval(a, 2, 3);
    int window = 1;
    for (int i = 0; i < T; i++)
        window &= ((const int32_t *)a->hx)[i] == t.tokens[t.n_train + ea[2] + i] &&
                  ((const int32_t *)a->hy)[i] == t.tokens[t.n_train + ea[2] + i + 1];
    EXPECT(window, "eval rows are not the validation windows");
    printf("ok  text batcher: windows from (seed, step), fixed validation set\n");
    amp_batcher_free(a), amp_batcher_free(b), amp_batcher_free(c);
    free(x7), free(y7);
    amp_text_free(&t);
}

/* Whole-model FP32 gradients of a 1-layer GPT without biases against
 * central differences of the mean loss, weights drawn wide enough that
 * every gradient is well above the differences' noise. */
static void test_gpt_finite_differences(const char *activation, const char *const *extra,
                                        const char *must_have) {
    char err[512], act_key[64], what[256] = "";
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    snprintf(act_key, sizeof act_key, "model.activation=%s", activation);
    const char *sets[16] = {"model.name=gpt", "model.n_layer=2", "model.n_head=2",
                            "model.n_embd=8", "model.block_size=5", "model.bias=false", act_key};
    for (int i = 0; extra && extra[i]; i++) {
        sets[7 + i] = extra[i];
        snprintf(what + strlen(what), sizeof what - strlen(what), ", %s", extra[i]);
    }
    amp_config *cfg = make_config(sets);
    amp_model_input in;
    memset(&in, 0, sizeof in);
    in.batch = 2;
    in.features = in.targets = 5;
    in.classes = 7;
    in.x_is_tokens = 1;
    amp_model *m = model_f32_or_die("gpt", be, cfg, &in);
    EXPECT(amp_model_desc_find(&m->desc, "transformer.h.0.attn.c_attn.bias") < 0 &&
               amp_model_desc_find(&m->desc, must_have) >= 0,
           "bias = false still has biases, or the names are off");
    amp_rng r;
    amp_rng_seed(&r, 5);
    for (size_t i = 0; i < m->desc.nparams; i++)
        m->master[i] = (float)(amp_rng_uniform(&r) - 0.5);
    int32_t tok[10] = {1, 4, 2, 6, 0, 3, 3, 5, 1, 2}, lab[10] = {4, 2, 6, 0, 3, 3, 5, 1, 2, 6};
    memcpy(m->x, tok, sizeof tok);
    memcpy(m->y, lab, sizeof lab);
    model_backward_or_die(m, 2);
    size_t n = m->desc.nparams;
    float *g = malloc(n * sizeof(float));
    memcpy(g, m->grads, n * sizeof(float));
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        float keep = m->master[i];
        double h = 1e-2;
        m->master[i] = keep + (float)h;
        double up = model_batch_loss(m, 2);
        m->master[i] = keep - (float)h;
        double dn = model_batch_loss(m, 2);
        m->master[i] = keep;
        double fd = (up - dn) / (2 * h), d = fabs(fd - g[i]);
        worst = fmax(worst, d);
        if (d > 2e-4 + 2e-2 * fabs(fd) && bad++ < 5) {
            int t = 0;
            while (t + 1 < m->desc.nparam_tensors && m->desc.params[t + 1].offset <= i) t++;
            EXPECT(0, "%s[%zu]: backward %.6g, finite differences %.6g", m->desc.params[t].name,
                   i - m->desc.params[t].offset, g[i], fd);
        }
    }
    EXPECT(bad == 0, "%d of %zu GPT gradients differ from finite differences", bad, n);
    if (!bad)
        printf("ok  GPT (2 layers, no bias, %s%s) %zu gradients vs finite differences, max diff "
               "%.2e\n", activation, what, n, worst);
    free(g);
    amp_model_free(m);
    amp_config_free(cfg);
    be->ops->destroy(be);
}

static const char *const shakespeare[] = {
    "data.dataset=text", "data.batch_size=4", "data.eval_iters=2", "model.name=gpt",
    "model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=16",
    "optim.name=adamw", "optim.lr=1e-2", "optim.schedule=cosine", "optim.min_lr=1e-3",
    "optim.warmup_steps=3", "optim.weight_decay=0.5", "train.steps=12", "run.device=cpu", NULL};

/* nanoGPT train.py's get_lr, as written there (learning_rate, min_lr,
 * warmup_iters, lr_decay_iters). */
static double nanogpt_get_lr(int it, double learning_rate, double min_lr, int warmup_iters,
                             int lr_decay_iters) {
    if (it < warmup_iters) return learning_rate * (it + 1) / (warmup_iters + 1);
    if (it > lr_decay_iters) return min_lr;
    double decay_ratio = (double)(it - warmup_iters) / (lr_decay_iters - warmup_iters);
    double coeff = 0.5 * (1.0 + cos(M_PI * decay_ratio));
    return min_lr + coeff * (learning_rate - min_lr);
}

static void test_session(void) {
    amp_config *cfg = make_config(shakespeare);
    amp_session *s = open_or_die(cfg);
    amp_model *m = s->model;
    EXPECT(s->model->input.classes == 65 && s->model->input.x_is_tokens, "text input %d classes",
           s->model->input.classes);
    /* LR: nanoGPT's get_lr at every step (lr_decay_iters = the run's 12 steps) */
    amp_step_record rec;
    double first = 0, last = 0;
    for (int i = 0; i < 12; i++) {
        double lr = amp_session_lr(s), want = nanogpt_get_lr(i, 1e-2, 1e-3, 3, 12);
        EXPECT(lr == want, "lr at step %d: %.17g, nanoGPT's get_lr gives %.17g", i, lr, want);
        step_or_die(s, &rec);
        if (i == 0) first = rec.loss;
        last = rec.loss;
    }
    EXPECT(last < first - 0.3, "the loss did not go down: %.4f -> %.4f", first, last);
    /* decay on the 2-D tensors only (nanoGPT's grouping; the reference
     * test checks the optimizer honours the flags) */
    int li = amp_model_desc_find(&m->desc, "transformer.h.0.ln_1.weight");
    int wi = amp_model_desc_find(&m->desc, "transformer.h.0.attn.c_attn.weight");
    EXPECT(li >= 0 && wi >= 0 && m->desc.params[li].decay == 0 && m->desc.params[wi].decay == 1 &&
               m->desc.params[amp_model_desc_find(&m->desc, "transformer.wte.weight")].decay == 1,
           "decay flags: ln %d, c_attn %d", li >= 0 ? m->desc.params[li].decay : -1,
           wi >= 0 ? m->desc.params[wi].decay : -1);
    printf("ok  GPT session: the LR is nanoGPT's get_lr at every step, loss %.3f -> %.3f in 12 steps\n", first,
           last);
    double vl, va;
    char err[512];
    EXPECT(amp_session_evaluate(s, &vl, &va, err, sizeof err) == 0 && vl > 0 && va > 0,
           "evaluation: %s", err);
    amp_session_close(s);
    amp_config_free(cfg);
}

int main(void) {
    test_sha256();
    test_corpus();
    test_batcher();
    static const char *const rms[] = {"model.norm=rmsnorm", NULL};
    static const char *const swiglu[] = {"model.mlp=swiglu", "model.intermediate=12", NULL};
    /* a Llama: RoPE, multi-query (2 heads, 1 key/value head), untied head */
    static const char *const llama[] = {"model.names=llama", "model.position=rope",
                                        "model.n_kv_head=1", "model.norm=rmsnorm",
                                        "model.mlp=swiglu", "model.intermediate=12",
                                        "model.tie_embeddings=false", NULL};
    const char *fc = "transformer.h.1.mlp.c_fc.weight";
    test_gpt_finite_differences("gelu", NULL, fc);
    test_gpt_finite_differences("gelu_tanh", NULL, fc);
    test_gpt_finite_differences("gelu", rms, fc);
    test_gpt_finite_differences("gelu", swiglu, "transformer.h.1.mlp.down_proj.weight");
    test_gpt_finite_differences("gelu", llama, "model.layers.1.self_attn.k_proj.weight");
    test_session();
    if (amp_test_failures) fprintf(stderr, "%d failure(s)\n", amp_test_failures);
    return amp_test_failures ? 1 : 0;
}
