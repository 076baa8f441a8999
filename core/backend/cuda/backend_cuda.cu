/* CUDA backend, host side: device selection, memory, copies, cuBLAS GEMMs and
 * the op table. The element-wise and reduction kernels live in
 * kernels_cuda.cu. Everything runs on one stream owned by the backend;
 * download() is the only op that synchronises with the host (unless
 * AMPTRAIN_CUDA_SYNC=1 asks for a synchronisation after every launch).
 * Every CUDA and cuBLAS call's status is checked; the few that have nowhere
 * to return it (release, destroy) log a warning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/kernels/reduce.h"

extern "C" {
#include "process/env.h"
#include "util/log.h"
}

#ifndef AMP_CUDA_ARCHS
#define AMP_CUDA_ARCHS "?"
#endif

int amp_cuda_fail(amp_backend *be, const char *what, const char *file, int line, const char *name,
                  const char *msg) {
    snprintf(be->err, sizeof be->err, "%s failed at %s:%d: %s (%s)", what, file, line,
             name ? name : "?", msg ? msg : "?");
    return 1;
}

int amp_cuda_after_launch(amp_backend *be, const char *what, const char *file, int line) {
    amp_cuda_impl *im = amp_cuda_im(be);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        /* Sticky errors from an earlier kernel also surface here. */
        snprintf(be->err, sizeof be->err, "after launching %s at %s:%d: %s (%s)%s", what, file,
                 line, cudaGetErrorName(e), cudaGetErrorString(e),
                 im->sync_each ? ""
                               : "; the fault may come from an earlier kernel: rerun with "
                                 "AMPTRAIN_CUDA_SYNC=1 to name it");
        return 1;
    }
    if (im->sync_each) {
        e = cudaStreamSynchronize(im->stream);
        if (e != cudaSuccess) {
            snprintf(be->err, sizeof be->err,
                     "%s failed (AMPTRAIN_CUDA_SYNC=1 synchronised after it, launched at "
                     "%s:%d): %s (%s)",
                     what, file, line, cudaGetErrorName(e), cudaGetErrorString(e));
            return 1;
        }
    }
    return 0;
}

/* Why amp_backend_cuda_available() last said 0 ("" when it said 1). */
static char cuda_reason[512];

static void cuda_version_text(char *out, size_t len, int v) {
    snprintf(out, len, "CUDA %d.%d", v / 1000, (v % 1000) / 10);
}

extern "C" int amp_backend_cuda_available(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) {
        cuda_reason[0] = '\0';
        return 1;
    }
    (void)cudaGetLastError(); /* clear it so later calls do not report it */
    int drv = 0, rt = 0;
    cudaError_t de = cudaDriverGetVersion(&drv);
    cudaError_t re = cudaRuntimeGetVersion(&rt);
    (void)cudaGetLastError();
    char dtext[160], rtext[64], what[200];
    if (de != cudaSuccess)
        snprintf(dtext, sizeof dtext, "unknown (cudaDriverGetVersion: %s)", cudaGetErrorName(de));
    else if (drv == 0)
        snprintf(dtext, sizeof dtext, "none loaded (no libcuda.so.1 found: is the NVIDIA driver "
                                      "installed and its library on the loader's path?)");
    else
        cuda_version_text(dtext, sizeof dtext, drv);
    if (re != cudaSuccess)
        snprintf(rtext, sizeof rtext, "unknown (%s)", cudaGetErrorName(re));
    else
        cuda_version_text(rtext, sizeof rtext, rt);
    if (e != cudaSuccess) {
        snprintf(what, sizeof what, "cudaGetDeviceCount: %s (%s)", cudaGetErrorName(e),
                 cudaGetErrorString(e));
    } else {
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(what, sizeof what, "cudaGetDeviceCount found 0 devices (CUDA_VISIBLE_DEVICES=%s)",
                 vis ? vis : "unset");
    }
    snprintf(cuda_reason, sizeof cuda_reason, "%s; driver: %s; runtime: %s%s", what, dtext, rtext,
             drv > 0 && rt > 0 && drv < rt
                 ? "; the driver is older than the runtime amptrain was built with: update the "
                   "driver or build with an older CUDA toolkit"
                 : "");
    return 0;
}

