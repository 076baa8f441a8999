/* The fp8 and mxfp8 precision policies through a fake host: the operand
 * formats per layer and role (GEMM/CONV layers only, layer.* overrides
 * without them), every key's checks, and fp8's scale_update rule. */
#include <math.h>

#include "plugin_test_host.h"

static const amp_precision_vtable *vt_fp8, *vt_mxfp8;

enum { GEMM = 1u << AMP_OP_GEMM, CONV = 1u << AMP_OP_CONV, NORM = 1u << AMP_OP_NORM };

typedef th_policy pol;

/* fc1 (GEMM), ln (NORM), conv1 (CONV), head (GEMM); kv: key, value pairs. */
static int pol_make(pol *p, const amp_precision_vtable *vt, const char *const *kv)
{
    th_init(&p->h);
    const char *names[] = {"fc1", "ln", "conv1", "head"};
    unsigned classes[] = {GEMM, NORM, CONV, GEMM};
    for (int i = 0; i < 4; i++) {
        p->h.layers[i] = names[i];
        p->h.classes[i] = classes[i];
    }
    p->h.nlayers = 4;
    return th_policy_init(p, vt, kv);
}

static void pol_free(pol *p) { th_policy_free(p); }

static amp_layer_precision resolve(pol *p, const char *layer)
{
    amp_layer_precision lp;
    memset(&lp, 0x5a, sizeof lp); /* what the plugin forgets shows */
    lp.struct_size = (uint32_t)sizeof lp;
    CHECK(p->vt->resolve(p->self, layer, &lp) == 0, "resolve %s: %s", layer, p->h.error);
    return lp;
}

/* The three roles of `layer` are (fmt_in, fmt_w, fmt_g) with `scaling`
 * and `hist`, or all DTYPE when fmt_in is AMP_FORMAT_DTYPE. */
static void check_roles(pol *p, const char *who, const char *layer, uint32_t fin, uint32_t fw,
                        uint32_t fg, uint32_t scaling, uint32_t hist)
{
    amp_layer_precision lp = resolve(p, layer);
    uint32_t want[3] = {fin, fw, fg};
    for (int r = 0; r < AMP_ROLE_COUNT; r++) {
        const amp_operand_format *f = &lp.operand[r];
        CHECK(f->format == want[r], "%s %s role %d: format %u, want %u", who, layer, r, f->format,
              want[r]);
        if (want[r] != AMP_FORMAT_DTYPE) {
            CHECK(f->scaling == scaling, "%s %s role %d: scaling %u, want %u", who, layer, r,
                  f->scaling, scaling);
            CHECK(f->history_len == hist, "%s %s role %d: history %u, want %u", who, layer, r,
                  f->history_len, hist);
            CHECK(f->reserved == 0, "%s %s role %d: reserved %u", who, layer, r, f->reserved);
        }
    }
    /* bf16 autocast underneath, the layer.* override's dtype where set */
    CHECK(lp.compute[AMP_OP_SOFTMAX] == AMP_DTYPE_F32 && lp.compute[AMP_OP_NORM] == AMP_DTYPE_F32,
          "%s %s: softmax/norm not f32", who, layer);
}

static const uint32_t E4 = AMP_FORMAT_F8_E4M3, E5 = AMP_FORMAT_F8_E5M2, DT = AMP_FORMAT_DTYPE;

static void test_fp8_formats(void)
{
    pol p;
    CHECK(pol_make(&p, vt_fp8, NULL) == 0, "fp8 defaults: %s", p.h.error);
    check_roles(&p, "fp8", "fc1", E4, E4, E5, AMP_SCALING_DELAYED, 1024);
    check_roles(&p, "fp8", "conv1", E4, E4, E5, AMP_SCALING_DELAYED, 1024); /* GEMM and CONV */
    check_roles(&p, "fp8", "ln", DT, DT, DT, 0, 0);
    check_roles(&p, "fp8", "loss", DT, DT, DT, 0, 0);
    amp_layer_precision lp = resolve(&p, "fc1");
    CHECK(lp.compute[AMP_OP_GEMM] == AMP_DTYPE_BF16 && lp.activation == AMP_DTYPE_BF16 &&
              lp.param == AMP_DTYPE_BF16,
          "fp8: the bf16 policy underneath");
    CHECK(vt_fp8->requires_scaler(p.self) == 0, "fp8 needs no loss scaler");
    pol_free(&p);

    const char *kv[] = {"format", "e4m3", "recipe", "current", "amax_history_len", "16",
                        "layer.head", "bf16", "layer.conv1", "bf16", NULL};
    CHECK(pol_make(&p, vt_fp8, kv) == 0, "fp8 e4m3 current: %s", p.h.error);
    CHECK(th_unread(&p.h) == NULL, "fp8 left %s unread", th_unread(&p.h));
    check_roles(&p, "fp8 e4m3", "fc1", E4, E4, E4, AMP_SCALING_CURRENT, 16);
    check_roles(&p, "fp8 layer.head", "head", DT, DT, DT, 0, 0);
    check_roles(&p, "fp8 layer.conv1", "conv1", DT, DT, DT, 0, 0);
    lp = resolve(&p, "head");
    CHECK(lp.compute[AMP_OP_GEMM] == AMP_DTYPE_BF16 && lp.param == AMP_DTYPE_BF16,
          "layer.head = bf16 keeps bf16");
    pol_free(&p);
}

