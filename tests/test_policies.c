/* Precision-policy plugins (fp32, fp16, bf16) loaded from the build tree and
 * driven through a fake host: dtype per op class (PyTorch autocast classes),
 * requires_scaler / allow_tf32, op.* and layer.* overrides, rejected keys. */
#include "plugin_test_host.h"

static const amp_precision_vtable *vt_fp32, *vt_fp16, *vt_bf16;

static const char *const class_names[AMP_OP_COUNT] = {
    "gemm", "conv", "attention", "pointwise", "softmax", "loss", "norm", "reduce"};
static const char *const dt_names[AMP_DTYPE_COUNT] = {"f32", "f16", "bf16"};

static const char *dtn(amp_dtype d)
{
    return d >= 0 && d < AMP_DTYPE_COUNT ? dt_names[d] : "?";
}

typedef th_policy pol;

/* A model with three layers; kv: NULL-terminated key, value pairs. */
static int pol_make(pol *p, const amp_precision_vtable *vt, const char *const *kv)
{
    th_init(&p->h);
    p->h.layers[0] = "fc1";
    p->h.layers[1] = "fc2";
    p->h.layers[2] = "head";
    p->h.nlayers = 3;
    return th_policy_init(p, vt, kv);
}

static void pol_free(pol *p) { th_policy_free(p); }

/* Resolves `layer`. The struct is pre-filled with a value no policy returns
 * by default so a field the plugin forgets to set shows up. */
static int resolve(pol *p, const char *layer, amp_layer_precision *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = (uint32_t)sizeof *out;
    for (int c = 0; c < AMP_OP_COUNT; c++)
        out->compute[c] = (amp_dtype)7;
    out->activation = out->param = (amp_dtype)7;
    return p->vt->resolve(p->self, layer, out);
}

/* expect: compute per class, then activation, then param. */
static void check_layer(pol *p, const char *who, const char *layer, const amp_dtype *expect)
{
    amp_layer_precision lp;
    int rc = resolve(p, layer, &lp);
    CHECK(rc == 0, "%s resolve(%s): %s", who, layer, p->h.error);
    if (rc)
        return;
    for (int c = 0; c < AMP_OP_COUNT; c++)
        CHECK(lp.compute[c] == expect[c], "%s %s: %s computes in %s, expected %s", who, layer,
              class_names[c], dtn(lp.compute[c]), dtn(expect[c]));
    CHECK(lp.activation == expect[AMP_OP_COUNT], "%s %s: activation %s, expected %s", who, layer,
          dtn(lp.activation), dtn(expect[AMP_OP_COUNT]));
    CHECK(lp.param == expect[AMP_OP_COUNT + 1], "%s %s: param %s, expected %s", who, layer,
          dtn(lp.param), dtn(expect[AMP_OP_COUNT + 1]));
}

/* Autocast defaults for low dtype L. */
static void default_expect(amp_dtype L, amp_dtype *e)
{
    for (int c = 0; c < AMP_OP_COUNT; c++)
        e[c] = AMP_DTYPE_F32;
    e[AMP_OP_GEMM] = e[AMP_OP_CONV] = e[AMP_OP_ATTENTION] = e[AMP_OP_POINTWISE] = L;
    e[AMP_OP_COUNT] = L;     /* activation */
    e[AMP_OP_COUNT + 1] = L; /* param */
}

static void test_defaults(const amp_precision_vtable *vt, const char *who, amp_dtype L,
                          int needs_scaler)
{
    pol p;
    CHECK(pol_make(&p, vt, NULL) == 0, "%s init: %s", who, p.h.error);
    if (!p.self)
        return;
    amp_dtype e[AMP_OP_COUNT + 2];
    default_expect(L, e);
    check_layer(&p, who, "fc1", e);
    check_layer(&p, who, "head", e);
    check_layer(&p, who, "loss", e); /* softmax/loss stay FP32 for the loss too */
    int rs = vt->requires_scaler ? vt->requires_scaler(p.self) : 0;
    CHECK(rs == needs_scaler, "%s requires_scaler %d, expected %d", who, rs, needs_scaler);
    int tf = vt->allow_tf32 ? vt->allow_tf32(p.self) : 0;
    CHECK(tf == 0, "%s allow_tf32 %d by default", who, tf);
    /* a too-small output struct is refused, not overrun */
    amp_layer_precision lp;
    memset(&lp, 0, sizeof lp);
    lp.struct_size = 8;
    p.h.nerrors = 0;
    CHECK(vt->resolve(p.self, "fc1", &lp) != 0 && p.h.nerrors > 0,
          "%s accepted struct_size 8", who);
    pol_free(&p);
}