extern "C" const char *amp_backend_cuda_unavailable_reason(void) {
    return amp_backend_cuda_available() ? "" : cuda_reason;
}

static void *cuda_alloc(amp_backend *be, size_t bytes) {
    void *p = NULL;
    /* A zero-byte request still gets a distinct pointer, like the CPU twin. */
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        size_t fr = 0, total = 0;
        cudaError_t me = cudaMemGetInfo(&fr, &total);
        char mem[160];
        if (me == cudaSuccess)
            snprintf(mem, sizeof mem, "the device has %zu of %zu bytes free", fr, total);
        else
            snprintf(mem, sizeof mem, "cudaMemGetInfo failed too: %s", cudaGetErrorName(me));
        (void)cudaGetLastError();
        snprintf(be->err, sizeof be->err, "cudaMalloc of %zu bytes failed: %s (%s); %s", bytes,
                 cudaGetErrorName(e), cudaGetErrorString(e), mem);
        return NULL;
    }
    return p;
}

static void cuda_release(amp_backend *be, void *p) {
    if (!p) return;
    /* cudaFree waits for pending work that may use p, so an earlier
     * asynchronous fault can surface here; nowhere to return it, so say it. */
    cudaError_t e = cudaFree(p);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        amp_log(AMP_LOG_WARN, "cuda: cudaFree failed: %s (%s)", cudaGetErrorName(e),
                cudaGetErrorString(e));
    }
    (void)be;
}

/* Pageable source: cudaMemcpyAsync returns once src is staged, so the caller
 * may reuse it at once (not true for pinned buffers, which the core never
 * hands us). */
/* An asynchronous copy on the backend's stream (upload, copy). */
static int cuda_memcpy(amp_backend *be, void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind kind, const char *what) {
    if (bytes == 0) return 0;
    AMP_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, amp_cuda_im(be)->stream));
    if (amp_cuda_after_launch(be, what, __FILE__, __LINE__)) return 1;
    return 0;
}

static int cuda_upload(amp_backend *be, void *dst_dev, const void *src_host, size_t bytes) {
    be->host_round_trips++; /* pageable: staged through the host before it returns */
    return cuda_memcpy(be, dst_dev, src_host, bytes, cudaMemcpyHostToDevice,
                       "cudaMemcpyAsync (upload)");
}

static int cuda_copy(amp_backend *be, void *dst_dev, const void *src_dev, size_t bytes) {
    return cuda_memcpy(be, dst_dev, src_dev, bytes, cudaMemcpyDeviceToDevice,
                       "cudaMemcpyAsync (copy)");
}

static int cuda_download(amp_backend *be, void *dst_host, const void *src_dev, size_t bytes) {
    cudaStream_t s = amp_cuda_im(be)->stream;
    be->host_round_trips++; /* it synchronises */
    if (bytes)
        AMP_CHECK_CUDA(cudaMemcpyAsync(dst_host, src_dev, bytes, cudaMemcpyDeviceToHost, s));
    /* Also where asynchronous kernel faults surface. */
    cudaError_t e = cudaStreamSynchronize(s);
    if (e != cudaSuccess)
        return amp_cuda_fail(be,
                             amp_cuda_im(be)->sync_each
                                 ? "cudaStreamSynchronize before a download"
                                 : "cudaStreamSynchronize before a download (a kernel queued "
                                   "earlier failed; rerun with AMPTRAIN_CUDA_SYNC=1 to name it)",
                             __FILE__, __LINE__, cudaGetErrorName(e), cudaGetErrorString(e));
    return 0;
}

