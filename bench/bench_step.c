/* bench_step: training-step time per precision policy against the FP32
 * "floor" of the same step's GEMMs, on the CPU (OpenBLAS) or with
 * --device cuda (cuBLAS). See bench/README.md.
 *
 * --model mlp (default) or --model gpt: the GPT of configs/gpt_shakespeare_*
 * (nanoGPT's shakespeare_char: 4 layers, 4 heads, 128 wide, block 64, batch
 * 12, AdamW, the shipped character corpus); its floor is the step's Linear
 * GEMMs (forward, dW, dX; the tied LM head too) and the attention's batched
 * GEMMs (QK^T, PV; dP, dV, dQ, dK) over [B * n_head] matrices.
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
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/config.h"
#include "util/log.h"
#include "util/rng.h"
#include "train/session.h"
#include "train/trainer.h"
#include "data/text.h"
#include "util/clock.h"
#include "process/startup.h"
#include "gemm_paths.h"

/* The MLP this benchmark builds: at most 15 hidden layers. */
#define BENCH_MAX_LAYERS 16
#define MAX_HIDDEN (BENCH_MAX_LAYERS - 1)

typedef struct bench_opts {
    int gpt; /* --model gpt */
    int n_layer, n_head, n_embd, block_size; /* the GPT's shape */
    const char *activation;                  /* the GPT's [model] activation */
    int steps, warmup, batch, features, classes;
    int hidden[MAX_HIDDEN];
    int nhidden;
    char hidden_text[256];
    int run_policy[16]; /* by index into policies[]; all when none was named */
    int rounds;         /* interleaved rounds of every policy (medians over them) */
    const char *device; /* cpu or cuda */
    int no_floor;       /* skip the floor (the policies' rows only) */
} bench_opts;

typedef struct policy {
    const char *label;     /* as printed */
    const char *precision; /* [precision] plugin */
    const char *scaler;    /* [scaler] plugin */
    const char *format;    /* fp8 / mxfp8: [precision] format; NULL otherwise */
    const char *recipe;    /* fp8: [precision] recipe; NULL otherwise */
} policy;

/* The fp8 rows are configs/gpt_shakespeare_fp8{,_current}.ini and _mxfp8.ini
 * (the GPT's lm_head kept in bf16, as there); nvfp4 is _nvfp4.ini (2d
 * weights, the Hadamard transform, stochastic rounding; lm_head and, with
 * more than one, the last block in bf16). */
