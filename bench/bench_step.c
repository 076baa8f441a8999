/* bench_step: training-step time per precision policy against the FP32
 * "floor" of the same step's GEMMs, on the CPU (OpenBLAS) or with
 * --device cuda (cuBLAS). See bench/README.md.
 *
 * For an MLP <features>-<hidden...>-<classes> at a given batch (ReLU, SGD
 * with momentum, synthetic `tiny` data) it runs amp_session_step for each
 * policy (fp32, fp16 + dynamic scaler, bf16 + no scaler), discards the
 * warm-up steps and reports the median of the timed ones. The floor is the
 * median time of the step's GEMMs alone, issued to the backend's FP32 GEMM
 * (cblas_sgemm on the CPU, cublasGemmEx on CUDA) with the exact shapes and transposes models/mlp.c uses:
 *   forward, every layer:     Y[B,out]  = X[B,in]   . W[out,in]^T
 *   dW, every layer:          dW[out,in] = dZ[B,out]^T . X[B,in]
 *   dX, every layer but fc1:  dX[B,in]  = dZ[B,out] . W[out,in]
 * GFLOP/s is those GEMMs' flops divided by the policy's step time. It also
 * times the step's one device->host sync (the stats record download) and
 * reports each policy's exact arena bytes and, on CUDA, cudaMemGetInfo use.
 *
 * Exit status: 0 ok, 1 runtime failure, 2 usage error. */
#include <cblas.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/config.h"
#include "log.h"
#include "rng.h"
#include "session.h"

/* The MLP this benchmark builds: at most 15 hidden layers. */
#define BENCH_MAX_LAYERS 16
#define MAX_HIDDEN (BENCH_MAX_LAYERS - 1)