static int cuda_zero(amp_backend *be, void *dst_dev, size_t bytes) {
    if (bytes == 0) return 0;
    AMP_CHECK_CUDA(cudaMemsetAsync(dst_dev, 0, bytes, amp_cuda_im(be)->stream));
    if (amp_cuda_after_launch(be, "cudaMemsetAsync (zero)", __FILE__, __LINE__)) return 1;
    return 0;
}

/* The cuBLAS input type and compute type of a GEMM on dt inputs (FP32
 * accumulation; TF32 only for F32 inputs when the policy allows it). An
 * unknown dtype is an error, never a silent FP32. */
static int cuda_gemm_types(amp_backend *be, amp_dtype dt, cudaDataType_t *in_type,
                           cublasComputeType_t *compute, const char *op) {
    *compute = CUBLAS_COMPUTE_32F;
    switch (dt) {
    case AMP_DTYPE_F32:
        *in_type = CUDA_R_32F;
        if (be->allow_tf32) *compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        return 0;
    case AMP_DTYPE_F16: *in_type = CUDA_R_16F; return 0;
    case AMP_DTYPE_BF16: *in_type = CUDA_R_16BF; return 0;
    default:
        snprintf(be->err, sizeof be->err, "cuda %s: unknown input dtype %d", op, (int)dt);
        return 1;
    }
}

/* The descriptor GEMM: one (strided-batched) cuBLAS call, then the fused
 * epilogue kernel per batch matrix.
 *
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
 * row-major matrix with row stride ld is its own transpose in column-major
 * with leading dimension ld: so swap A/B and m/n and keep each transpose
 * flag as given. FP32 accumulation always (CUBLAS_COMPUTE_32F: tensor cores
 * for 16-bit inputs, true FP32 for F32 unless the policy allows TF32).
 * cuBLAS gives the same bits on every run on one GPU model and one stream. */
static int cuda_gemm_ex(amp_backend *be, const amp_gemm_desc *d) {
    int has_epilogue = d->bias || d->out;
    if (amp_gemm_desc_check(be, d) != 0) return 1;
    cudaDataType_t in_type;
    cublasComputeType_t compute;
    if (cuda_gemm_types(be, d->in_dtype, &in_type, &compute,
                        d->batch == 1 ? "gemm" : "batched gemm") != 0)
        return 1;
    if (d->batch == 1 && d->m > 0 && d->n > 0) {
        AMP_CHECK_CUBLAS(cublasGemmEx(amp_cuda_im(be)->blas, d->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                      d->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, d->n, d->m, d->k,
                                      &d->alpha, d->b, in_type, d->ldb, d->a, in_type, d->lda,
                                      &d->beta, d->acc, CUDA_R_32F, d->ldc, compute,
                                      CUBLAS_GEMM_DEFAULT));
        AMP_CHECK_LAUNCH(cublasGemmEx);
    } else if (d->batch > 1 && d->m > 0 && d->n > 0) {
        AMP_CHECK_CUBLAS(cublasGemmStridedBatchedEx(
            amp_cuda_im(be)->blas, d->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
            d->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, d->n, d->m, d->k, &d->alpha, d->b, in_type,
            d->ldb, d->stride_b, d->a, in_type, d->lda, d->stride_a, &d->beta, d->acc, CUDA_R_32F,
            d->ldc, d->stride_c, d->batch, compute, CUBLAS_GEMM_DEFAULT));
        AMP_CHECK_LAUNCH(cublasGemmStridedBatchedEx);
    }
    if (!has_epilogue) return 0;
    size_t out_size = d->out_dtype == AMP_DTYPE_F32 ? 4 : 2;
    for (int i = 0; i < d->batch; i++)
        if (amp_cuda_gemm_epilogue(be, d, d->acc + (size_t)i * (size_t)d->stride_c,
                                   (size_t)i * (size_t)d->stride_c * out_size) != 0)
            return 1;
    return 0;
}

/* The summary's device_used. The op has no error return, so a failure is
 * logged once and reported as 0. */