static const policy policies[] = {
    {"fp32", "fp32", "none", NULL, NULL},
    {"fp16+dynamic", "fp16", "dynamic", NULL, NULL},
    {"bf16+none", "bf16", "none", NULL, NULL},
    {"tf32", "fp32", "none", NULL, NULL}, /* fp32 with precision.tf32 = 1: CUDA only */
    {"fp8", "fp8", "none", "hybrid", "delayed"},
    {"fp8_current", "fp8", "none", "hybrid", "current"},
    {"mxfp8", "mxfp8", "none", "e4m3", NULL},
    {"nvfp4", "nvfp4", "none", NULL, NULL}, /* configs/gpt_shakespeare_nvfp4.ini's recipe */
};
#define BF16_ROW 2
#define TF32_ROW 3
#define NPOLICIES ((int)(sizeof policies / sizeof policies[0]))

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
            "usage: bench_step [--model mlp|gpt] [--steps N] [--warmup N] [--batch N]\n"
            "                  [--hidden W,W,...] [--features N] [--classes N]\n"
            "                  [--n-layer N] [--n-head N] [--n-embd N] [--block-size N]\n"
            "                  [--activation gelu|gelu_tanh]\n"
            "                  [--policy NAME]... [--device cpu|cuda] [--no-floor] [--rounds N]\n"
            "  --model M      mlp (default) or gpt (nanoGPT shakespeare_char, shipped corpus)\n"
            "  --steps N      timed steps per policy and floor repetitions (default 30)\n"
            "  --warmup N     untimed steps first (default 5)\n"
            "  --batch N      rows per step (default 256; gpt: 12 windows)\n"
            "  --hidden LIST  mlp: hidden widths (default 1024,1024)\n"
            "  --features N   mlp: input width (default 784)\n"
            "  --classes N    mlp: output width (default 10)\n"
            "  --n-layer N, --n-head N, --n-embd N, --block-size N\n"
            "                 gpt: the shape (default 4, 4, 128, 64)\n"
            "  --activation A gpt: [model] activation (default gelu)\n"
            "  --policy NAME  fp32, fp16, bf16, tf32, fp8 (delayed scaling), fp8_current,\n"
            "                 mxfp8 or nvfp4; repeat to pick several (default all; tf32 only with\n"
            "                 --device cuda)\n"
            "  --rounds N     run the policies N times, interleaved (the order rotating per\n"
            "                 round); the table gives medians over the rounds and, beside\n"
            "                 bf16, each policy's step over bf16's paired by round (default 1)\n"
            "  --device D     cpu (default) or cuda\n"
            "  --no-floor     skip the GEMM floor (for repeated, interleaved runs)\n"
            "Threads: AMPTRAIN_THREADS (CPU backend). Plugins: beside the build tree, or\n"
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
    o->gpt = 0;
    o->n_layer = 4;
    o->n_head = 4;
    o->n_embd = 128;
    o->block_size = 64;
    o->activation = "gelu";
    o->steps = 30;
    o->warmup = 5;
    o->batch = 0; /* the model's default */
    o->features = 784;
    o->classes = 10;
    o->device = "cpu";
    o->no_floor = 0;
    o->rounds = 1;
    memset(o->run_policy, 0, sizeof o->run_policy);
    if (parse_hidden(o, "1024,1024") != 0) return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--model") == 0) {
            rc = v && (strcmp(v, "mlp") == 0 || strcmp(v, "gpt") == 0) ? 0 : -1;
            if (rc == 0)
                o->gpt = strcmp(v, "gpt") == 0;
            else
                fprintf(stderr, "bench_step: --model '%s': expected mlp or gpt\n",
                        v ? v : "(missing)");
        } else if (strcmp(a, "--n-layer") == 0) {
            rc = parse_int(a, v, 1, 1024, &o->n_layer);
        } else if (strcmp(a, "--n-head") == 0) {
            rc = parse_int(a, v, 1, 1024, &o->n_head);
        } else if (strcmp(a, "--n-embd") == 0) {
            rc = parse_int(a, v, 1, 1 << 16, &o->n_embd);
        } else if (strcmp(a, "--block-size") == 0) {
            rc = parse_int(a, v, 2, 1 << 16, &o->block_size);
        } else if (strcmp(a, "--activation") == 0) {
            rc = v && (strcmp(v, "gelu") == 0 || strcmp(v, "gelu_tanh") == 0) ? 0 : -1;
            if (rc == 0)
                o->activation = v;
            else
                fprintf(stderr, "bench_step: --activation '%s': expected gelu or gelu_tanh\n",
                        v ? v : "(missing)");
        } else if (strcmp(a, "--steps") == 0) {
            rc = parse_int(a, v, 1, 1000000, &o->steps);
        } else if (strcmp(a, "--rounds") == 0) {
            rc = parse_int(a, v, 1, 1000, &o->rounds);
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
            if (rc != 0)
                fprintf(stderr, "bench_step: --policy '%s': expected fp32, fp16, bf16, tf32, fp8, "
                        "fp8_current, mxfp8 or nvfp4\n", v ? v : "(missing)");
        } else {
            fprintf(stderr, "bench_step: unknown option '%s'\n", a);
            usage(stderr);
            return -1;
        }
        if (rc != 0) return -1;
        i++;
    }
    if (o->batch == 0) o->batch = o->gpt ? 12 : 256;
    if (o->gpt && o->n_embd % o->n_head != 0) {
        fprintf(stderr, "bench_step: --n-embd %d does not split into --n-head %d heads\n",
                o->n_embd, o->n_head);
        return -1;
    }
    int any = 0;
    for (int k = 0; k < NPOLICIES; k++) any |= o->run_policy[k];
    /* tf32 only means something on the GPU */
    for (int k = 0; k < NPOLICIES && !any; k++)
        o->run_policy[k] = k != TF32_ROW || strcmp(o->device, "cuda") == 0;
    return 0;
}

/* ---- the floor: the step's GEMMs alone, FP32, through the backend -------- */
/* On the CPU the backend's FP32 GEMM is oneDNN's or cblas_sgemm; on CUDA it
 * is cublasGemmEx with FP32 compute, so the floor is each device's own. The
 * plan lists the step's GEMMs in the order the model issues them, each on
 * its own buffers (the model's tensors: inputs, weights, outputs and their
 * gradients), dense row-major; a batched GEMM is one gemm_ex call over
 * `batch` matrices at dense strides. */

#define MAX_FLOOR_GEMMS 2048
#define MAX_FLOOR_BUFS 4096

typedef struct floor_gemm {
    int ta, tb, m, n, k, batch;
    int a, b, c; /* buffer ids */
} floor_gemm;

