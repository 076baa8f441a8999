/* Loss-scaler plugins (none, static, dynamic, hysteresis) loaded from the
 * build tree and driven through a fake host: trajectories from PyTorch's and
 * Megatron's rules, config validation, checkpoint state round trips and
 * rejections for every scaler. */
#include <float.h>
#include <math.h>

#include "plugin_test_host.h"

static const amp_scaler_vtable *vt_none, *vt_static, *vt_dyn, *vt_hys;

typedef struct inst {
    test_host h; /* must outlive self: the plugin keeps a pointer to h.api */
    const amp_scaler_vtable *vt;
    void *self;
} inst;

/* kv: NULL-terminated key, value, key, value, ... Returns init's status. */
static int inst_make(inst *in, const amp_scaler_vtable *vt, const char *const *kv)
{
    th_init(&in->h);
    in->vt = vt;
    in->self = NULL;
    for (int i = 0; kv && kv[i]; i += 2)
        th_set(&in->h, kv[i], kv[i + 1]);
    return vt->init(&in->h.api, &in->self);
}

static void inst_free(inst *in)
{
    if (in->self)
        in->vt->fini(in->self);
    in->self = NULL;
}

/* One update; returns *skip, or -1 when update failed. */
static int step(inst *in, int found_inf)
{
    amp_scaler_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = (uint32_t)sizeof st;
    st.scale = in->vt->get_scale(in->self);
    st.found_inf = found_inf;
    st.nonfinite = found_inf ? 1 : 0;
    st.grad_norm = found_inf ? INFINITY : 1.0;
    int skip = -7;
    if (in->vt->update(in->self, &st, &skip) != 0)
        return -1;
    return skip;
}

static double scale_of(inst *in) { return in->vt->get_scale(in->self); }

/* Runs a pattern ('c' clean, 'i' inf), checking the scale and skip after each
 * step against expect[] (the scale after that step). */
static void run_pattern(inst *in, const char *what, const char *pattern, const double *expect)
{
    for (int i = 0; pattern[i]; i++) {
        int inf = pattern[i] == 'i';
        int skip = step(in, inf);
        CHECK(skip == inf, "%s step %d ('%c'): skip %d", what, i, pattern[i], skip);
        double s = scale_of(in);
        CHECK(s == expect[i], "%s step %d ('%c'): scale %.9g, expected %.9g", what, i,
              pattern[i], s, expect[i]);
    }
}

/* ------------------------------------------------------------------ dynamic */

static void test_dynamic_defaults(void)
{
    inst in;
    CHECK(inst_make(&in, vt_dyn, NULL) == 0, "dynamic init with defaults: %s", in.h.error);
    if (!in.self)
        return;
    CHECK(scale_of(&in) == 65536.0, "default init_scale %g", scale_of(&in));
    /* growth_interval 2000: 1999 clean steps keep the scale, the 2000th doubles it. */
    for (int i = 0; i < 1999; i++)
        step(&in, 0);
    CHECK(scale_of(&in) == 65536.0, "scale after 1999 clean steps %g", scale_of(&in));
    step(&in, 0);
    CHECK(scale_of(&in) == 131072.0, "scale after 2000 clean steps %g", scale_of(&in));
    CHECK(step(&in, 1) == 1, "inf step not skipped");
    CHECK(scale_of(&in) == 65536.0, "default backoff 0.5: %g", scale_of(&in));
    inst_free(&in);
}

/* PyTorch test_grad_scaling_update_scale: growth 2, backoff 0.25, interval 2,
 * scale 4: clean -> 4 (tracker 1), clean -> 8 (tracker 0), inf -> 2 (tracker
 * 0). Then: clean 2 (1), clean 4 (0), clean 4 (1), inf 1 (reset to 0 from
 * 1), clean 1 (1), clean 2 (0): an inf mid-interval restarts the count. */
