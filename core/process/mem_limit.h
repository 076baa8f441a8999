/* Running under an address-space limit (ulimit -v, prlimit --as). OpenBLAS
 * starts its thread pool while the program loads, and each thread maps a
 * 128 MiB buffer; a thread whose map fails retries for ever, and exit then
 * waits for it. So, before anything else, a process that lacks the room
 * for a buffer per core restarts itself with OPENBLAS_NUM_THREADS=1 (never
 * when the user set that variable), and exits without joining library
 * threads once its outputs are written. Under any limit a crash inside a
 * library that could not map memory (oneDNN's kernel generator does not
 * check) removes the run's temporaries and exits 1 with a message. */
#ifndef AMP_MEM_LIMIT_H
#define AMP_MEM_LIMIT_H

#include <stddef.h>

#include "restart_env.h"

/* OpenBLAS's per-thread buffer (BUFFER_SIZE of the Debian x86-64 build,
 * seen mapped by every pool thread) */
#define AMP_OPENBLAS_BUFFER ((size_t)128 << 20)

/* Bytes the address-space limit still allows this process to map;
 * SIZE_MAX when there is no limit. */
size_t amp_mem_headroom(void);

/* At the start of main: under a limit, installs the crash message, and
 * records OPENBLAS_NUM_THREADS=1 for the one restart (startup.h)
 * when the limit leaves less than a buffer per core (plus a reserve for
 * the run) and the variable is unset. */
void amp_mem_limit_prepare(amp_restart_env *r);

/* Whether an address-space limit is set: then exit with _exit after
 * flushing, since library destructors may join threads that never got
 * their memory. */
int amp_mem_limited(void);

/* What a run needs free after its setup (arenas allocated): the
 * libraries' workspaces (oneDNN's generated kernels and scratch, about
 * 64 MiB for a small model, with a margin) and the checkpoint and weights
 * buffers (4 copies of nparams floats). */
size_t amp_mem_run_reserve(size_t nparams);

/* 0 when the limit leaves `need` bytes; else -1 with err saying how much is
 * left and what to raise. */
int amp_mem_check_room(size_t need, char *err, size_t errlen);

#endif
