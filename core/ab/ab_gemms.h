/* An arm's weight GEMMs from its opened session (ab_gemms.c). */
#ifndef AMP_AB_GEMMS_H
#define AMP_AB_GEMMS_H

#include "ab/ab.h"
#include "train/session.h"

/* Fills arm->gemm / ngemm (malloc'd; the caller frees arm->gemm): each
 * layer that runs GEMMs and has a 2-D ".weight" tensor, or one tied to that
 * name (the GPT's lm_head), with its size and the policy's GEMM dtype.
 * 0, or -1 when out of memory. */
int amp_ab_keep_gemms(amp_ab_arm *arm, const amp_session *s);

#endif
