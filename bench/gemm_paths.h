/* The CPU backend's GEMM path choices (amp_backend_info.gemm_choices) as
 * one line for the benchmarks: how many shapes, how many of them each path
 * runs, and where the choices came from, e.g.
 *   9 shapes: onednn-f32 x6, openblas-f32 x3 (measured 9)
 * bench/paths_table.py parses it. */
#ifndef AMP_BENCH_GEMM_PATHS_H
#define AMP_BENCH_GEMM_PATHS_H

#include <stdio.h>
#include <string.h>

#include "backend/backend.h"

/* Choices c[0..n); "" when there are none (CUDA, or no GEMM ran). Distinct
 * paths, then distinct sources, each in first-seen order. */
static inline void bench_gemm_paths_text(const amp_gemm_choice *c, int n, char *out, size_t len) {
    out[0] = '\0';
    if (!c || n <= 0) return;
    size_t at = (size_t)snprintf(out, len, "%d shape%s:", n, n == 1 ? "" : "s");
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && at < len) at += (size_t)snprintf(out + at, len - at, " (");
        int first = 1;
        for (int i = 0; i < n; i++) {
            const char *v = pass ? c[i].source : c[i].path;
            int seen = 0, count = 0;
            for (int j = 0; j < n; j++) {
                if (strcmp(v, pass ? c[j].source : c[j].path) != 0) continue;
                seen |= j < i;
                count++;
            }
            if (seen || at >= len) continue;
            at += (size_t)snprintf(out + at, len - at, pass ? "%s%s %d" : "%s %s x%d",
                                   first ? "" : pass ? ", " : ",", v, count);
            first = 0;
        }
        if (pass == 1 && at < len) snprintf(out + at, len - at, ")");
    }
}

#endif
