/* bench_step: CPU training-step time per precision policy against the
 * OpenBLAS FP32 "floor" of the same step's GEMMs. See bench/README.md.
 *
 * For an MLP <features>-<hidden...>-<classes> at a given batch (ReLU, SGD
 * with momentum, synthetic `tiny` data) it runs amp_session_step for each
 * policy (fp32, fp16 + dynamic scaler, bf16 + no scaler), discards the
 * warm-up steps and reports the median of the timed ones. The floor is the
 * median time of the step's GEMMs alone, issued to cblas_sgemm with the
 * exact shapes and transposes models/mlp.c uses:
 *   forward, every layer:     Y[B,out]  = X[B,in]   . W[out,in]^T
 *   dW, every layer:          dW[out,in] = dZ[B,out]^T . X[B,in]
 *   dX, every layer but fc1:  dX[B,in]  = dZ[B,out] . W[out,in]
 * GFLOP/s is those GEMMs' flops divided by the policy's step time.
 *
 * Exit status: 0 ok, 1 runtime failure, 2 usage error. */
#include <cblas.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "rng.h"
#include "session.h"

#define MAX_HIDDEN (AMP_MAX_LAYERS - 1)

typedef struct bench_opts {
    int steps, warmup, batch, features, classes;
    int hidden[MAX_HIDDEN];
    int nhidden;
    char hidden_text[256];
    int run_policy[8]; /* by index into policies[]; all when none was named */
} bench_opts;

typedef struct policy {
    const char *label;     /* as printed */
    const char *precision; /* [precision] plugin */
    const char *scaler;    /* [scaler] plugin */
} policy;

static const policy policies[] = {
    {"fp32", "fp32", "none"},
    {"fp16+dynamic", "fp16", "dynamic"},
    {"bf16+none", "bf16", "none"},
};
#define NPOLICIES ((int)(sizeof policies / sizeof policies[0]))

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench_step [--steps N] [--warmup N] [--batch N] [--hidden W,W,...]\n"
            "                  [--features N] [--classes N] [--policy NAME]...\n"
            "  --steps N      timed steps per policy and floor repetitions (default 30)\n"
            "  --warmup N     untimed steps first (default 5)\n"
            "  --batch N      rows per step (default 256)\n"
            "  --hidden LIST  hidden widths (default 1024,1024)\n"
            "  --features N   input width (default 784)\n"
            "  --classes N    output width (default 10)\n"
            "  --policy NAME  fp32, fp16 or bf16; repeat to pick several (default all)\n"
            "Threads: OpenBLAS reads OPENBLAS_NUM_THREADS. Plugins: beside the build tree, or\n"
            "AMPTRAIN_PLUGIN_PATH.\n");
}