typedef struct bench_opts {
    int steps, warmup, batch, features, classes;
    int hidden[MAX_HIDDEN];
    int nhidden;
    char hidden_text[256];
    int run_policy[8]; /* by index into policies[]; all when none was named */
    const char *device; /* cpu or cuda */
    int no_floor;       /* skip the floor (the policies' rows only) */
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
    {"tf32", "fp32", "none"}, /* fp32 with precision.tf32 = 1: CUDA only */
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
            "                  [--features N] [--classes N] [--policy NAME]... [--device cpu|cuda]\n"
            "  --steps N      timed steps per policy and floor repetitions (default 30)\n"
            "  --warmup N     untimed steps first (default 5)\n"
            "  --batch N      rows per step (default 256)\n"
            "  --hidden LIST  hidden widths (default 1024,1024)\n"
            "  --features N   input width (default 784)\n"
            "  --classes N    output width (default 10)\n"
            "  --policy NAME  fp32, fp16, bf16 or tf32; repeat to pick several (default all;\n"
            "                 tf32 only with --device cuda)\n"
            "  --device D     cpu (default) or cuda\n"
            "  --no-floor     skip the GEMM floor (for repeated, interleaved runs)\n"
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
    o->device = "cpu";
    o->no_floor = 0;
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
        } else if (strcmp(a, "--no-floor") == 0) {
            o->no_floor = 1;
            continue; /* takes no value */
        } else if (strcmp(a, "--device") == 0) {
            rc = v && (strcmp(v, "cpu") == 0 || strcmp(v, "cuda") == 0) ? 0 : -1;
            if (rc == 0)
                o->device = v;
            else
                fprintf(stderr, "bench_step: --device '%s': expected cpu or cuda\n",
                        v ? v : "(missing)");
        } else if (strcmp(a, "--policy") == 0) {
            rc = -1;
            for (int k = 0; k < NPOLICIES; k++)
                if (v && strcmp(v, policies[k].label) == 0 ? 1 : v && k < 3 && strcmp(v, policies[k].precision) == 0) {
                    o->run_policy[k] = 1;
                    rc = 0;
                }
            if (rc != 0) fprintf(stderr, "bench_step: --policy '%s': expected fp32, fp16, bf16 or tf32\n",
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
    /* tf32 only means something on the GPU */
    for (int k = 0; k < NPOLICIES && !any; k++) o->run_policy[k] = k < 3 || strcmp(o->device, "cuda") == 0;
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
    int w[BENCH_MAX_LAYERS + 1];
    int nl = layer_widths(o, w);
    double flops = 0.0;
    for (int l = 0; l < nl; l++) {
        double mnk = 2.0 * o->batch * (double)w[l] * (double)w[l + 1];
        flops += (l == 0 ? 2.0 : 3.0) * mnk;
    }
    return flops;
}

/* ---- the floor: the step's GEMMs alone, FP32, through the backend -------- */
/* On the CPU the backend's FP32 GEMM is cblas_sgemm itself; on CUDA it is
 * cublasGemmEx with FP32 compute, so the floor is each device's own. */

typedef struct floor_bufs {
    amp_backend *be;
    int nl, w[BENCH_MAX_LAYERS + 1];
    float *x[BENCH_MAX_LAYERS];  /* [B, in]: layer input (activation) */
    float *wt[BENCH_MAX_LAYERS]; /* [out, in] */
    float *y[BENCH_MAX_LAYERS];  /* [B, out]: forward output, reused as dZ */
    float *dw[BENCH_MAX_LAYERS]; /* [out, in] */
    float *dx[BENCH_MAX_LAYERS]; /* [B, in] */
} floor_bufs;

/* Backend buffer of n random floats in [-1, 1). */
static float *rand_buf(amp_backend *be, size_t n, amp_rng *rng) {
    float *host = malloc((n ? n : 1) * sizeof(float));
    float *dev = be->ops->alloc(be, (n ? n : 1) * sizeof(float));
    if (host && dev) {
        for (size_t i = 0; i < n; i++) host[i] = (float)(2.0 * amp_rng_uniform(rng) - 1.0);
        if (be->ops->upload(be, dev, host, n * sizeof(float)) != 0) {
            be->ops->release(be, dev);
            dev = NULL;
        }
    }
    free(host);
    return dev;
}

static void floor_free(floor_bufs *f) {
    float **all[] = {f->x, f->wt, f->y, f->dw, f->dx};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        for (int l = 0; l < BENCH_MAX_LAYERS; l++)
            if (all[k][l]) f->be->ops->release(f->be, all[k][l]);
}

static int floor_alloc(floor_bufs *f, amp_backend *be, const bench_opts *o) {
    memset(f, 0, sizeof *f);
    f->be = be;
    f->nl = layer_widths(o, f->w);
    amp_rng rng;
    amp_rng_seed(&rng, 12345);
    size_t B = (size_t)o->batch;
    for (int l = 0; l < f->nl; l++) {
        size_t in = (size_t)f->w[l], out = (size_t)f->w[l + 1];
        f->x[l] = rand_buf(be, B * in, &rng);
        f->wt[l] = rand_buf(be, out * in, &rng);
        f->y[l] = rand_buf(be, B * out, &rng);
        f->dw[l] = rand_buf(be, out * in, &rng);
        f->dx[l] = rand_buf(be, B * in, &rng);
        if (!f->x[l] || !f->wt[l] || !f->y[l] || !f->dw[l] || !f->dx[l]) {
            floor_free(f);
            return -1;
        }
    }
    return 0;
}

/* One step's GEMMs in the order and form models/mlp.c issues them; the
 * final 4-byte download waits for the device. */
static int floor_step(floor_bufs *f, int B) {
    amp_backend *be = f->be;
    int rc = 0;
    for (int l = 0; l < f->nl; l++) {
        int in = f->w[l], out = f->w[l + 1];
        rc |= be->ops->gemm(be, f->y[l], f->x[l], f->wt[l], AMP_DTYPE_F32, 0, 1, B, out, in, in,
                            in, out, 1.0f, 0.0f);
    }
    for (int l = f->nl - 1; l >= 0; l--) {
        int in = f->w[l], out = f->w[l + 1];
        rc |= be->ops->gemm(be, f->dw[l], f->y[l], f->x[l], AMP_DTYPE_F32, 1, 0, out, in, B, out,
                            in, in, 1.0f, 0.0f);
        if (l == 0) break;
        rc |= be->ops->gemm(be, f->dx[l], f->y[l], f->wt[l], AMP_DTYPE_F32, 0, 0, B, in, out, out,
                            in, in, 1.0f, 0.0f);
    }
    float sink;
    rc |= be->ops->download(be, &sink, f->dw[0], sizeof sink);
    return rc;
}

static amp_backend *open_backend(const char *device) {
    char err[512];
    amp_backend *be = strcmp(device, "cuda") == 0 ? amp_backend_cuda_create(err, sizeof err)
                                                  : amp_backend_cpu_create(err, sizeof err);
    if (!be) fprintf(stderr, "bench_step: %s\n", err);
    return be;
}

/* The floor's GEMMs again with BF16 inputs (same shapes): what the
 * backend's 16-bit GEMM costs, native or widened. */
static int floor_step_bf16(floor_bufs *f, int B, uint16_t *const *h) {
    amp_backend *be = f->be;
    int rc = 0;
    for (int l = 0; l < f->nl; l++) {
        int in = f->w[l], out = f->w[l + 1];
        rc |= be->ops->gemm(be, f->y[l], h[0], h[1], AMP_DTYPE_BF16, 0, 1, B, out, in, in, in, out,
                            1.0f, 0.0f);
    }
    for (int l = f->nl - 1; l >= 0; l--) {
        int in = f->w[l], out = f->w[l + 1];
        rc |= be->ops->gemm(be, f->dw[l], h[2], h[0], AMP_DTYPE_BF16, 1, 0, out, in, B, out, in,
                            in, 1.0f, 0.0f);
        if (l == 0) break;
        rc |= be->ops->gemm(be, f->dx[l], h[2], h[1], AMP_DTYPE_BF16, 0, 0, B, in, out, out, in,
                            in, 1.0f, 0.0f);
    }
    float sink;
    rc |= be->ops->download(be, &sink, f->dw[0], sizeof sink);
    return rc;
}

/* Median of the floor, and of one bare stats-record download (the one
 * device->host sync a training step makes); the BF16 floor into *bf16_ms
 * (CPU only, else 0); the backend's info into *info. */
static int measure_floor(const bench_opts *o, double *out_ms, double *sync_ms, double *bf16_ms,
                         amp_backend_info *info) {
    amp_backend *be = open_backend(o->device);
    if (!be) return -1;
    floor_bufs f;
    if (floor_alloc(&f, be, o) != 0) {
        fprintf(stderr, "bench_step: allocating the floor's matrices: %s\n", be->err);
        be->ops->destroy(be);
        return -1;
    }
    double *t = malloc((size_t)o->steps * sizeof *t);
    amp_step_stats host_stats;
    int rc = t ? 0 : -1;
    for (int i = 0; rc == 0 && i < o->warmup; i++) rc = floor_step(&f, o->batch);
    for (int i = 0; rc == 0 && i < o->steps; i++) {
        double t0 = now_ms();
        rc = floor_step(&f, o->batch);
        t[i] = now_ms() - t0;
    }
    if (rc == 0) *out_ms = median(t, o->steps);
    void *stats_dev = rc == 0 ? be->ops->alloc(be, sizeof host_stats) : NULL;
    rc = stats_dev && be->ops->zero(be, stats_dev, sizeof host_stats) == 0 ? rc : -1;
    for (int i = 0; rc == 0 && i < o->steps; i++) {
        double t0 = now_ms();
        rc = be->ops->download(be, &host_stats, stats_dev, sizeof host_stats);
        t[i] = now_ms() - t0;
    }
    if (stats_dev) be->ops->release(be, stats_dev);
    if (rc == 0) *sync_ms = median(t, o->steps);
    *bf16_ms = 0.0;
    if (rc == 0 && be->device == AMP_DEVICE_CPU) {
        /* BF16 operands: the widest matrix each of A, B and dZ could be */
        size_t big = 0;
        for (int l = 0; l <= f.nl; l++)
            if ((size_t)f.w[l] > big) big = (size_t)f.w[l];
        size_t n = big * (big > (size_t)o->batch ? big : (size_t)o->batch);
        uint16_t *h[3];
        for (int i = 0; i < 3; i++) {
            h[i] = malloc(n * sizeof(uint16_t));
            for (size_t j = 0; h[i] && j < n; j++) h[i][j] = (uint16_t)(0x3c00u + (j * 7u + (unsigned)i) % 1024u);
            if (!h[i]) rc = -1;
        }
        for (int i = 0; rc == 0 && i < o->warmup; i++) rc = floor_step_bf16(&f, o->batch, h);
        for (int i = 0; rc == 0 && i < o->steps; i++) {
            double t0 = now_ms();
            rc = floor_step_bf16(&f, o->batch, h);
            t[i] = now_ms() - t0;
        }
        if (rc == 0) *bf16_ms = median(t, o->steps);
        for (int i = 0; i < 3; i++) free(h[i]);
    }
    *info = be->info;
    if (rc != 0) fprintf(stderr, "bench_step: floor: %s\n", be->err);
    free(t);
    floor_free(&f);
    be->ops->destroy(be);
    return rc;
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
    amp_backend_info info; /* what ran: ISA path, threads, GEMM kernels */
    double median_ms;
    int64_t skipped;
    size_t arena_bytes;  /* all memory categories together (exact) */
    size_t act_bytes;    /* the activations category alone */
    size_t device_bytes; /* cudaMemGetInfo use on the GPU, 0 on the CPU */
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
    int bad = set_str(cfg, "run.name", name) || set_str(cfg, "run.device", o->device) ||
              set_str(cfg, "run.seed", "1") || set_str(cfg, "data.dataset", "tiny") ||
              set_int(cfg, "data.features", o->features) ||
              set_int(cfg, "data.classes", o->classes) || set_int(cfg, "data.train_size", train) ||
              set_int(cfg, "data.test_size", o->batch) ||
              set_int(cfg, "data.batch_size", o->batch) ||
              set_str(cfg, "model.hidden", o->hidden_text) ||
              set_str(cfg, "model.activation", "relu") || set_str(cfg, "optim.name", "sgd") ||
              set_str(cfg, "optim.lr", "0.01") || set_str(cfg, "optim.momentum", "0.9") ||
              set_str(cfg, "precision.plugin", p->precision) ||
              set_str(cfg, "scaler.plugin", p->scaler) ||
              (strcmp(p->label, "tf32") == 0 && set_str(cfg, "precision.tf32", "1"));
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
        res->arena_bytes = 0;
        for (int c = 0; c < AMP_MEM_COUNT; c++) res->arena_bytes += s->model->mem[c].size;
        res->act_bytes = s->model->mem[AMP_MEM_ACTIVATIONS].size;
        res->device_bytes = s->be->ops->device_bytes_used(s->be);
        res->info = s->be->info;
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
    double floor_ms = 0.0, sync_ms = 0.0, bf16_ms = 0.0;
    amp_backend_info info;
    memset(&info, 0, sizeof info);
    if (!o.no_floor && measure_floor(&o, &floor_ms, &sync_ms, &bf16_ms, &info) != 0) return 1;

    if (info.isa[0])
        printf("amptrain path: isa %s, %d thread(s); FP32 GEMM %s; BF16 GEMM %s\n", info.isa,
               info.threads, info.gemm[AMP_DTYPE_F32][0] ? info.gemm[AMP_DTYPE_F32] : "-",
               info.gemm[AMP_DTYPE_BF16][0] ? info.gemm[AMP_DTYPE_BF16] : "-");
    if (o.no_floor)
        printf("device: %s; step GEMMs: %.4g GFLOP; floor not measured (--no-floor)\n", o.device,
               flops / 1e9);
    else
        printf("device: %s; step GEMMs: %.4g GFLOP; floor (those GEMMs alone, FP32): %.3f ms = "
               "%.1f GFLOP/s\n",
               o.device, flops / 1e9, floor_ms, flops / (floor_ms * 1e6));
    if (bf16_ms > 0.0)
        printf("the same GEMMs with BF16 inputs: %.3f ms = %.1f GFLOP/s (%.2fx the FP32 floor)\n",
               bf16_ms, flops / (bf16_ms * 1e6), bf16_ms / floor_ms);
    if (!o.no_floor) printf("the step's one sync (stats record download): %.4f ms median\n", sync_ms);
    printf("\n");
    printf("| %-13s | %15s | %9s | %10s | %8s | %12s | %12s |\n", "policy", "median step ms",
           "floor ms", "step/floor", "GFLOP/s", "arena MiB", "device MiB");
    printf("|%s|%s|%s|%s|%s|%s|%s|\n", "---------------", "----------------:", "----------:",
           "-----------:", "---------:", "-------------:", "-------------:");
    fflush(stdout);
    int failed = 0, ran[NPOLICIES] = {0};
    policy_result results[NPOLICIES];
    for (int i = 0; i < NPOLICIES; i++) {
        if (!o.run_policy[i]) continue;
        policy_result r;
        if (measure_policy(&o, &policies[i], &r) != 0) {
            failed = 1;
            continue;
        }
        if (o.no_floor)
            printf("| %-13s | %15.3f | %9s | %10s | %8.1f | %12.2f | %12.2f |", policies[i].label,
                   r.median_ms, "-", "-", flops / (r.median_ms * 1e6),
                   (double)r.arena_bytes / 1048576.0, (double)r.device_bytes / 1048576.0);
        else
            printf("| %-13s | %15.3f | %9.3f | %10.2f | %8.1f | %12.2f | %12.2f |", policies[i].label,
                   r.median_ms, floor_ms, r.median_ms / floor_ms, flops / (r.median_ms * 1e6),
                   (double)r.arena_bytes / 1048576.0, (double)r.device_bytes / 1048576.0);
        if (r.skipped) printf(" %lld of the timed steps skipped (overflow)", (long long)r.skipped);
        printf("\n");
        fflush(stdout);
        results[i] = r;
        ran[i] = 1;
    }
    /* what ran, per policy: the GEMM kernel of each input dtype the step used */
    for (int i = 0; i < NPOLICIES; i++) {
        if (!ran[i] || !results[i].info.isa[0]) continue;
        printf("%s kernels: isa %s, %d thread(s)", policies[i].label, results[i].info.isa,
               results[i].info.threads);
        static const char *const dn[AMP_DTYPE_COUNT] = {"f32", "f16", "bf16"};
        for (int d = 0; d < AMP_DTYPE_COUNT; d++)
            if (results[i].info.gemm[d][0]) printf("; %s GEMM %s", dn[d], results[i].info.gemm[d]);
        if (results[i].info.scratch_bytes)
            printf("; backend scratch %.2f MiB", (double)results[i].info.scratch_bytes / 1048576.0);
        printf("\n");
    }
    /* issue 13's memory target: 16-bit activations against FP32's */
    if (ran[0]) {
        printf("activations:");
        for (int i = 0; i < NPOLICIES; i++)
            if (ran[i])
                printf("%s %s %.2f MiB (%.3fx fp32)", i ? ";" : "", policies[i].label,
                       (double)results[i].act_bytes / 1048576.0,
                       (double)results[i].act_bytes / (double)results[0].act_bytes);
        printf("\n");
    }
    return failed;
}