/* Each bad value fails init with a key_error on that key. */
static void test_fp8_bad_keys(void)
{
    static const char *const bad[][2] = {
        {"format", "e5m3"},           {"format", "E4M3"},          {"recipe", "late"},
        {"amax_compute", "mean"},     {"amax_history_len", "0"},   {"amax_history_len", "1e12"},
        {"amax_history_len", "65537"}, {"amax_history_len", "2.5"}, {"margin", "nan"},
        {"margin", "-1"},             {"margin", "1.5"},           {"margin", "65"},
        {"margin", "inf"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pol p;
        const char *kv[] = {bad[i][0], bad[i][1], NULL};
        int rc = pol_make(&p, vt_fp8, kv);
        CHECK(rc != 0, "fp8 accepted %s = %s", bad[i][0], bad[i][1]);
        CHECK(p.h.nerrors > 0 && strcmp(p.h.error_key, bad[i][0]) == 0,
              "fp8 %s = %s: error '%s' on key '%s'", bad[i][0], bad[i][1], p.h.error,
              p.h.error_key);
        pol_free(&p);
    }
    /* a host that cannot tell op classes (before ABI 1.2) is refused, not guessed */
    pol p;
    th_init(&p.h);
    p.h.api.struct_size = (uint32_t)offsetof(amp_host_api, layer_op_classes);
    p.self = NULL;
    p.vt = vt_fp8;
    CHECK(vt_fp8->init(&p.h.api, &p.self) != 0 && strstr(p.h.error, "op classes"),
          "fp8 on an old host: '%s'", p.h.error);
    pol_free(&p);
}

static double update(pol *p, uint32_t scaling, double amax, const double *hist, uint32_t n,
                     double prev)
{
    amp_scale_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = (uint32_t)sizeof st;
    st.layer = "fc1";
    st.format = AMP_FORMAT_F8_E4M3;
    st.scaling = scaling;
    st.format_max = 448.0;
    st.scale = prev;
    st.amax = amax;
    st.history = hist;
    st.history_count = n;
    st.history_len = 1024;
    double s = -1.0;
    CHECK(vt_fp8->scale_update(p->self, &st, &s) == 0, "scale_update failed");
    return s;
}

static void test_fp8_scale_update(void)
{
    const double hist[3] = {2.0, 8.0, 4.0}; /* newest first */
    pol p;
    CHECK(pol_make(&p, vt_fp8, NULL) == 0, "fp8: %s", p.h.error);
    CHECK(update(&p, AMP_SCALING_DELAYED, 2.0, hist, 3, 1.0) == 448.0 / 8.0, "max of the history");
    const double zero[2] = {0.0, 0.0}, inf[2] = {INFINITY, 1.0};
    CHECK(update(&p, AMP_SCALING_DELAYED, 0.0, zero, 2, 3.5) == 3.5, "amax 0 keeps the scale");
    CHECK(update(&p, AMP_SCALING_DELAYED, INFINITY, inf, 2, 3.5) == 3.5, "inf keeps the scale");
    pol_free(&p);
    const char *recent[] = {"amax_compute", "most_recent", "margin", "2", NULL};
    CHECK(pol_make(&p, vt_fp8, recent) == 0, "fp8 most_recent: %s", p.h.error);
    CHECK(update(&p, AMP_SCALING_DELAYED, 2.0, hist, 3, 1.0) == 448.0 / 2.0 / 4.0,
          "most_recent with margin 2");
    pol_free(&p);
    const char *cur[] = {"recipe", "current", NULL};
    CHECK(pol_make(&p, vt_fp8, cur) == 0, "fp8 current: %s", p.h.error);
    const double one = 7.0;
    CHECK(update(&p, AMP_SCALING_CURRENT, 7.0, &one, 1, 1.0) == 64.0, "current: 448 / 7");
    pol_free(&p);
}

static void test_mxfp8(void)
{
    pol p;
    CHECK(pol_make(&p, vt_mxfp8, NULL) == 0, "mxfp8: %s", p.h.error);
    check_roles(&p, "mxfp8", "fc1", E4, E4, E4, AMP_SCALING_MX32, 0);
    check_roles(&p, "mxfp8", "conv1", E4, E4, E4, AMP_SCALING_MX32, 0);
    check_roles(&p, "mxfp8", "ln", DT, DT, DT, 0, 0);
    CHECK(vt_mxfp8->scale_update == NULL, "mxfp8 has no scale_update");
    pol_free(&p);
    const char *hy[] = {"format", "hybrid", NULL};
    CHECK(pol_make(&p, vt_mxfp8, hy) == 0, "mxfp8 hybrid: %s", p.h.error);
    check_roles(&p, "mxfp8 hybrid", "fc1", E4, E4, E5, AMP_SCALING_MX32, 0);
    pol_free(&p);
    const char *bad[] = {"format", "e5m2", NULL};
    CHECK(pol_make(&p, vt_mxfp8, bad) != 0 && strcmp(p.h.error_key, "format") == 0,
          "mxfp8 format = e5m2: '%s'", p.h.error);
    pol_free(&p);
}

int main(void)
{
    const amp_plugin_info *e;
    if ((e = th_open_plugin("amp_precision_fp8.so", AMP_PLUGIN_KIND_PRECISION, "fp8")))
        vt_fp8 = e->vtable;
    if (e)
        CHECK(e->keys && strstr(e->keys, "amax_history_len=1024"), "fp8 declares its keys");
    if ((e = th_open_plugin("amp_precision_mxfp8.so", AMP_PLUGIN_KIND_PRECISION, "mxfp8")))
        vt_mxfp8 = e->vtable;
    if (!vt_fp8 || !vt_mxfp8)
        return 1;
    test_fp8_formats();
    test_fp8_bad_keys();
    test_fp8_scale_update();
    test_mxfp8();
    if (th_failures)
        fprintf(stderr, "test_fp8_policy: %d failure(s)\n", th_failures);
    return th_failures ? 1 : 0;
}