static void test_tf32(void)
{
    pol p;
    static const char *const on[] = {"tf32", "1", NULL};
    CHECK(pol_make(&p, vt_fp32, on) == 0, "fp32 tf32=1: %s", p.h.error);
    if (p.self) {
        CHECK(vt_fp32->allow_tf32 && vt_fp32->allow_tf32(p.self) == 1, "fp32 tf32=1 not allowed");
        CHECK(th_unread(&p.h) == NULL, "fp32 left %s unread", th_unread(&p.h));
        pol_free(&p);
    }
    static const char *const bad[] = {"tf32", "2", NULL};
    CHECK(pol_make(&p, vt_fp32, bad) != 0, "fp32 accepted tf32 = 2");
    CHECK(strcmp(p.h.error_key, "tf32") == 0, "tf32 = 2 reported against '%s': %s",
          p.h.error_key, p.h.error);
    pol_free(&p);
    /* tf32 is fp32's key only: fp16 must leave it for the host to flag */
    CHECK(pol_make(&p, vt_fp16, on) == 0, "fp16 init: %s", p.h.error);
    CHECK(th_unread(&p.h) && strcmp(th_unread(&p.h), "tf32") == 0, "fp16 read the tf32 key");
    pol_free(&p);
}

static void test_op_overrides(void)
{
    static const char *const kv[] = {"op.gemm", "f32", "op.softmax", "bf16", "op.norm", "bf16",
                                     NULL};
    pol p;
    CHECK(pol_make(&p, vt_bf16, kv) == 0, "bf16 op overrides: %s", p.h.error);
    if (!p.self)
        return;
    CHECK(th_unread(&p.h) == NULL, "bf16 left %s unread", th_unread(&p.h));
    amp_dtype e[AMP_OP_COUNT + 2];
    default_expect(AMP_DTYPE_BF16, e);
    e[AMP_OP_GEMM] = AMP_DTYPE_F32;
    e[AMP_OP_SOFTMAX] = AMP_DTYPE_BF16;
    e[AMP_OP_NORM] = AMP_DTYPE_BF16;
    check_layer(&p, "bf16+op", "fc1", e);
    check_layer(&p, "bf16+op", "fc2", e);
    check_layer(&p, "bf16+op", "loss", e);
    pol_free(&p);
}

static void test_layer_overrides(void)
{
    /* op.gemm moves every layer's GEMM to bf16; layer.fc2 = f32 wins for fc2 */
    static const char *const kv[] = {"op.gemm", "bf16", "layer.fc2", "f32", "layer.head", "bf16",
                                     NULL};
    pol p;
    CHECK(pol_make(&p, vt_fp16, kv) == 0, "fp16 layer overrides: %s", p.h.error);
    if (!p.self)
        return;
    CHECK(th_unread(&p.h) == NULL, "fp16 left %s unread", th_unread(&p.h));
    amp_dtype e[AMP_OP_COUNT + 2];
    default_expect(AMP_DTYPE_F16, e);
    e[AMP_OP_GEMM] = AMP_DTYPE_BF16;
    check_layer(&p, "fp16+layer", "fc1", e);
    check_layer(&p, "fp16+layer", "loss", e);
    /* fc2: every low-precision field in f32; FP32 classes stay f32 */
    default_expect(AMP_DTYPE_F32, e);
    check_layer(&p, "fp16+layer", "fc2", e);
    /* head: bf16 everywhere the policy used f16, gemm included */
    default_expect(AMP_DTYPE_BF16, e);
    check_layer(&p, "fp16+layer", "head", e);
    int rs = vt_fp16->requires_scaler(p.self);
    CHECK(rs == 1, "fp16 with overrides still requires a scaler: %d", rs);
    pol_free(&p);
}

/* layer.<glob> sets every layer it matches; a later key wins. */
static void test_layer_globs(void)
{
    static const char *const kv[] = {"layer.fc*", "f32", "layer.fc2", "bf16", NULL};
    pol p;
    CHECK(pol_make(&p, vt_fp16, kv) == 0, "fp16 layer globs: %s", p.h.error);
    if (!p.self)
        return;
    amp_dtype e[AMP_OP_COUNT + 2];
    default_expect(AMP_DTYPE_F32, e);
    check_layer(&p, "fp16+glob", "fc1", e);
    default_expect(AMP_DTYPE_BF16, e);
    check_layer(&p, "fp16+glob", "fc2", e);
    default_expect(AMP_DTYPE_F16, e);
    check_layer(&p, "fp16+glob", "head", e);
    pol_free(&p);
}

