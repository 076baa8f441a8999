/* What an arm's formats would give on GPUs that have them: its weight
 * GEMMs' time at each GPU's published dense peak rate per format, against
 * the baseline's (ab_project.c). A projection, not a measurement. */
#ifndef AMP_AB_PROJECT_H
#define AMP_AB_PROJECT_H

#include <stddef.h>

#include "ab/ab.h"

enum { AMP_AB_GPU_H100, AMP_AB_GPU_H200, AMP_AB_GPU_B200, AMP_AB_NGPU };

/* "H100 SXM", "H200 SXM", "B200". */
const char *amp_ab_gpu_name(int gpu);
/* Arm a's weight-GEMM time on the baseline's formats / on its own, on the
 * GPU: > 1 means faster. NAN when the arm's GEMMs are unknown or the GPU
 * lacks one of its formats (FP4 before Blackwell). */
double amp_ab_projected(const amp_ab_study *st, int a, int gpu);
/* Arm a's weight-GEMM FLOPs by format, "FP8 94%, BF16 6%"; "" when unknown. */
void amp_ab_flop_mix(char *buf, size_t cap, const amp_ab_study *st, int a);

#endif