static int parse_int(const char *opt, const char *text, int min, int max, int *out) {
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || end == text || *end != '\0' || errno == ERANGE || v < min || v > max) {
        fprintf(stderr, "bench_step: %s '%s': expected an integer in [%d, %d]\n", opt,
                text ? text : "(missing)", min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_hidden(bench_opts *o, const char *text) {
    o->nhidden = 0;
    const char *p = text ? text : "";
    while (*p) {
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno == ERANGE || v < 1 || v > (1L << 20) || o->nhidden >= MAX_HIDDEN ||
            (*end != ',' && *end != '\0')) {
            o->nhidden = 0;
            break;
        }
        o->hidden[o->nhidden++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    if (o->nhidden == 0) {
        fprintf(stderr,
                "bench_step: --hidden '%s': expected 1 to %d comma-separated widths (e.g. "
                "1024,1024)\n",
                text ? text : "(missing)", MAX_HIDDEN);
        return -1;
    }
    size_t len = 0;
    o->hidden_text[0] = '\0';
    for (int i = 0; i < o->nhidden; i++)
        len += (size_t)snprintf(o->hidden_text + len, sizeof o->hidden_text - len, "%s%d",
                                i ? "," : "", o->hidden[i]);
    return 0;
}

static int parse_args(bench_opts *o, int argc, char **argv) {
    o->steps = 30;
    o->warmup = 5;
    o->batch = 256;
    o->features = 784;
    o->classes = 10;
    memset(o->run_policy, 0, sizeof o->run_policy);
    if (parse_hidden(o, "1024,1024") != 0) return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--steps") == 0) {
            rc = parse_int(a, v, 1, 1000000, &o->steps);
        } else if (strcmp(a, "--warmup") == 0) {
            rc = parse_int(a, v, 0, 1000000, &o->warmup);
        } else if (strcmp(a, "--batch") == 0) {
            rc = parse_int(a, v, 1, 65536, &o->batch);
        } else if (strcmp(a, "--features") == 0) {
            rc = parse_int(a, v, 1, 1 << 16, &o->features);
        } else if (strcmp(a, "--classes") == 0) {
            rc = parse_int(a, v, 2, 1024, &o->classes);
        } else if (strcmp(a, "--hidden") == 0) {
            rc = parse_hidden(o, v);
        } else if (strcmp(a, "--policy") == 0) {
            rc = -1;
            for (int k = 0; k < NPOLICIES; k++)
                if (v && strcmp(v, policies[k].precision) == 0) {
                    o->run_policy[k] = 1;
                    rc = 0;
                }
            if (rc != 0) fprintf(stderr, "bench_step: --policy '%s': expected fp32, fp16 or bf16\n",
                                 v ? v : "(missing)");
        } else {
            fprintf(stderr, "bench_step: unknown option '%s'\n", a);
            usage(stderr);
            return -1;
        }
        if (rc != 0) return -1;
        i++;
    }
    int any = 0;
    for (int k = 0; k < NPOLICIES; k++) any |= o->run_policy[k];
    for (int k = 0; k < NPOLICIES && !any; k++) o->run_policy[k] = 1;
    return 0;
}

/* Layer l's widths: widths[l] -> widths[l + 1]. */
static int layer_widths(const bench_opts *o, int *widths) {
    widths[0] = o->features;
    for (int i = 0; i < o->nhidden; i++) widths[i + 1] = o->hidden[i];
    widths[o->nhidden + 1] = o->classes;
    return o->nhidden + 1;
}

/* Flops of the step's GEMMs: forward and dW for every layer, dX for all but
 * the first. */
static double step_gemm_flops(const bench_opts *o) {
    int w[AMP_MAX_LAYERS + 1];
    int nl = layer_widths(o, w);
    double flops = 0.0;
    for (int l = 0; l < nl; l++) {
        double mnk = 2.0 * o->batch * (double)w[l] * (double)w[l + 1];
        flops += (l == 0 ? 2.0 : 3.0) * mnk;
    }
    return flops;
}

/* ---- the floor: the step's GEMMs alone in OpenBLAS FP32 ----------------- */

typedef struct floor_bufs {
    int nl, w[AMP_MAX_LAYERS + 1];
    float *x[AMP_MAX_LAYERS];  /* [B, in]: layer input (activation) */
    float *wt[AMP_MAX_LAYERS]; /* [out, in] */
    float *y[AMP_MAX_LAYERS];  /* [B, out]: forward output, reused as dZ */
    float *dw[AMP_MAX_LAYERS]; /* [out, in] */
    float *dx[AMP_MAX_LAYERS]; /* [B, in] */
} floor_bufs;

static float *rand_buf(size_t n, amp_rng *rng) {
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, (n ? n : 1) * sizeof(float)) != 0) return NULL;
    for (size_t i = 0; i < n; i++) p[i] = (float)(2.0 * amp_rng_uniform(rng) - 1.0);
    return p;
}

static void floor_free(floor_bufs *f) {
    for (int l = 0; l < AMP_MAX_LAYERS; l++) {
        free(f->x[l]);
        free(f->wt[l]);
        free(f->y[l]);
        free(f->dw[l]);
        free(f->dx[l]);
    }
}

