/* Writing output files so that no reader ever sees half of one: each file is
 * written as NAME.partial and renamed into place only when it is complete.
 * Also the two small file-system helpers the writers share. */
#ifndef AMP_OUT_FILE_H
#define AMP_OUT_FILE_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

typedef struct amp_out_file {
    char final[PATH_MAX];
    char temp[PATH_MAX + 16];
    FILE *f;
} amp_out_file;

/* Opens DIR/NAME.partial for writing. 0, or -1 with "path: why" in err. */
int amp_out_open(amp_out_file *o, const char *dir, const char *name, char *err, size_t errlen);
/* Closes and renames onto DIR/NAME; on any write error the temporary is
 * removed and -1 returned with the reason in err. */
int amp_out_commit(amp_out_file *o, char *err, size_t errlen);
/* Closes and removes the temporary (safe on a zeroed or committed struct). */
void amp_out_abort(amp_out_file *o);

/* mkdir -p with mode 0755. 0, or -1 with "path: why" in err. */
int amp_mkdir_p(const char *path, char *err, size_t errlen);

/* write(2) until all n bytes are out, in pieces of at most 64 KiB, retrying
 * short writes and EINTR. 0, or -1 with errno set. */
int amp_write_full(int fd, const void *buf, size_t n);

#endif