typedef struct floor_plan {
    floor_gemm g[MAX_FLOOR_GEMMS];
    int ng;
    size_t len[MAX_FLOOR_BUFS]; /* floats */
    int nbuf;
    int fail; /* the shape needs more GEMMs or buffers than the plan holds */
    double flops;
} floor_plan;

static int plan_buf(floor_plan *p, size_t n) {
    if (p->nbuf >= MAX_FLOOR_BUFS) {
        p->fail = 1;
        return 0;
    }
    p->len[p->nbuf] = n;
    return p->nbuf++;
}

static void plan_gemm(floor_plan *p, int ta, int tb, int m, int n, int k, int batch, int a, int b,
                      int c) {
    if (p->ng >= MAX_FLOOR_GEMMS) {
        p->fail = 1;
        return;
    }
    p->g[p->ng++] = (floor_gemm){ta, tb, m, n, k, batch, a, b, c};
    p->flops += 2.0 * m * (double)n * (double)k * batch;
}

/* A Linear's tensors, [rows, in] -> [rows, out]. */
typedef struct plan_linear {
    int rows, in, out;
    int x, w, y, dw, dx;
} plan_linear;

static plan_linear plan_linear_make(floor_plan *p, int rows, int in, int out) {
    plan_linear L = {rows, in, out, 0, 0, 0, 0, 0};
    L.x = plan_buf(p, (size_t)rows * in);
    L.w = plan_buf(p, (size_t)out * in);
    L.y = plan_buf(p, (size_t)rows * out);
    L.dw = plan_buf(p, (size_t)out * in);
    L.dx = plan_buf(p, (size_t)rows * in);
    return L;
}

/* forward Y[rows, out] = X W^T */
static void plan_linear_fwd(floor_plan *p, const plan_linear *L) {
    plan_gemm(p, 0, 1, L->rows, L->out, L->in, 1, L->x, L->w, L->y);
}

/* dW[out, in] = dY^T X and, with_dx, dX[rows, in] = dY W (dY reuses Y) */
static void plan_linear_bwd(floor_plan *p, const plan_linear *L, int with_dx) {
    plan_gemm(p, 1, 0, L->out, L->in, L->rows, 1, L->y, L->x, L->dw);
    if (with_dx) plan_gemm(p, 0, 0, L->rows, L->in, L->out, 1, L->y, L->w, L->dx);
}

/* The MLP's GEMMs as models/mlp.c issues them: forward and dW for every
 * layer, dX for all but the first. */
static void plan_mlp(floor_plan *p, const bench_opts *o) {
    int w[BENCH_MAX_LAYERS + 1], nl = o->nhidden + 1;
    plan_linear L[BENCH_MAX_LAYERS];
    w[0] = o->features;
    for (int i = 0; i < o->nhidden; i++) w[i + 1] = o->hidden[i];
    w[nl] = o->classes;
    for (int l = 0; l < nl; l++) L[l] = plan_linear_make(p, o->batch, w[l], w[l + 1]);
    for (int l = 0; l < nl; l++) plan_linear_fwd(p, &L[l]);
    for (int l = nl - 1; l >= 0; l--) plan_linear_bwd(p, &L[l], l > 0);
}

/* The GPT's GEMMs as models/gpt.c and the attention ops issue them: per
 * block c_attn, attention (QK^T, PV over B * n_head matrices), c_proj,
 * c_fc, mlp.c_proj; then the LM head; the backward in reverse with the
 * attention's dP = dY V^T, dV = P^T dY, dQ = dS K, dK = dS^T Q. */