static int floor_alloc(floor_bufs *f, const bench_opts *o) {
    memset(f, 0, sizeof *f);
    f->nl = layer_widths(o, f->w);
    amp_rng rng;
    amp_rng_seed(&rng, 12345);
    size_t B = (size_t)o->batch;
    for (int l = 0; l < f->nl; l++) {
        size_t in = (size_t)f->w[l], out = (size_t)f->w[l + 1];
        f->x[l] = rand_buf(B * in, &rng);
        f->wt[l] = rand_buf(out * in, &rng);
        f->y[l] = rand_buf(B * out, &rng);
        f->dw[l] = rand_buf(out * in, &rng);
        f->dx[l] = rand_buf(B * in, &rng);
        if (!f->x[l] || !f->wt[l] || !f->y[l] || !f->dw[l] || !f->dx[l]) {
            floor_free(f);
            return -1;
        }
    }
    return 0;
}

/* One step's GEMMs in the order and form models/mlp.c issues them. */
static void floor_step(floor_bufs *f, int B) {
    for (int l = 0; l < f->nl; l++) {
        int in = f->w[l], out = f->w[l + 1];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, out, in, 1.0f, f->x[l], in,
                    f->wt[l], in, 0.0f, f->y[l], out);
    }
    for (int l = f->nl - 1; l >= 0; l--) {
        int in = f->w[l], out = f->w[l + 1];
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, B, 1.0f, f->y[l], out,
                    f->x[l], in, 0.0f, f->dw[l], in);
        if (l == 0) break;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, in, out, 1.0f, f->y[l], out,
                    f->wt[l], in, 0.0f, f->dx[l], in);
    }
}

static int measure_floor(const bench_opts *o, double *out_ms) {
    floor_bufs f;
    if (floor_alloc(&f, o) != 0) {
        fprintf(stderr, "bench_step: out of memory allocating the floor's matrices\n");
        return -1;
    }
    double *t = malloc((size_t)o->steps * sizeof *t);
    if (!t) {
        floor_free(&f);
        fprintf(stderr, "bench_step: out of memory\n");
        return -1;
    }
    for (int i = 0; i < o->warmup; i++) floor_step(&f, o->batch);
    for (int i = 0; i < o->steps; i++) {
        double t0 = now_ms();
        floor_step(&f, o->batch);
        t[i] = now_ms() - t0;
    }
    *out_ms = median(t, o->steps);
    free(t);
    floor_free(&f);
    return 0;
}

/* ---- one policy through the real training step -------------------------- */

/* cfg: section.key = value, as --set would give it. */
static int set_str(amp_config *cfg, const char *key, const char *value) {
    char buf[512], err[512];
    snprintf(buf, sizeof buf, "%s=%s", key, value);
    if (amp_config_set(cfg, buf, err, sizeof err) != 0) {
        fprintf(stderr, "bench_step: %s\n", err);
        return -1;
    }
    return 0;
}

static int set_int(amp_config *cfg, const char *key, long long value) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", value);
    return set_str(cfg, key, buf);
}

typedef struct policy_result {
    double median_ms;
    int64_t skipped;
} policy_result;

