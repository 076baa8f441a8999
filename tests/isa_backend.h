/* A CPU backend on one instruction-set path (AMPTRAIN_ISA set to its
 * name), for tests that check every path this CPU has:
 *   for (int isa = AMP_ISA_GENERIC; isa <= (int)amp_isa_detect(); isa++) ...
 * NULL, with the reason on stderr, when it cannot be made. The includer
 * defines _POSIX_C_SOURCE (setenv) before any header. */
#ifndef AMP_TEST_ISA_BACKEND_H
#define AMP_TEST_ISA_BACKEND_H

#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu_isa.h"

static inline amp_backend *amp_test_backend_on(int isa) {
    char err[512];
    if (setenv("AMPTRAIN_ISA", amp_isa_name((amp_isa)isa), 1) != 0) {
        fprintf(stderr, "cannot set AMPTRAIN_ISA\n");
        return NULL;
    }
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) fprintf(stderr, "no CPU backend on path %s: %s\n", amp_isa_name((amp_isa)isa), err);
    return be;
}

#endif