static void plan_gpt(floor_plan *p, const bench_opts *o) {
    int N = o->batch * o->block_size, C = o->n_embd, T = o->block_size;
    int hs = C / o->n_head, bh = o->batch * o->n_head;
    typedef struct plan_block {
        plan_linear lin[4]; /* c_attn, c_proj, c_fc, mlp.c_proj */
        int att[5];         /* q, k, v, s (the [T, T] scores), o */
    } plan_block;
    plan_block *blk = calloc((size_t)o->n_layer, sizeof *blk);
    if (!blk) {
        p->fail = 1;
        return;
    }
    for (int l = 0; l < o->n_layer; l++) {
        plan_block *k = &blk[l];
        k->lin[0] = plan_linear_make(p, N, C, 3 * C);
        k->lin[1] = plan_linear_make(p, N, C, C);
        k->lin[2] = plan_linear_make(p, N, C, 4 * C);
        k->lin[3] = plan_linear_make(p, N, 4 * C, C);
        for (int j = 0; j < 5; j++) k->att[j] = plan_buf(p, (size_t)bh * T * (j == 3 ? T : hs));
    }
    plan_linear head = plan_linear_make(p, N, C, o->classes);
    for (int l = 0; l < o->n_layer; l++) {
        const int *A = blk[l].att;
        plan_linear_fwd(p, &blk[l].lin[0]);
        plan_gemm(p, 0, 1, T, T, hs, bh, A[0], A[1], A[3]); /* S = Q K^T */
        plan_gemm(p, 0, 0, T, hs, T, bh, A[3], A[2], A[4]); /* Y = P V */
        for (int j = 1; j < 4; j++) plan_linear_fwd(p, &blk[l].lin[j]);
    }
    plan_linear_fwd(p, &head);
    plan_linear_bwd(p, &head, 1);
    for (int l = o->n_layer - 1; l >= 0; l--) {
        const int *A = blk[l].att;
        for (int j = 3; j >= 1; j--) plan_linear_bwd(p, &blk[l].lin[j], 1);
        plan_gemm(p, 0, 1, T, T, hs, bh, A[4], A[2], A[3]); /* dP = dY V^T */
        plan_gemm(p, 1, 0, T, hs, T, bh, A[3], A[4], A[2]); /* dV = P^T dY */
        plan_gemm(p, 0, 0, T, hs, T, bh, A[3], A[1], A[0]); /* dQ = dS K */
        plan_gemm(p, 1, 0, T, hs, T, bh, A[3], A[0], A[1]); /* dK = dS^T Q */
        plan_linear_bwd(p, &blk[l].lin[0], 1);
    }
    free(blk);
}

static int make_plan(floor_plan *p, const bench_opts *o) {
    memset(p, 0, sizeof *p);
    if (o->gpt) plan_gpt(p, o);
    else plan_mlp(p, o);
    if (p->fail) fprintf(stderr, "bench_step: the shape has more GEMMs than the floor's plan holds\n");
    return p->fail ? -1 : 0;
}

typedef struct floor_bufs {
    amp_backend *be;
    const floor_plan *p;
    float *buf[MAX_FLOOR_BUFS];
    uint16_t *h[2]; /* BF16 operands for the BF16 floor (host: CPU only) */
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
    for (int i = 0; i < f->p->nbuf; i++)
        if (f->buf[i]) f->be->ops->release(f->be, f->buf[i]);
    free(f->h[0]);
    free(f->h[1]);
}

static int floor_alloc(floor_bufs *f, amp_backend *be, const floor_plan *p) {
    memset(f, 0, sizeof *f);
    f->be = be;
    f->p = p;
    amp_rng rng;
    amp_rng_seed(&rng, 12345);
    for (int i = 0; i < p->nbuf; i++) {
        f->buf[i] = rand_buf(be, p->len[i], &rng);
        if (!f->buf[i]) {
            floor_free(f);
            return -1;
        }
    }
    return 0;
}

/* One step's GEMMs; with BF16 operands (h, CPU only) from two shared
 * buffers instead. The final 4-byte download waits for the device. */
static int floor_step(floor_bufs *f, int bf16) {
    amp_backend *be = f->be;
    int rc = 0;
    for (int i = 0; i < f->p->ng && rc == 0; i++) {
        const floor_gemm *g = &f->p->g[i];
        const void *a = bf16 ? (const void *)f->h[0] : f->buf[g->a];
        const void *b = bf16 ? (const void *)f->h[1] : f->buf[g->b];
        amp_gemm_desc d = amp_gemm_plain(f->buf[g->c], a, b, bf16 ? AMP_DTYPE_BF16 : AMP_DTYPE_F32,
                                         AMP_GEMM_TRANS(g->ta, g->tb), g->m, g->n, g->k);
        d.batch = g->batch;
        d.stride_a = (long long)g->m * g->k;
        d.stride_b = (long long)g->k * g->n;
        d.stride_c = (long long)g->m * g->n;
        rc = be->ops->gemm_ex(be, &d);
    }
    float sink;
    rc |= be->ops->download(be, &sink, f->buf[f->p->g[0].c], sizeof sink);
    return rc;
}

static amp_backend *open_backend(const char *device) {
    char err[512];
    amp_backend *be = strcmp(device, "cuda") == 0 ? amp_backend_cuda_create(err, sizeof err)
                                                  : amp_backend_cpu_create(err, sizeof err);
    if (!be) fprintf(stderr, "bench_step: %s\n", err);
    return be;
}