static int measure_policy(const bench_opts *o, const policy *p, policy_result *res) {
    amp_config *cfg = amp_config_new_empty("bench_step");
    if (!cfg) {
        fprintf(stderr, "bench_step: out of memory\n");
        return -1;
    }
    /* Enough examples that no timed step crosses more than a few epoch
     * boundaries (a boundary only reshuffles an index array). */
    long long train = (long long)o->batch * 4;
    char name[64];
    snprintf(name, sizeof name, "bench_%s", p->precision);
    int bad = set_str(cfg, "run.name", name) || set_str(cfg, "run.device", "cpu") ||
              set_str(cfg, "run.seed", "1") || set_str(cfg, "data.dataset", "tiny") ||
              set_int(cfg, "data.features", o->features) ||
              set_int(cfg, "data.classes", o->classes) || set_int(cfg, "data.train_size", train) ||
              set_int(cfg, "data.test_size", o->batch) ||
              set_int(cfg, "data.batch_size", o->batch) ||
              set_str(cfg, "model.hidden", o->hidden_text) ||
              set_str(cfg, "model.activation", "relu") || set_str(cfg, "optim.name", "sgd") ||
              set_str(cfg, "optim.lr", "0.01") || set_str(cfg, "optim.momentum", "0.9") ||
              set_str(cfg, "precision.plugin", p->precision) ||
              set_str(cfg, "scaler.plugin", p->scaler);
    if (bad) {
        amp_config_free(cfg);
        return -1;
    }
    char err[1024];
    amp_session *s = NULL;
    if (amp_session_open(&s, cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench_step: %s: %s\n", p->label, err);
        amp_config_free(cfg);
        return -1;
    }
    double *t = malloc((size_t)o->steps * sizeof *t);
    int rc = t ? 0 : -1;
    if (!t) snprintf(err, sizeof err, "out of memory");
    amp_step_record rec;
    for (int i = 0; rc == 0 && i < o->warmup; i++) rc = amp_session_step(s, &rec, err, sizeof err);
    int64_t skipped0 = s->skipped;
    for (int i = 0; rc == 0 && i < o->steps; i++) {
        double t0 = now_ms();
        rc = amp_session_step(s, &rec, err, sizeof err);
        t[i] = now_ms() - t0;
    }
    if (rc == 0) {
        res->median_ms = median(t, o->steps);
        res->skipped = s->skipped - skipped0;
    } else {
        fprintf(stderr, "bench_step: %s: %s\n", p->label, err);
    }
    free(t);
    amp_session_close(s);
    amp_config_free(cfg);
    return rc;
}

static void cpu_model(char *out, size_t len) {
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(out, len, "%s", v);
        out[strcspn(out, "\n")] = '\0';
        break;
    }
    fclose(f);
}

int main(int argc, char **argv) {
    bench_opts o;
    if (parse_args(&o, argc, argv) != 0) return 2;
    amp_log_set_level(AMP_LOG_WARN);

    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    const char *corename = openblas_get_corename();
    char shape[300];
    snprintf(shape, sizeof shape, "%s", o.hidden_text);
    for (char *c = shape; *c; c++)
        if (*c == ',') *c = '-';
    printf("bench_step: MLP %d-%s-%d, batch %d, ReLU, SGD momentum, tiny data; median of %d "
           "steps after %d warm-up\n",
           o.features, shape, o.classes, o.batch, o.steps, o.warmup);
    printf("cpu: %s; OpenBLAS %d thread(s), core %s\n", cpu, openblas_get_num_threads(),
           corename ? corename : "?");
    fflush(stdout);

    double flops = step_gemm_flops(&o);
    double floor_ms = 0.0;
    if (measure_floor(&o, &floor_ms) != 0) return 1;

    printf("step GEMMs: %.4g GFLOP; floor (those GEMMs alone, OpenBLAS FP32): %.3f ms = %.1f "
           "GFLOP/s\n\n",
           flops / 1e9, floor_ms, flops / (floor_ms * 1e6));
    printf("| %-13s | %15s | %9s | %10s | %8s |\n", "policy", "median step ms", "floor ms",
           "step/floor", "GFLOP/s");
    printf("|%s|%s|%s|%s|%s|\n", "---------------", "----------------:", "----------:",
           "-----------:", "---------:");
    fflush(stdout);
    int failed = 0;
    for (int i = 0; i < NPOLICIES; i++) {
        if (!o.run_policy[i]) continue;
        policy_result r;
        if (measure_policy(&o, &policies[i], &r) != 0) {
            failed = 1;
            continue;
        }
        printf("| %-13s | %15.3f | %9.3f | %10.2f | %8.1f |", policies[i].label, r.median_ms,
               floor_ms, r.median_ms / floor_ms, flops / (r.median_ms * 1e6));
        if (r.skipped) printf(" %lld of the timed steps skipped (overflow)", (long long)r.skipped);
        printf("\n");
        fflush(stdout);
    }
    return failed;
}