static size_t cuda_device_bytes_used(amp_backend *be) {
    static int warned;
    size_t fr = 0, total = 0;
    cudaError_t e = cudaMemGetInfo(&fr, &total);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (!warned++)
            amp_log(AMP_LOG_WARN, "cuda: cudaMemGetInfo failed: %s (%s); device memory in use "
                    "is reported as 0", cudaGetErrorName(e), cudaGetErrorString(e));
        return 0;
    }
    (void)be;
    return total - fr;
}

static void cuda_warn(const char *what, cudaError_t e) {
    if (e == cudaSuccess) return;
    (void)cudaGetLastError();
    amp_log(AMP_LOG_WARN, "cuda: %s failed: %s (%s)", what, cudaGetErrorName(e),
            cudaGetErrorString(e));
}

int amp_cuda_scratch(amp_backend *be, size_t bytes, void **p) {
    amp_cuda_impl *im = amp_cuda_im(be);
    if (bytes > im->scratch_bytes) {
        AMP_CHECK_CUDA(cudaStreamSynchronize(im->stream));
        if (im->scratch) AMP_CHECK_CUDA(cudaFree(im->scratch));
        im->scratch = NULL;
        im->scratch_bytes = 0;
        void *q = cuda_alloc(be, bytes);
        if (!q) return 1;
        im->scratch = q;
        im->scratch_bytes = bytes;
    }
    *p = im->scratch;
    return 0;
}

static void cuda_destroy(amp_backend *be) {
    if (!be) return;
    amp_cuda_impl *im = amp_cuda_im(be);
    if (im) {
        if (im->stream) cuda_warn("cudaStreamSynchronize", cudaStreamSynchronize(im->stream));
        if (im->partials) cuda_warn("cudaFree", cudaFree(im->partials));
        if (im->scratch) cuda_warn("cudaFree", cudaFree(im->scratch));
        amp_cuda_cnn_destroy(be);
        amp_cuda_lt_destroy(be);
        if (im->blas) {
            cublasStatus_t st = cublasDestroy(im->blas);
            if (st != CUBLAS_STATUS_SUCCESS)
                amp_log(AMP_LOG_WARN, "cuda: cublasDestroy failed: %s", cublasGetStatusName(st));
        }
        if (im->stream) cuda_warn("cudaStreamDestroy", cudaStreamDestroy(im->stream));
        free(im);
    }
    free(be);
}

/* cudaMalloc does not overcommit: it fails at once, and says so. */
static double cuda_overcommit_limit(amp_backend *be) { return 0.0; }

/* Filled by member name so a reordered or appended field cannot shift the
 * table silently (C++ has no out-of-order designated initialisers). */
static amp_backend_ops cuda_make_ops(void) {
    amp_backend_ops o;
    memset(&o, 0, sizeof o);
    o.name = "cuda";
    o.destroy = cuda_destroy;
    o.alloc = cuda_alloc;
    o.release = cuda_release;
    o.upload = cuda_upload;
    o.download = cuda_download;
    o.zero = cuda_zero;
    o.copy = cuda_copy;
    o.gemm_ex = cuda_gemm_ex;
    amp_cuda_kernel_ops(&o);
    o.device_bytes_used = cuda_device_bytes_used;
    o.overcommit_limit = cuda_overcommit_limit;
    o.transformer = &amp_cuda_transformer_ops;
#if AMP_HAVE_CUDNN
    o.conv = &amp_cuda_conv_ops;
#endif
    o.fused = &amp_cuda_fused_ops;
    o.scaled = &amp_cuda_scaled_ops;
    return o;
}

static const amp_backend_ops cuda_ops = cuda_make_ops();

