/* The CUDA backend's entry points in the core: they open the CUDA module
 * (libamptrain_cuda.so, core/backend/cuda/, the one file linking cudart,
 * cuBLAS and cuDNN) on first use and forward to it. A run with
 * `device = cpu` never calls them, so it maps no CUDA library and creates
 * no CUDA context; `device = auto` looks for the driver (libcuda.so.1)
 * first and opens the module only where one is installed.
 *
 * The module sits beside amptrain in the build tree (tests and benchmarks
 * one folder down) and in <libdir>/amptrain once installed. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "process/env.h"
#include "util/log.h"
#include "process/self_exe.h"

#define CUDA_MODULE "libamptrain_cuda.so"

typedef struct {
    amp_backend *(*create)(char *err, size_t errlen);
    int (*available)(void);
    void *(*stream)(amp_backend *be);
    const char *(*reason)(void);
} cuda_module;

static cuda_module mod;
static void *mod_handle;
static char load_error[PATH_MAX + 512]; /* why the module did not open */
static char no_driver[512];             /* why auto did not open it */

/* The core functions the module calls: every executable linking amp_core
 * asks for this table (--undefined, core/CMakeLists.txt), so a static link
 * keeps them, and exports them to the module. */
void *const amp_cuda_module_host_symbols[] = {
    (void *)amp_log, (void *)amp_env_choice, (void *)amp_gemm_desc_check,
    (void *)amp_conv2d_desc_check, (void *)amp_pool2d_desc_check, (void *)amp_env_zero_one,
    (void *)amp_nvfp4_desc_check,
};

static void *open_beside_exe(char *tried, size_t len) {
    char exe[PATH_MAX];
    if (amp_self_exe_dir(exe, sizeof exe) != 0) return NULL;
    static const char *const rel[] = {".", "..", "../" AMP_CUDA_MODULE_INSTALL_SUBDIR};
    size_t used = 0;
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s/" CUDA_MODULE, exe, rel[i]);
        if (access(path, R_OK) != 0) {
            if (used < len)
                used += (size_t)snprintf(tried + used, len - used, "%s%s", used ? ", " : "", path);
            continue;
        }
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) snprintf(tried, len, "%s", dlerror());
        return h;
    }
    return NULL;
}

/* 0 with mod filled, or -1 with load_error. */
static int module_open(void) {
    if (mod.create) return 0;
    if (load_error[0]) return -1;
    char tried[PATH_MAX + 256] = "";
    void *h = open_beside_exe(tried, sizeof tried);
    if (!h) {
        snprintf(load_error, sizeof load_error,
                 "the CUDA backend module " CUDA_MODULE " could not be loaded (%s); rebuild or "
                 "reinstall amptrain, or use [run] device = cpu",
                 tried[0] ? tried : "no folder beside the executable");
        return -1;
    }
    cuda_module m;
    *(void **)&m.create = dlsym(h, "amp_backend_cuda_create");
    *(void **)&m.available = dlsym(h, "amp_backend_cuda_available");
    *(void **)&m.stream = dlsym(h, "amp_backend_cuda_stream");
    *(void **)&m.reason = dlsym(h, "amp_backend_cuda_unavailable_reason");
    if (!m.create || !m.available || !m.stream || !m.reason) {
        snprintf(load_error, sizeof load_error,
                 "the CUDA backend module " CUDA_MODULE " lacks its entry points (a file from "
                 "another amptrain build?); rebuild or reinstall amptrain");
        dlclose(h);
        return -1;
    }
    amp_log(AMP_LOG_DEBUG, "cuda: loaded the CUDA backend module");
    mod = m;
    mod_handle = h;
    return 0;
}

void *amp_cuda_module_symbol(const char *name, char *err, size_t errlen) {
    if (module_open() != 0) {
        snprintf(err, errlen, "%s", load_error);
        return NULL;
    }
    void *sym = dlsym(mod_handle, name);
    if (!sym)
        snprintf(err, errlen, "the CUDA backend module " CUDA_MODULE " lacks %s (built without "
                 "it?); rebuild or reinstall amptrain", name);
    return sym;
}

amp_backend *amp_backend_cuda_create(char *err, size_t errlen) {
    if (module_open() != 0) {
        snprintf(err, errlen, "%s", load_error);
        return NULL;
    }
    return mod.create(err, errlen);
}

/* Without the driver's library no device can be visible, and the module
 * (some 150 MiB of CUDA libraries once mapped) stays unopened. */
static int driver_present(void) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        snprintf(no_driver, sizeof no_driver,
                 "no NVIDIA driver: libcuda.so.1 not found (%s); the CUDA backend was not loaded",
                 dlerror());
        return 0;
    }
    return 1; /* kept open: the module's runtime opens it again */
}

int amp_backend_cuda_available(void) {
    if (!mod.create && (no_driver[0] || !driver_present())) return 0;
    return module_open() == 0 && mod.available();
}

void *amp_backend_cuda_stream(amp_backend *be) {
    return be && be->device == AMP_DEVICE_CUDA && module_open() == 0 ? mod.stream(be) : NULL;
}

const char *amp_backend_cuda_unavailable_reason(void) {
    if (amp_backend_cuda_available()) return "";
    return mod.create ? mod.reason() : no_driver[0] ? no_driver : load_error;
}