/* Init must fail with a key_error against `key` whose message contains
 * `want` (the list of valid choices). */
static void expect_reject(const amp_precision_vtable *vt, const char *who, const char *key,
                          const char *value, const char *want)
{
    const char *kv[] = {"op.conv", "f32", key, value, NULL};
    pol p;
    int rc = pol_make(&p, vt, kv);
    CHECK(rc != 0, "%s accepted %s = %s", who, key, value);
    CHECK(strcmp(p.h.error_key, key) == 0, "%s: %s = %s reported against '%s'", who, key, value,
          p.h.error_key);
    CHECK(strstr(p.h.error, key) != NULL, "%s: message does not name %s: %s", who, key,
          p.h.error);
    CHECK(strstr(p.h.error, want) != NULL, "%s: message for %s = %s lacks '%s': %s", who, key,
          value, want, p.h.error);
    if (rc == 0)
        pol_free(&p);
}

static void test_rejects(void)
{
    expect_reject(vt_fp16, "fp16", "op.matmul", "f16",
                  "gemm conv attention pointwise softmax loss norm reduce");
    expect_reject(vt_fp16, "fp16", "op.gemm", "fp8", "f32 f16 bf16");
    expect_reject(vt_bf16, "bf16", "op.softmax", "", "f32 f16 bf16");
    expect_reject(vt_fp32, "fp32", "layer.fc9", "f32", "fc1 fc2 head");
    expect_reject(vt_bf16, "bf16", "layer.fc1", "half", "f32 f16 bf16");
    expect_reject(vt_bf16, "bf16", "layer.FC1", "f16", "fc1 fc2 head");
    expect_reject(vt_bf16, "bf16", "layer.h.*.attn", "f32", "matches no layer");

    /* keys outside op.* / layer.* are not the policy's: left unread */
    static const char *const other[] = {"scale", "4", "opt.gemm", "f16", "layers.fc1", "f16",
                                        NULL};
    pol p;
    CHECK(pol_make(&p, vt_bf16, other) == 0, "bf16 init: %s", p.h.error);
    for (int i = 0; i < p.h.nkv; i++)
        CHECK(!p.h.kv[i].read, "bf16 read key %s it does not own", p.h.kv[i].key);
    pol_free(&p);
}

int main(void)
{
    const amp_plugin_info *e;
    if ((e = th_open_plugin("amp_precision_fp32.so", AMP_PLUGIN_KIND_PRECISION, "fp32")))
        vt_fp32 = e->vtable;
    if ((e = th_open_plugin("amp_precision_fp16.so", AMP_PLUGIN_KIND_PRECISION, "fp16")))
        vt_fp16 = e->vtable;
    if ((e = th_open_plugin("amp_precision_bf16.so", AMP_PLUGIN_KIND_PRECISION, "bf16")))
        vt_bf16 = e->vtable;
    if (!vt_fp32 || !vt_fp16 || !vt_bf16) {
        fprintf(stderr, "test_policies: a precision plugin failed to load\n");
        return 1;
    }
    const amp_precision_vtable *all[] = {vt_fp32, vt_fp16, vt_bf16};
    for (int k = 0; k < 3; k++) {
        CHECK(all[k]->struct_size >= sizeof(amp_precision_vtable), "vtable %d struct_size", k);
        CHECK(all[k]->init && all[k]->fini && all[k]->resolve,
              "vtable %d lacks a required function", k);
    }
    CHECK(vt_fp16->requires_scaler != NULL, "fp16 must say it requires a scaler");

    test_defaults(vt_fp32, "fp32", AMP_DTYPE_F32, 0);
    test_defaults(vt_fp16, "fp16", AMP_DTYPE_F16, 1);
    test_defaults(vt_bf16, "bf16", AMP_DTYPE_BF16, 0);
    test_tf32();
    test_op_overrides();
    test_layer_overrides();
    test_layer_globs();
    test_rejects();

    if (th_failures) {
        fprintf(stderr, "test_policies: %d check(s) failed\n", th_failures);
        return 1;
    }
    printf("test_policies: all checks passed\n");
    return 0;
}