static int cuda_init(amp_backend *be) {
    amp_cuda_impl *im = amp_cuda_im(be);
    /* The current device: 0 unless a data-parallel rank chose its own
     * (amp_dist_select_cuda_device) before creating the backend. */
    AMP_CHECK_CUDA(cudaGetDevice(&im->device));
    AMP_CHECK_CUDA(cudaSetDevice(im->device));
    cudaDeviceProp prop;
    AMP_CHECK_CUDA(cudaGetDeviceProperties(&prop, im->device));
    im->sm_count = prop.multiProcessorCount;
    im->cc = prop.major * 10 + prop.minor;
    /* A GPU the kernels were not compiled for fails here, by name, rather
     * than at the first launch of a training step. */
    if (amp_cuda_check_kernel_image(be) != 0) {
        char why[sizeof be->err];
        snprintf(why, sizeof why, "%s", be->err);
        snprintf(be->err, sizeof be->err,
                 "%s; the GPU is %s (sm_%d%d) and the kernels were built for "
                 "CMAKE_CUDA_ARCHITECTURES=%s: rebuild with -DCMAKE_CUDA_ARCHITECTURES=%d%d",
                 why, prop.name, prop.major, prop.minor, AMP_CUDA_ARCHS, prop.major, prop.minor);
        return 1;
    }
    AMP_CHECK_CUDA(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking));
    AMP_CHECK_CUBLAS(cublasCreate(&im->blas));
    AMP_CHECK_CUBLAS(cublasSetStream(im->blas, im->stream));
    /* Default math: FP32 GEMMs stay true FP32; TF32 only per call when the
     * policy allows it (CUBLAS_COMPUTE_32F_FAST_TF32). */
    AMP_CHECK_CUBLAS(cublasSetMathMode(im->blas, CUBLAS_DEFAULT_MATH));
    AMP_CHECK_CUDA(cudaMalloc(&im->partials, AMP_REDUCE_MAX_BLOCKS * sizeof(double)));
    size_t fr = 0, total = 0;
    AMP_CHECK_CUDA(cudaMemGetInfo(&fr, &total));
    int drv = 0, rt = 0;
    AMP_CHECK_CUDA(cudaDriverGetVersion(&drv));
    AMP_CHECK_CUDA(cudaRuntimeGetVersion(&rt));
    amp_log(AMP_LOG_INFO,
            "cuda: device %d %s (sm_%d%d, %d SMs), %.1f of %.1f GiB free; driver CUDA %d.%d, "
            "runtime CUDA %d.%d%s",
            im->device, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
            (double)fr / (1 << 30), (double)total / (1 << 30), drv / 1000, (drv % 1000) / 10,
            rt / 1000, (rt % 1000) / 10,
            im->sync_each ? "; AMPTRAIN_CUDA_SYNC=1: synchronising after every launch" : "");
    return 0;
}

extern "C" void *amp_backend_cuda_stream(amp_backend *be) {
    return be && be->device == AMP_DEVICE_CUDA ? (void *)amp_cuda_im(be)->stream : NULL;
}

extern "C" amp_backend *amp_backend_cuda_create(char *err, size_t errlen) {
    int sync_each = 0;
    if (amp_env_choice("AMPTRAIN_CUDA_SYNC", amp_env_zero_one, &sync_each, err, errlen) < 0)
        return NULL;
    if (!amp_backend_cuda_available()) {
        snprintf(err, errlen,
                 "device = cuda requested but no CUDA device is visible: %s. Check the driver "
                 "(nvidia-smi) and CUDA_VISIBLE_DEVICES, or use [run] device = cpu",
                 cuda_reason);
        return NULL;
    }
    amp_backend *be = (amp_backend *)calloc(1, sizeof *be);
    amp_cuda_impl *im = (amp_cuda_impl *)calloc(1, sizeof *im);
    if (!be || !im) {
        free(be);
        free(im);
        snprintf(err, errlen, "out of host memory creating the CUDA backend");
        return NULL;
    }
    be->ops = &cuda_ops;
    be->device = AMP_DEVICE_CUDA;
    be->impl = im;
    im->sync_each = sync_each;
    if (cuda_init(be) != 0) {
        snprintf(err, errlen, "creating the CUDA backend: %s", be->err);
        cuda_destroy(be);
        return NULL;
    }
    return be;
}
