#include "io/checkpoint_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "io/file.h"
#include "util/log.h"

int amp_checkpoint_read_file(const char *path, uint8_t **buf, size_t *len, char *err,
                             size_t errlen) {
    *buf = NULL;
    *len = 0;
    struct stat st;
    char why[512];
    int fd = amp_file_open_read(path, &st, why, sizeof why);
    if (fd < 0) {
        /* why is "path: cannot read: ..."; the caller names the path. */
        size_t pl = strlen(path);
        const char *reason = strncmp(why, path, pl) == 0 && why[pl] == ':' ? why + pl + 2 : why;
        amp_set_err(err, errlen, "%s", reason);
        return -1;
    }
    uint64_t size = (uint64_t)st.st_size;
    uint8_t head[AMP_CKPT_HEAD_MAX];
    size_t n = size < sizeof head ? (size_t)size : sizeof head;
    if (amp_file_pread_full(fd, head, n, 0) != 0) {
        amp_set_err(err, errlen, "cannot read: %s",
                    errno ? strerror(errno) : "the file shrank while read");
        close(fd);
        return -1;
    }
    if (amp_checkpoint_check_head(head, n, size, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    if (size > SIZE_MAX - 1) {
        amp_set_err(err, errlen, "%llu bytes do not fit in memory", (unsigned long long)size);
        close(fd);
        return -1;
    }
    uint8_t *p = malloc(size ? (size_t)size : 1);
    if (!p) {
        amp_set_err(err, errlen, "out of host memory (%llu bytes)", (unsigned long long)size);
        close(fd);
        return -1;
    }
    /* The header was checked against this size; a file that changed since
     * is judged by the parser, which checks everything again. */
    if (amp_file_pread_full(fd, p, (size_t)size, 0) != 0) {
        amp_set_err(err, errlen, "cannot read: %s",
                    errno ? strerror(errno) : "the file shrank while read");
        free(p);
        close(fd);
        return -1;
    }
    close(fd);
    *buf = p;
    *len = (size_t)size;
    return 0;
}
