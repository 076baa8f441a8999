/* mkdir -p: below both io/ (run folders) and backend/ (the GEMM path cache). */
#ifndef AMP_MKDIR_P_H
#define AMP_MKDIR_P_H

#include <stddef.h>

/* mkdir -p with mode 0755. 0, or -1 with "path: why" in err (an empty path
 * is an error). */
int amp_mkdir_p(const char *path, char *err, size_t errlen);

#endif
