/* [dist] sync_batchnorm: batch norm over the global batch on several ranks
 * (session_sync_bn.c). */
#ifndef AMP_SESSION_SYNC_BN_H
#define AMP_SESSION_SYNC_BN_H

#include "session.h"

/* After the gradient transport is open: turns the hook on when several
 * ranks run with [dist] sync_batchnorm. */
void amp_session_sync_bn_open(amp_session *s);
/* The hook for the model's training forward and backward, or NULL (alone,
 * or sync_batchnorm off). */
const amp_allsum *amp_session_sync_bn(const amp_session *s);

#endif
