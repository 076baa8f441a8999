/* Regular files only, never a blocking open (see file.h). */
#include "io/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "util/log.h"

const char *amp_file_kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

static int refuse_kind(const char *path, mode_t mode, char *err, size_t errlen) {
    amp_set_err(err, errlen, "%s: cannot read: it is %s, not a regular file", path,
                amp_file_kind(mode));
    return -1;
}

int amp_file_open_read(const char *path, struct stat *st, char *err, size_t errlen) {
    struct stat pre, post;
    if (!path || !path[0]) {
        amp_set_err(err, errlen, "(empty path): cannot read: no file name given");
        return -1;
    }
    /* A device is refused before open: opening some has side effects. */
    if (stat(path, &pre) != 0) {
        amp_set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(pre.st_mode)) return refuse_kind(path, pre.st_mode, err, errlen);
    /* O_NONBLOCK: if the path became a FIFO since the stat, open returns at
     * once instead of waiting for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        amp_set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &post) != 0) {
        amp_set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(post.st_mode)) {
        close(fd);
        return refuse_kind(path, post.st_mode, err, errlen);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        amp_set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (st) *st = post;
    return fd;
}

FILE *amp_file_fopen_read(const char *path, struct stat *st, char *err, size_t errlen) {
    int fd = amp_file_open_read(path, st, err, errlen);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        amp_set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int amp_file_read_line(FILE *f, size_t max, char **buf, size_t *cap, size_t *len) {
    size_t n = 0;
    int c;
    errno = 0;
    while ((c = getc(f)) != EOF && c != '\n') {
        if (n == max) return -2;
        if (n + 1 >= *cap) {
            size_t nc = *cap ? 2 * *cap : 256;
            if (nc > max + 1) nc = max + 1;
            char *q = realloc(*buf, nc);
            if (!q) return -1;
            *buf = q;
            *cap = nc;
        }
        (*buf)[n++] = (char)c;
    }
    if (c == EOF && ferror(f)) {
        if (!errno) errno = EIO;
        return -1;
    }
    if (c == EOF && n == 0) return 0;
    if (!*buf) { /* an empty line before anything was allocated */
        *buf = malloc(1);
        if (!*buf) return -1;
        *cap = 1;
    }
    (*buf)[n] = '\0';
    *len = n;
    return 1;
}

int amp_file_pread_full(int fd, void *buf, size_t n, unsigned long long off) {
    unsigned char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) {
            errno = 0;
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (unsigned long long)r;
    }
    return 0;
}

int amp_file_read_all(const char *path, size_t max, char **buf, size_t *len, char *err,
                      size_t errlen) {
    *buf = NULL;
    *len = 0;
    struct stat st;
    int fd = amp_file_open_read(path, &st, err, errlen);
    if (fd < 0) return -1;
    if ((uint64_t)st.st_size > max) {
        amp_set_err(err, errlen, "%s: %llu bytes, more than the %zu this file may have", path,
                    (unsigned long long)st.st_size, max);
        close(fd);
        return -1;
    }
    /* st_size is a hint (files under /proc say 0): read to the end, but
     * never more than max + 1 bytes. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    if (cap < 4096) cap = 4096;
    if (cap > max + 1) cap = max + 1;
    char *p = malloc(cap + 1);
    if (!p) {
        amp_set_err(err, errlen, "%s: out of memory for %zu bytes", path, cap);
        close(fd);
        return -1;
    }
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                amp_set_err(err, errlen, "%s: more than the %zu bytes this file may have", path,
                            max);
                goto fail;
            }
            size_t nc = cap > max / 2 ? max + 1 : cap * 2;
            char *q = realloc(p, nc + 1);
            if (!q) {
                amp_set_err(err, errlen, "%s: out of memory for %zu bytes", path, nc);
                goto fail;
            }
            p = q;
            cap = nc;
        }
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            amp_set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
            goto fail;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    p[n] = '\0';
    *buf = p;
    *len = n;
    return 0;
fail:
    close(fd);
    free(p);
    return -1;
}

int amp_file_crc_prefix(int fd, uint64_t n, uint32_t *crc) {
    static unsigned char buf[1 << 16];
    uLong c = crc32(0L, Z_NULL, 0);
    uint64_t done = 0;
    while (done < n) {
        size_t want = n - done < sizeof buf ? (size_t)(n - done) : sizeof buf;
        ssize_t got = pread(fd, buf, want, (off_t)done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        c = crc32(c, buf, (uInt)got);
        done += (uint64_t)got;
    }
    *crc = (uint32_t)c;
    return 0;
}