/* Median wall time of `steps` calls of floor_step after `warmup`; -1 on
 * failure. */
static double time_floor(floor_bufs *f, const bench_opts *o, int bf16, double *t) {
    int rc = 0;
    for (int i = 0; rc == 0 && i < o->warmup; i++) rc = floor_step(f, bf16);
    for (int i = 0; rc == 0 && i < o->steps; i++) {
        double t0 = amp_clock_ms();
        rc = floor_step(f, bf16);
        t[i] = amp_clock_ms() - t0;
    }
    return rc == 0 ? median(t, o->steps) : -1.0;
}

/* Median of the floor, and of one bare stats-record download (the one
 * device->host sync a training step makes); the BF16 floor into *bf16_ms
 * (CPU only, else 0); the backend's info into *info. */
static int measure_floor(const bench_opts *o, const floor_plan *p, double *out_ms,
                         double *sync_ms, double *bf16_ms, amp_backend_info *info) {
    amp_backend *be = open_backend(o->device);
    if (!be) return -1;
    floor_bufs f;
    if (floor_alloc(&f, be, p) != 0) {
        fprintf(stderr, "bench_step: allocating the floor's matrices: %s\n", be->err);
        be->ops->destroy(be);
        return -1;
    }
    double *t = malloc((size_t)o->steps * sizeof *t);
    amp_step_stats host_stats;
    int rc = t ? 0 : -1;
    if (rc == 0) *out_ms = time_floor(&f, o, 0, t);
    if (rc == 0 && *out_ms < 0) rc = -1;
    void *stats_dev = rc == 0 ? be->ops->alloc(be, sizeof host_stats) : NULL;
    rc = stats_dev && be->ops->zero(be, stats_dev, sizeof host_stats) == 0 ? rc : -1;
    for (int i = 0; rc == 0 && i < o->steps; i++) {
        double t0 = amp_clock_ms();
        rc = be->ops->download(be, &host_stats, stats_dev, sizeof host_stats);
        t[i] = amp_clock_ms() - t0;
    }
    if (stats_dev) be->ops->release(be, stats_dev);
    if (rc == 0) *sync_ms = median(t, o->steps);
    *bf16_ms = 0.0;
    if (rc == 0 && be->device == AMP_DEVICE_CPU) {
        /* BF16 operands: as large as the largest buffer, any finite pattern */
        size_t n = 0;
        for (int i = 0; i < p->nbuf; i++)
            if (p->len[i] > n) n = p->len[i];
        for (int i = 0; i < 2; i++) {
            f.h[i] = malloc(n * sizeof(uint16_t));
            for (size_t j = 0; f.h[i] && j < n; j++)
                f.h[i][j] = (uint16_t)(0x3c00u + (j * 7u + (unsigned)i) % 1024u);
            if (!f.h[i]) rc = -1;
        }
        if (rc == 0) *bf16_ms = time_floor(&f, o, 1, t);
        if (rc == 0 && *bf16_ms < 0) rc = -1;
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
    double cpu_ms; /* median process CPU time per step */
    int64_t skipped;
    size_t arena_bytes;  /* all memory categories together (exact) */
    size_t act_bytes;    /* the activations category alone */
    size_t device_bytes; /* cudaMemGetInfo use on the GPU, 0 on the CPU */
    int scaled;          /* GEMM operands in an FP8 / MXFP8 format */
    char paths[512];     /* the GEMM paths the step's shapes ran (gemm_paths.h) */
} policy_result;

/* The trainer's hook: the times of the steps after the warm-up. */
typedef struct step_times {
    double *t, *ct;   /* [steps] wall and CPU ms */
    int warmup;
    int64_t skipped0; /* skipped steps during the warm-up */
} step_times;

static int time_step(void *user, amp_session *s, const amp_step_record *r, double cpu_ms,
                     char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    step_times *st = user;
    if (r->step == st->warmup) st->skipped0 = s->skipped;
    if (r->step > st->warmup) {
        st->t[r->step - st->warmup - 1] = r->step_ms;
        st->ct[r->step - st->warmup - 1] = cpu_ms;
    }
    return 0;
}

static int measure_policy(const bench_opts *o, const policy *p, policy_result *res) {
    amp_config *cfg = amp_config_new_empty("bench_step");
    if (!cfg) {
        fprintf(stderr, "bench_step: out of memory\n");
        return -1;
    }
    /* Enough examples that no timed step crosses more than a few epoch
     * boundaries (a boundary only reshuffles an index array). */
    long long train = (long long)o->batch * 4;
    char name[64], last_block[64];
    snprintf(name, sizeof name, "bench_%s", p->precision);
    snprintf(last_block, sizeof last_block, "precision.layer.transformer.h.%d.*", o->n_layer - 1);
    int nv = strcmp(p->precision, "nvfp4") == 0;
    int bad = set_str(cfg, "run.name", name) || set_str(cfg, "run.device", o->device) ||
              set_str(cfg, "run.seed", "1") || set_int(cfg, "data.batch_size", o->batch) ||
              /* the trainer's loop runs the warm-up and the timed steps; its one
               * evaluation is the final one, after them */
              set_int(cfg, "train.steps", (long long)o->warmup + o->steps) ||
              set_int(cfg, "train.eval_every", (long long)o->warmup + o->steps) ||
              set_str(cfg, "precision.plugin", p->precision) ||
              set_str(cfg, "scaler.plugin", p->scaler) ||
              (strcmp(p->label, "tf32") == 0 && set_str(cfg, "precision.tf32", "1")) ||
              (p->format && set_str(cfg, "precision.format", p->format)) ||
              (p->recipe && set_str(cfg, "precision.recipe", p->recipe)) ||
              ((p->format || nv) && o->gpt && set_str(cfg, "precision.layer.lm_head", "bf16")) ||
              (nv && (set_str(cfg, "precision.weight_blocks", "2d") ||
                      set_str(cfg, "precision.hadamard", "1") ||
                      set_str(cfg, "precision.stochastic_rounding", "1"))) ||
              (nv && o->gpt && o->n_layer > 1 && set_str(cfg, last_block, "bf16"));
    if (o->gpt) /* configs/gpt_shakespeare_*.ini, on the shipped corpus */
        bad = bad || set_str(cfg, "data.dataset", "text") || set_str(cfg, "model.name", "gpt") ||
              set_int(cfg, "model.n_layer", o->n_layer) || set_int(cfg, "model.n_head", o->n_head) ||
              set_int(cfg, "model.n_embd", o->n_embd) ||
              set_int(cfg, "model.block_size", o->block_size) ||
              set_str(cfg, "model.activation", o->activation) ||
              set_str(cfg, "model.bias", "false") || set_str(cfg, "optim.name", "adamw") ||
              set_str(cfg, "optim.lr", "1e-3") || set_str(cfg, "optim.beta2", "0.99") ||
              set_str(cfg, "optim.weight_decay", "0.1") || set_str(cfg, "optim.grad_clip", "1.0");
    else
        bad = bad || set_str(cfg, "data.dataset", "tiny") ||
              set_int(cfg, "data.features", o->features) ||
              set_int(cfg, "data.classes", o->classes) || set_int(cfg, "data.train_size", train) ||
              set_int(cfg, "data.test_size", o->batch) ||
              set_str(cfg, "model.hidden", o->hidden_text) ||
              set_str(cfg, "model.activation", "relu") || set_str(cfg, "optim.name", "sgd") ||
              set_str(cfg, "optim.lr", "0.01") || set_str(cfg, "optim.momentum", "0.9");
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
    double *t = malloc((size_t)o->steps * sizeof *t), *ct = malloc((size_t)o->steps * sizeof *ct);
    int rc = t && ct ? 0 : -1;
    if (rc != 0) snprintf(err, sizeof err, "out of memory");
    step_times times = {t, ct, o->warmup, 0};
    amp_train_hooks hooks = {&times, time_step};
    amp_train_result tr;
    if (rc == 0 && amp_train_session(s, &hooks, &tr, err, sizeof err) != 0) rc = -1;
    if (rc == 0) {
        res->median_ms = median(t, o->steps);
        res->cpu_ms = median(ct, o->steps);
        res->skipped = s->skipped - times.skipped0;
        res->arena_bytes = 0;
        for (int c = 0; c < AMP_MEM_COUNT; c++) res->arena_bytes += s->model->mem[c].size;
        res->act_bytes = s->model->mem[AMP_MEM_ACTIVATIONS].size;
        res->device_bytes = s->be->ops->device_bytes_used(s->be);
        res->info = s->be->info;
        res->scaled = s->model->scaled ? s->model->scaled->nslots : 0;
        /* the choices live in the session's backend: summed up before it closes */
        bench_gemm_paths_text(s->be->info.gemm_choices, s->be->info.n_gemm_choices, res->paths,
                              sizeof res->paths);
        res->info.gemm_choices = NULL;
        res->info.n_gemm_choices = 0;
        if ((p->format || nv) && res->scaled == 0) { /* the policy would have timed a bf16 step */
            fprintf(stderr, "bench_step: %s: the step has no FP8 operand\n", p->label);
            rc = -1;
        }
    } else {
        fprintf(stderr, "bench_step: %s: %s\n", p->label, err);
    }
    free(t);
    free(ct);
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
    amp_startup(argv); /* the threads wait as amptrain's do */
    int stopped = amp_startup_command(0);
    if (stopped) return stopped;
    bench_opts o;
    if (parse_args(&o, argc, argv) != 0) return 2;
    amp_log_set_level(AMP_LOG_WARN);

    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    const char *corename = openblas_get_corename();
    if (o.gpt) {
        /* the vocabulary is the shipped corpus's, as the session will load it */
        char path[4096], err[512];
        amp_text text;
        if (amp_text_shipped_path(path, sizeof path) != 0 ||
            amp_text_load(&text, path, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "bench_step: --model gpt needs the shipped corpus (data/%s)\n",
                    AMP_TEXT_DEFAULT_FILE);
            return 1;
        }
        o.classes = text.vocab;
        amp_text_free(&text);
        printf("bench_step: GPT %d layers, %d heads, %d wide, block %d, vocab %d, batch %d, %s, "
               "AdamW, shipped corpus; median of %d steps after %d warm-up\n",
               o.n_layer, o.n_head, o.n_embd, o.block_size, o.classes, o.batch, o.activation,
               o.steps, o.warmup);
    } else {
        char shape[300];
        snprintf(shape, sizeof shape, "%s", o.hidden_text);
        for (char *c = shape; *c; c++)
            if (*c == ',') *c = '-';
        printf("bench_step: MLP %d-%s-%d, batch %d, ReLU, SGD momentum, tiny data; median of %d "
               "steps after %d warm-up\n",
               o.features, shape, o.classes, o.batch, o.steps, o.warmup);
    }
    printf("cpu: %s; OpenBLAS %d thread(s), core %s\n", cpu, openblas_get_num_threads(),
           corename ? corename : "?");
    fflush(stdout);

    floor_plan *plan = calloc(1, sizeof *plan);
    if (!plan || make_plan(plan, &o) != 0) return 1;
    double flops = plan->flops;
    double floor_ms = 0.0, sync_ms = 0.0, bf16_ms = 0.0;
    amp_backend_info info;
    memset(&info, 0, sizeof info);
    if (!o.no_floor && measure_floor(&o, plan, &floor_ms, &sync_ms, &bf16_ms, &info) != 0) return 1;
    free(plan);

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
    printf("| %-13s | %15s | %9s | %10s | %8s | %12s | %12s | %11s |\n", "policy", "median step ms",
           "floor ms", "step/floor", "GFLOP/s", "arena MiB", "device MiB", "step cpu ms");
    printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", "---------------", "----------------:", "----------:",
           "-----------:", "---------:", "-------------:", "-------------:", "------------:");
    fflush(stdout);
    /* Round after round every chosen policy once, the order rotating per
     * round, so a drift in machine speed touches every policy alike. */
    int failed = 0, ran[NPOLICIES] = {0}, dead[NPOLICIES] = {0}, sel[NPOLICIES], nsel = 0;
    int paths_moved[NPOLICIES] = {0}; /* a round ran another path mix than the one before */
    int R = o.rounds;
    policy_result results[NPOLICIES];
    double *wall = calloc((size_t)NPOLICIES * (size_t)R, sizeof *wall);
    double *cpu_t = calloc((size_t)NPOLICIES * (size_t)R, sizeof *cpu_t);
    double *tmp = calloc((size_t)R, sizeof *tmp);
    if (!wall || !cpu_t || !tmp) {
        fprintf(stderr, "bench_step: out of memory\n");
        return 1;
    }
    for (int i = 0; i < NPOLICIES; i++)
        if (o.run_policy[i]) sel[nsel++] = i;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < nsel; j++) {
            int i = sel[(j + r) % nsel];
            if (dead[i]) continue;
            policy_result res;
            if (measure_policy(&o, &policies[i], &res) != 0) {
                failed = dead[i] = 1;
                continue;
            }
            wall[i * R + r] = res.median_ms;
            cpu_t[i * R + r] = res.cpu_ms;
            /* the mix, without where the choices came from (measured, then cached) */
            if (ran[i] && strncmp(res.paths, results[i].paths, strcspn(res.paths, "(")) != 0)
                paths_moved[i] = 1;
            results[i] = res;
            ran[i]++;
            if (R > 1)
                fprintf(stderr, "round %d/%d %-13s %10.3f ms, cpu %10.3f ms\n", r + 1, R,
                        policies[i].label, res.median_ms, res.cpu_ms);
        }
    for (int j = 0; j < nsel; j++) {
        int i = sel[j];
        if (dead[i]) continue;
        policy_result r = results[i];
        memcpy(tmp, &wall[i * R], (size_t)R * sizeof *tmp);
        r.median_ms = results[i].median_ms = median(tmp, R);
        memcpy(tmp, &cpu_t[i * R], (size_t)R * sizeof *tmp);
        r.cpu_ms = results[i].cpu_ms = median(tmp, R);
        if (o.no_floor)
            printf("| %-13s | %15.3f | %9s | %10s | %8.1f | %12.2f | %12.2f |", policies[i].label,
                   r.median_ms, "-", "-", flops / (r.median_ms * 1e6),
                   (double)r.arena_bytes / 1048576.0, (double)r.device_bytes / 1048576.0);
        else
            printf("| %-13s | %15.3f | %9.3f | %10.2f | %8.1f | %12.2f | %12.2f |", policies[i].label,
                   r.median_ms, floor_ms, r.median_ms / floor_ms, flops / (r.median_ms * 1e6),
                   (double)r.arena_bytes / 1048576.0, (double)r.device_bytes / 1048576.0);
        printf(" %11.3f |", r.cpu_ms);
        if (r.skipped) printf(" %lld of the timed steps skipped (overflow)", (long long)r.skipped);
        printf("\n");
    }
    if (R > 1) printf("(medians over %d interleaved rounds)\n", R);
    /* Each policy against bf16, paired by round: the ratio of the two medians
     * of one round, then the median of those ratios over the rounds. */
    if (ran[BF16_ROW] == R && nsel > 1) {
        printf("\nagainst bf16+none, paired by round (%d interleaved round%s): the median over the "
               "rounds of the policy's median step / bf16's in the same round\n",
               R, R == 1 ? "" : "s");
        printf("| %-13s | %9s | %9s | %11s | %11s | %17s |\n", "policy", "wall ms", "cpu ms",
               "wall / bf16", "cpu / bf16", "cpu / bf16 range");
        printf("|%s|%s|%s|%s|%s|%s|\n", "---------------", "----------:", "----------:",
               "------------:", "------------:", "------------------:");
        for (int j = 0; j < nsel; j++) {
            int i = sel[j];
            if (ran[i] != R) continue;
            double q[2], lo = INFINITY, hi = -INFINITY;
            for (int k = 0; k < 2; k++) {
                const double *v = k ? cpu_t : wall;
                for (int r = 0; r < R; r++) tmp[r] = v[i * R + r] / v[BF16_ROW * R + r];
                if (k)
                    for (int r = 0; r < R; r++) {
                        lo = tmp[r] < lo ? tmp[r] : lo;
                        hi = tmp[r] > hi ? tmp[r] : hi;
                    }
                q[k] = median(tmp, R);
            }
            printf("| %-13s | %9.3f | %9.3f | %10.3fx | %10.3fx | %7.3f .. %6.3f |\n",
                   policies[i].label, results[i].median_ms, results[i].cpu_ms, q[0], q[1], lo, hi);
        }
    }
    fflush(stdout);
    free(wall);
    free(cpu_t);
    free(tmp);
    /* what ran, per policy: the GEMM kernel of each input dtype the step used */
    for (int i = 0; i < NPOLICIES; i++) {
        if (!ran[i] || !results[i].info.isa[0]) continue;
        printf("%s kernels: isa %s, %d thread(s)", policies[i].label, results[i].info.isa,
               results[i].info.threads);
        static const char *const dn[AMP_DTYPE_COUNT] = {"f32", "f16", "bf16"};
        for (int d = 0; d < AMP_DTYPE_COUNT; d++)
            if (results[i].info.gemm[d][0]) printf("; %s GEMM %s", dn[d], results[i].info.gemm[d]);
        if (results[i].scaled) printf("; %d FP8 operands", results[i].scaled);
        if (results[i].info.scratch_bytes)
            printf("; backend scratch %.2f MiB", (double)results[i].info.scratch_bytes / 1048576.0);
        printf("\n");
    }
    /* the GEMM path each shape ran, as the backend chose it (the last round's) */
    for (int i = 0; i < NPOLICIES; i++)
        if (ran[i] && results[i].paths[0])
            printf("GEMM paths (%s): %s%s\n", policies[i].label, results[i].paths,
                   paths_moved[i] ? "; other rounds chose other paths" : "");
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