static void test_dynamic_pytorch_update_scale(void)
{
    static const char *const kv[] = {"init_scale", "4", "growth_factor", "2",
                                     "backoff_factor", "0.25", "growth_interval", "2", NULL};
    inst in;
    CHECK(inst_make(&in, vt_dyn, kv) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    CHECK(th_unread(&in.h) == NULL, "key %s not read", th_unread(&in.h));
    static const double expect[] = {4, 8, 2, 2, 4, 4, 1, 1, 2};
    run_pattern(&in, "update_scale", "ccicccicc", expect);
    inst_free(&in);
}

/* PyTorch _run_scaling_case: init 128, growth_interval 1, 3 clean steps and
 * one skipped one -> 128 * 2^3 * 0.5 = 512. The inf is the third step. */
static void test_dynamic_scaling_case(void)
{
    static const char *const kv[] = {"init_scale", "128", "growth_interval", "1", NULL};
    inst in;
    CHECK(inst_make(&in, vt_dyn, kv) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    static const double expect[] = {256, 512, 256, 512};
    run_pattern(&in, "scaling_case", "ccic", expect);
    CHECK(scale_of(&in) == 128.0 * 8.0 * 0.5, "final scale %g", scale_of(&in));
    inst_free(&in);
}

/* test_grad_scale_will_not_overflow: init 1e38, growth 2^4: growing would
 * overflow float32, so the scale stays put and finite. */
static void test_dynamic_no_overflow(void)
{
    static const char *const kv[] = {"init_scale", "1e38", "growth_factor", "16",
                                     "growth_interval", "1", NULL};
    inst in;
    CHECK(inst_make(&in, vt_dyn, kv) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    double s0 = scale_of(&in);
    CHECK(s0 == (double)1e38f, "init 1e38 stored as float32: %.9g", s0);
    for (int i = 0; i < 3; i++)
        CHECK(step(&in, 0) == 0, "clean step skipped");
    CHECK(isfinite(scale_of(&in)) && scale_of(&in) == s0, "scale %.9g, expected %.9g",
          scale_of(&in), s0);
    /* 1e38 * 2 still fits float32 (max 3.4e38), so growth 2 applies once. */
    inst_free(&in);
    static const char *const kv2[] = {"init_scale", "1e38", "growth_interval", "1", NULL};
    CHECK(inst_make(&in, vt_dyn, kv2) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    step(&in, 0);
    CHECK(scale_of(&in) == (double)(1e38f * 2.0f), "1e38 * 2 = %.9g", scale_of(&in));
    step(&in, 0);
    CHECK(scale_of(&in) == (double)(1e38f * 2.0f), "4e38 would overflow: %.9g", scale_of(&in));
    inst_free(&in);
}

/* The scale lives in float32 like PyTorch's scale tensor. */
static void test_dynamic_float32_scale(void)
{
    static const char *const kv[] = {"init_scale", "0.001", NULL};
    inst in;
    CHECK(inst_make(&in, vt_dyn, kv) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    CHECK(scale_of(&in) == (double)0.001f && scale_of(&in) != 0.001, "scale %.17g not fp32",
          scale_of(&in));
    inst_free(&in);
    /* PyTorch forms scale * growth in double (the factors are double kernel
     * arguments) and rounds once to float32: 3 * 1.1 -> nearest float to 3.3.
     * A float32 product would give 3.30000019 instead. */
    static const char *const kv2[] = {"init_scale", "3", "growth_factor", "1.1",
                                      "growth_interval", "1", NULL};
    CHECK(inst_make(&in, vt_dyn, kv2) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    step(&in, 0);
    CHECK(scale_of(&in) == (double)3.3f, "3 * 1.1 = %.9g, expected %.9g", scale_of(&in),
          (double)3.3f);
    inst_free(&in);
}

/* Megatron keeps the factors in float32 tensors: 3 * float32(1.1) in float32. */
static void test_hysteresis_float32_products(void)
{
    static const char *const kv[] = {"init_scale", "3", "growth_factor", "1.1",
                                     "growth_interval", "1", NULL};
    inst in;
    CHECK(inst_make(&in, vt_hys, kv) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    step(&in, 0);
    const float g = 1.1f;
    CHECK(scale_of(&in) == (double)(3.0f * g), "3 * 1.1f = %.9g, expected %.9g", scale_of(&in),
          (double)(3.0f * g));
    inst_free(&in);
}

/* Repeated overflow drives the scale towards 0 (PyTorch has no minimum). */
static void test_dynamic_no_minimum(void)
{
    static const char *const kv[] = {"init_scale", "1", NULL};
    inst in;
    CHECK(inst_make(&in, vt_dyn, kv) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    for (int i = 0; i < 10; i++)
        step(&in, 1);
    CHECK(scale_of(&in) == ldexp(1.0, -10), "scale after 10 backoffs %g", scale_of(&in));
    inst_free(&in);
}

/* --------------------------------------------------------------- hysteresis */

static void test_hysteresis_trajectory(void)
{
    static const char *const kv[] = {"init_scale", "1024", "growth_interval", "3",
                                     "hysteresis", "2", "min_scale", "1", "max_scale", "1e6",
                                     NULL};
    inst in;
    CHECK(inst_make(&in, vt_hys, kv) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    CHECK(th_unread(&in.h) == NULL, "key %s not read", th_unread(&in.h));
    CHECK(scale_of(&in) == 1024, "init scale %g", scale_of(&in));
    /* i: first inf absorbed by hysteresis 2 (still skipped); i: backs off;
     * i: tracker not reset, backs off again; ccc: growth resets hysteresis;
     * i: absorbed again; c: does not reset hysteresis (Megatron); i: backs off. */
    static const double expect[] = {1024, 512, 256, 256, 256, 512, 512, 512, 256};
    run_pattern(&in, "hysteresis", "iiicccici", expect);
    inst_free(&in);
}

static void test_hysteresis_defaults(void)
{
    inst in;
    CHECK(inst_make(&in, vt_hys, NULL) == 0, "init with defaults: %s", in.h.error);
    if (!in.self)
        return;
    CHECK(scale_of(&in) == 65536.0, "default init_scale %g", scale_of(&in));
    CHECK(step(&in, 1) == 1 && scale_of(&in) == 65536.0, "default hysteresis 2: %g",
          scale_of(&in));
    CHECK(step(&in, 1) == 1 && scale_of(&in) == 32768.0, "default backoff 0.5: %g",
          scale_of(&in));
    for (int i = 0; i < 999; i++)
        step(&in, 0);
    CHECK(scale_of(&in) == 32768.0, "999 clean steps: %g", scale_of(&in));
    step(&in, 0);
    CHECK(scale_of(&in) == 65536.0, "default growth_interval 1000: %g", scale_of(&in));
    inst_free(&in);
    /* default max_scale 2^24 caps growth */
    static const char *const kv[] = {"init_scale", "16777216", "growth_interval", "1", NULL};
    CHECK(inst_make(&in, vt_hys, kv) == 0, "init: %s", in.h.error);
    if (!in.self)
        return;
    step(&in, 0);
    CHECK(scale_of(&in) == 16777216.0, "default max_scale 2^24: %g", scale_of(&in));
    inst_free(&in);
}

static void test_hysteresis_bounds(void)
{
    inst in;
    /* min_scale floor, including a floor that is not a power of two */
    static const char *const kv1[] = {"init_scale", "4", "hysteresis", "1", "min_scale", "1.5",
                                      NULL};
    CHECK(inst_make(&in, vt_hys, kv1) == 0, "init: %s", in.h.error);
    if (in.self) {
        static const double expect[] = {2, 1.5, 1.5, 1.5};
        run_pattern(&in, "min_scale", "iiii", expect);
        inst_free(&in);
    }
    /* max_scale cap */
    static const char *const kv2[] = {"init_scale", "2048", "max_scale", "5000",
                                      "growth_interval", "1", NULL};
    CHECK(inst_make(&in, vt_hys, kv2) == 0, "init: %s", in.h.error);
    if (in.self) {
        static const double expect[] = {4096, 5000, 5000};
        run_pattern(&in, "max_scale", "ccc", expect);
        inst_free(&in);
    }
    /* init_scale may sit on either bound */
    static const char *const kv3[] = {"init_scale", "8", "min_scale", "8", "max_scale", "8",
                                      NULL};
    CHECK(inst_make(&in, vt_hys, kv3) == 0, "init at min == max: %s", in.h.error);
    inst_free(&in);
}

/* ------------------------------------------------------------ static, none */

static void test_static_and_none(void)
{
    inst in;
    CHECK(inst_make(&in, vt_static, NULL) == 0, "static defaults: %s", in.h.error);
    if (in.self) {
        CHECK(scale_of(&in) == 65536.0, "static default scale %g", scale_of(&in));
        inst_free(&in);
    }
    static const char *const kv[] = {"scale", "1024", NULL};
    CHECK(inst_make(&in, vt_static, kv) == 0, "static init: %s", in.h.error);
    if (in.self) {
        CHECK(th_unread(&in.h) == NULL, "key %s not read", th_unread(&in.h));
        static const double expect[] = {1024, 1024, 1024, 1024, 1024};
        run_pattern(&in, "static", "ciicc", expect);
        inst_free(&in);
    }
    CHECK(inst_make(&in, vt_none, NULL) == 0, "none init: %s", in.h.error);
    if (in.self) {
        static const double expect[] = {1, 1, 1};
        run_pattern(&in, "none", "cic", expect);
        inst_free(&in);
    }
    /* none has no keys: a `scale` key must stay unread for the host to flag */
    CHECK(inst_make(&in, vt_none, kv) == 0, "none init: %s", in.h.error);
    CHECK(th_unread(&in.h) && strcmp(th_unread(&in.h), "scale") == 0,
          "none read a key it does not own");
    inst_free(&in);
}

/* ------------------------------------------------------------ update misuse */

static void test_update_rejects_bad_stats(void)
{
    const amp_scaler_vtable *all[] = {vt_none, vt_static, vt_dyn, vt_hys};
    for (int k = 0; k < 4; k++) {
        inst in;
        if (inst_make(&in, all[k], NULL) != 0)
            continue;
        int skip = 0;
        in.h.nerrors = 0;
        CHECK(all[k]->update(in.self, NULL, &skip) != 0 && in.h.nerrors > 0,
              "scaler %d accepted NULL stats", k);
        amp_scaler_stats st;
        memset(&st, 0, sizeof st);
        st.struct_size = 4; /* too small to carry found_inf */
        CHECK(all[k]->update(in.self, &st, &skip) != 0, "scaler %d accepted struct_size 4", k);
        inst_free(&in);
    }
}

/* ------------------------------------------------------ config validation */

/* Init must fail, and the last error must be a key_error naming `key`. */
static void expect_reject(const amp_scaler_vtable *vt, const char *who, const char *const *kv,
                          const char *key)
{
    inst in;
    int rc = inst_make(&in, vt, kv);
    CHECK(rc != 0, "%s accepted %s = %s", who, key, kv[1]);
    CHECK(in.h.nerrors > 0 && strcmp(in.h.error_key, key) == 0,
          "%s: bad %s reported against key '%s': %s", who, key, in.h.error_key, in.h.error);
    CHECK(strstr(in.h.error, key) != NULL, "%s: message does not name %s: %s", who, key,
          in.h.error);
    /* every key is read even when one is bad, so none shows up as unknown */
    CHECK(th_unread(&in.h) == NULL, "%s: key %s left unread on failure", who, th_unread(&in.h));
    if (rc == 0)
        inst_free(&in);
}

static void test_invalid_config(void)
{
    /* {key, value}: a single bad key; the error must name it */
    static const char *const dyn_bad[][2] = {
        {"init_scale", "-1"},       {"init_scale", "0"},        {"init_scale", "nan"},
        {"init_scale", "inf"},      {"init_scale", "1e39"},     {"init_scale", "1e-50"},
        {"init_scale", "big"},      {"growth_factor", "1.0"},   {"growth_factor", "0.5"},
        {"growth_factor", "nan"},   {"growth_factor", "inf"},   {"backoff_factor", "1.0"},
        {"backoff_factor", "0"},    {"backoff_factor", "-0.5"}, {"backoff_factor", "nan"},
        {"backoff_factor", "1.5"},  {"growth_interval", "0"},   {"growth_interval", "-3"},
        {"growth_interval", "2.5"},
    };
    for (size_t i = 0; i < sizeof dyn_bad / sizeof dyn_bad[0]; i++) {
        const char *kv[] = {dyn_bad[i][0], dyn_bad[i][1], NULL};
        expect_reject(vt_dyn, "dynamic", kv, dyn_bad[i][0]);
    }
    /* one malformed value among good ones: all keys still read */
    static const char *const mixed[] = {"growth_factor", "two", "init_scale", "8",
                                        "backoff_factor", "0.5", "growth_interval", "3", NULL};
    expect_reject(vt_dyn, "dynamic", mixed, "growth_factor");
    static const char *const hys_bad[][2] = {
        {"init_scale", "-1"},     {"init_scale", "nan"},     {"growth_factor", "1"},
        {"backoff_factor", "1"},  {"backoff_factor", "0"},   {"growth_interval", "0"},
        {"hysteresis", "0"},      {"hysteresis", "-1"},      {"hysteresis", "1.5"},
        {"min_scale", "0"},       {"min_scale", "-2"},       {"min_scale", "nan"},
        {"max_scale", "inf"},     {"max_scale", "1e39"},     {"max_scale", "nan"},
    };
    for (size_t i = 0; i < sizeof hys_bad / sizeof hys_bad[0]; i++) {
        const char *kv[] = {hys_bad[i][0], hys_bad[i][1], NULL};
        expect_reject(vt_hys, "hysteresis", kv, hys_bad[i][0]);
    }
    /* cross-key constraints */
    static const char *const min_gt_max[] = {"min_scale", "8", "max_scale", "4", "init_scale",
                                             "6", NULL};
    expect_reject(vt_hys, "hysteresis", min_gt_max, "max_scale");
    static const char *const below_min[] = {"init_scale", "0.5", "min_scale", "1", NULL};
    expect_reject(vt_hys, "hysteresis", below_min, "init_scale");
    static const char *const above_max[] = {"init_scale", "1e9", "max_scale", "1e8", NULL};
    expect_reject(vt_hys, "hysteresis", above_max, "init_scale");

    static const char *const static_bad[] = {"-1", "0", "nan", "inf", "1e39", "x"};
    for (size_t i = 0; i < sizeof static_bad / sizeof static_bad[0]; i++) {
        const char *kv[] = {"scale", static_bad[i], NULL};
        expect_reject(vt_static, "static", kv, "scale");
    }
}

/* ------------------------------------------------------------ state save/load */

static size_t save(inst *in, unsigned char *buf, size_t cap)
{
    size_t len = 0;
    if (in->vt->state_save(in->self, buf, cap, &len) != 0)
        return 0;
    return len;
}

/* Save mid-run, continue; a fresh instance (configured differently on
 * purpose) loads the state and must produce the same future scales. */
static void roundtrip(const amp_scaler_vtable *vt, const char *who, const char *const *kv,
                      const char *before, const char *after, int expect_warn)
{
    inst a, b;
    if (inst_make(&a, vt, kv) != 0) {
        CHECK(0, "%s init: %s", who, a.h.error);
        return;
    }
    for (int i = 0; before[i]; i++)
        step(&a, before[i] == 'i');
    size_t need = 0;
    CHECK(vt->state_save(a.self, NULL, 0, &need) == 0 && need > 0, "%s size query", who);
    unsigned char buf[256];
    CHECK(need <= sizeof buf, "%s state %zu bytes", who, need);
    size_t small = 0;
    a.h.nerrors = 0;
    CHECK(vt->state_save(a.self, buf, need - 1, &small) != 0 && a.h.nerrors > 0,
          "%s saved into a buffer one byte short", who);
    size_t len = save(&a, buf, sizeof buf);
    CHECK(len == need, "%s saved %zu bytes, size query said %zu", who, len, need);

    double ref[64];
    int n = (int)strlen(after);
    for (int i = 0; i < n; i++) {
        step(&a, after[i] == 'i');
        ref[i] = scale_of(&a);
    }

    CHECK(inst_make(&b, vt, NULL) == 0, "%s default init: %s", who, b.h.error);
    int rc = vt->state_load(b.self, buf, len);
    CHECK(rc == 0, "%s load: %s", who, b.h.error);
    CHECK((b.h.nwarn > 0) == expect_warn, "%s: %d warnings on load, expected %s", who,
          b.h.nwarn, expect_warn ? "some (the config differs from the checkpoint)" : "none");
    for (int i = 0; i < n && rc == 0; i++) {
        int inf = after[i] == 'i';
        CHECK(step(&b, inf) == inf, "%s resumed step %d skip", who, i);
        CHECK(scale_of(&b) == ref[i], "%s resumed step %d: scale %.9g, original %.9g", who, i,
              scale_of(&b), ref[i]);
    }
    /* saving again gives the same bytes as the original at the same point */
    unsigned char buf2[256];
    size_t len2 = save(&b, buf2, sizeof buf2);
    size_t len3 = save(&a, buf, sizeof buf);
    CHECK(len2 == len3 && memcmp(buf, buf2, len2) == 0, "%s: re-saved states differ", who);
    inst_free(&a);
    inst_free(&b);
}

static void test_state_roundtrip(void)
{
    static const char *const dkv[] = {"init_scale", "256", "growth_interval", "3",
                                      "growth_factor", "4", "backoff_factor", "0.25", NULL};
    /* saved with growth_tracker 2: the next clean step must grow */
    roundtrip(vt_dyn, "dynamic", dkv, "cicc", "ccciccccicc", 1);
    static const char *const hkv[] = {"init_scale", "512", "growth_interval", "3",
                                      "hysteresis", "3", "min_scale", "2", "max_scale", "4096",
                                      "backoff_factor", "0.25", NULL};
    /* saved with hysteresis_tracker 1 and growth_tracker 1: the next inf
     * backs off, which a fresh instance (tracker 3) would not */
    roundtrip(vt_hys, "hysteresis", hkv, "iic", "icciiicccccccci", 1);
    /* static: the checkpoint's scale replaces the config's (default 65536) */
    static const char *const skv[] = {"scale", "1024", NULL};
    roundtrip(vt_static, "static", skv, "cic", "ccic", 1);
    roundtrip(vt_none, "none", NULL, "ci", "cic", 0);
}

/* none and static: a loaded static scale is used; the config's own scale
 * loads silently; every malformed record is refused with a message and
 * leaves the scale alone; each refuses the other's (and dynamic's) record. */
static void test_state_none_static(void)
{
    inst st, no, dy;
    static const char *const kv[] = {"scale", "1024", NULL};
    if (inst_make(&st, vt_static, kv) != 0 || inst_make(&no, vt_none, NULL) != 0 ||
        inst_make(&dy, vt_dyn, NULL) != 0) {
        CHECK(0, "init: %s %s %s", st.h.error, no.h.error, dy.h.error);
        return;
    }
    unsigned char sgood[64], ngood[64], dgood[64], bad[64];
    size_t slen = save(&st, sgood, sizeof sgood), nlen = save(&no, ngood, sizeof ngood);
    size_t dlen = save(&dy, dgood, sizeof dgood);
    CHECK(slen == 16, "static state %zu bytes, expected magic+version+scale = 16", slen);
    CHECK(nlen == 8, "none state %zu bytes, expected magic+version = 8", nlen);
    CHECK(dlen > 0, "dynamic save: %s", dy.h.error);

    /* loading its own config's scale back: no warning, scale unchanged */
    st.h.nwarn = 0;
    CHECK(vt_static->state_load(st.self, sgood, slen) == 0, "static reload: %s", st.h.error);
    CHECK(st.h.nwarn == 0 && scale_of(&st) == 1024, "static reload warned %d, scale %g",
          st.h.nwarn, scale_of(&st));

    typedef struct bad_case {
        const char *what;
        size_t len;
        size_t byte; /* byte to overwrite with val, or (size_t)-1 */
        unsigned char val;
        int scale_set; /* write `scale` at offset 8 instead */
        double scale;
    } bad_case;
    const bad_case cases[] = {
        {"empty", 0, (size_t)-1, 0, 0, 0},
        {"one byte short", slen - 1, (size_t)-1, 0, 0, 0},
        {"one byte long", slen + 1, (size_t)-1, 0, 0, 0},
        {"bad magic", slen, 3, 'N', 0, 0},
        {"bad version", slen, 4, 2, 0, 0},
        {"NaN scale", slen, (size_t)-1, 0, 1, NAN},
        {"inf scale", slen, (size_t)-1, 0, 1, INFINITY},
        {"zero scale", slen, (size_t)-1, 0, 1, 0.0},
        {"negative scale", slen, (size_t)-1, 0, 1, -1024.0},
        {"scale beyond float32", slen, (size_t)-1, 0, 1, 1e300},
        {"scale not a float32", slen, (size_t)-1, 0, 1, 0.1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(bad, sgood, sizeof bad);
        if (cases[c].scale_set)
            memcpy(bad + 8, &cases[c].scale, 8); /* little-endian host, like the record */
        else if (cases[c].byte != (size_t)-1)
            bad[cases[c].byte] = cases[c].val;
        st.h.nerrors = 0;
        st.h.error[0] = '\0';
        CHECK(vt_static->state_load(st.self, bad, cases[c].len) != 0,
              "static accepted a state with %s", cases[c].what);
        CHECK(st.h.nerrors > 0 && st.h.error[0], "static: %s rejected without a message",
              cases[c].what);
        CHECK(scale_of(&st) == 1024, "static: failed load (%s) changed the scale to %g",
              cases[c].what, scale_of(&st));
    }
    const bad_case ncases[] = {
        {"empty", 0, (size_t)-1, 0, 0, 0},
        {"one byte short", nlen - 1, (size_t)-1, 0, 0, 0},
        {"one byte long", nlen + 1, (size_t)-1, 0, 0, 0},
        {"bad magic", nlen, 3, 'S', 0, 0},
        {"bad version", nlen, 4, 2, 0, 0},
    };
    for (size_t c = 0; c < sizeof ncases / sizeof ncases[0]; c++) {
        memcpy(bad, ngood, sizeof bad);
        if (ncases[c].byte != (size_t)-1)
            bad[ncases[c].byte] = ncases[c].val;
        no.h.nerrors = 0;
        no.h.error[0] = '\0';
        CHECK(vt_none->state_load(no.self, bad, ncases[c].len) != 0,
              "none accepted a state with %s", ncases[c].what);
        CHECK(no.h.nerrors > 0 && no.h.error[0], "none: %s rejected without a message",
              ncases[c].what);
    }
    /* NULL buffers and the other scalers' records */
    st.h.nerrors = no.h.nerrors = 0;
    CHECK(vt_static->state_load(st.self, NULL, slen) != 0 && st.h.nerrors > 0,
          "static accepted NULL");
    CHECK(vt_none->state_load(no.self, NULL, nlen) != 0 && no.h.nerrors > 0,
          "none accepted NULL");
    CHECK(vt_static->state_load(st.self, ngood, nlen) != 0, "static accepted none's state");
    CHECK(vt_none->state_load(no.self, sgood, slen) != 0, "none accepted static's state");
    CHECK(vt_static->state_load(st.self, dgood, dlen) != 0, "static accepted dynamic's state");
    CHECK(vt_none->state_load(no.self, dgood, dlen) != 0, "none accepted dynamic's state");
    /* none's 8 bytes are a prefix-sized record: a static record cut to 8
     * bytes must still be refused by its magic */
    CHECK(vt_none->state_load(no.self, sgood, nlen) != 0, "none accepted static's first 8 bytes");
    CHECK(vt_dyn->state_load(dy.self, sgood, slen) != 0, "dynamic accepted static's state");
    CHECK(scale_of(&st) == 1024 && scale_of(&no) == 1, "failed loads moved a scale");
    /* the good records still load */
    CHECK(vt_static->state_load(st.self, sgood, slen) == 0, "static reload: %s", st.h.error);
    CHECK(vt_none->state_load(no.self, ngood, nlen) == 0, "none reload: %s", no.h.error);
    inst_free(&st);
    inst_free(&no);
    inst_free(&dy);
}

/* Corrupts a valid state one way at a time; every load must fail, report,
 * and leave the instance untouched. */
static void test_state_rejects(const amp_scaler_vtable *vt, const char *who, size_t scale_off,
                               size_t tracker_off, size_t growth_off, size_t backoff_off)
{
    inst a;
    if (inst_make(&a, vt, NULL) != 0)
        return;
    step(&a, 1);
    step(&a, 0);
    unsigned char good[256], bad[256];
    size_t len = save(&a, good, sizeof good);
    CHECK(len > 16 && len < sizeof good, "%s state size %zu", who, len);
    if (len <= 16 || len >= sizeof good) {
        inst_free(&a);
        return;
    }
    double before = scale_of(&a);

    typedef struct bad_case {
        const char *what;
        size_t len;
        size_t byte; /* byte to overwrite, or (size_t)-1 */
        unsigned char val;
        const void *src; /* 8 bytes to write at byte instead, or NULL */
    } bad_case;
    static const double nan_v = NAN;
    static const int64_t neg = -1;
    static const double one = 1.0, zero = 0.0, huge_scale = 1e300;
    const bad_case cases[] = {
        {"empty", 0, (size_t)-1, 0, NULL},
        {"one byte short", len - 1, (size_t)-1, 0, NULL},
        {"one byte long", len + 1, (size_t)-1, 0, NULL},
        {"bad magic", len, 0, 'x', NULL},
        {"bad version", len, 4, 99, NULL},
        {"NaN scale", len, scale_off, 0, &nan_v},
        {"negative tracker", len, tracker_off, 0, &neg},
        {"scale beyond float32", len, scale_off, 0, &huge_scale},
        {"growth_factor 1", len, growth_off, 0, &one},
        {"backoff_factor 1", len, backoff_off, 0, &one},
        {"backoff_factor 0", len, backoff_off, 0, &zero},
    };
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < nc; c++) {
        memcpy(bad, good, sizeof bad);
        if (cases[c].src) {
            /* the test host is little-endian like the record (x86/arm64) */
            memcpy(bad + cases[c].byte, cases[c].src, 8);
        } else if (cases[c].byte != (size_t)-1) {
            bad[cases[c].byte] = cases[c].val;
        }
        a.h.nerrors = 0;
        a.h.error[0] = '\0';
        int rc = vt->state_load(a.self, bad, cases[c].len);
        CHECK(rc != 0, "%s accepted a state with %s", who, cases[c].what);
        CHECK(a.h.nerrors > 0 && a.h.error[0], "%s: %s rejected without a message", who,
              cases[c].what);
        CHECK(scale_of(&a) == before, "%s: failed load (%s) changed the scale", who,
              cases[c].what);
    }
    a.h.nerrors = 0;
    CHECK(vt->state_load(a.self, NULL, len) != 0 && a.h.nerrors > 0, "%s accepted NULL", who);
    /* a state of the other scaler is refused */
    inst o;
    const amp_scaler_vtable *other = vt == vt_dyn ? vt_hys : vt_dyn;
    if (inst_make(&o, other, NULL) == 0) {
        size_t olen = save(&o, bad, sizeof bad);
        a.h.nerrors = 0;
        CHECK(vt->state_load(a.self, bad, olen) != 0 && a.h.nerrors > 0,
              "%s accepted the other scaler's state", who);
        inst_free(&o);
    }
    /* the failed loads left nothing half-written: the good state still loads */
    CHECK(vt->state_load(a.self, good, len) == 0, "%s reloading the good state: %s", who,
          a.h.error);
    inst_free(&a);
}

int main(void)
{
    const amp_plugin_info *e;
    if ((e = th_open_plugin("amp_scaler_none.so", AMP_PLUGIN_KIND_SCALER, "none")))
        vt_none = e->vtable;
    if ((e = th_open_plugin("amp_scaler_static.so", AMP_PLUGIN_KIND_SCALER, "static")))
        vt_static = e->vtable;
    if ((e = th_open_plugin("amp_scaler_dynamic.so", AMP_PLUGIN_KIND_SCALER, "dynamic")))
        vt_dyn = e->vtable;
    if ((e = th_open_plugin("amp_scaler_hysteresis.so", AMP_PLUGIN_KIND_SCALER, "hysteresis")))
        vt_hys = e->vtable;
    if (!vt_none || !vt_static || !vt_dyn || !vt_hys) {
        fprintf(stderr, "test_scalers: a scaler plugin failed to load\n");
        return 1;
    }
    const amp_scaler_vtable *all[] = {vt_none, vt_static, vt_dyn, vt_hys};
    for (int k = 0; k < 4; k++) {
        CHECK(all[k]->struct_size >= sizeof(amp_scaler_vtable), "vtable %d struct_size", k);
        CHECK(all[k]->init && all[k]->fini && all[k]->get_scale && all[k]->update,
              "vtable %d lacks a required function", k);
    }
    for (int k = 0; k < 4; k++)
        CHECK(all[k]->state_save && all[k]->state_load, "scaler %d lacks state_save/state_load",
              k);

    test_dynamic_defaults();
    test_dynamic_pytorch_update_scale();
    test_dynamic_scaling_case();
    test_dynamic_no_overflow();
    test_dynamic_float32_scale();
    test_dynamic_no_minimum();
    test_hysteresis_trajectory();
    test_hysteresis_defaults();
    test_hysteresis_bounds();
    test_hysteresis_float32_products();
    test_static_and_none();
    test_update_rejects_bad_stats();
    test_invalid_config();
    test_state_roundtrip();
    test_state_none_static();
    /* offsets of scale, growth_tracker, growth_factor, backoff_factor in the
     * records (see dynamic.c / hysteresis.c) */
    test_state_rejects(vt_dyn, "dynamic", 8, 16, 24, 32);
    test_state_rejects(vt_hys, "hysteresis", 8, 16, 32, 40);

    if (th_failures) {
        fprintf(stderr, "test_scalers: %d check(s) failed\n", th_failures);
        return 1;
    }
    printf("test_scalers: all checks passed\n");
    return 0;
}
