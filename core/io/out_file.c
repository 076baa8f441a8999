/* See out_file.h. */
#include "io/out_file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int amp_out_open(amp_out_file *o, const char *dir, const char *name, char *err, size_t errlen) {
    snprintf(o->final, sizeof o->final, "%s/%s", dir, name);
    snprintf(o->temp, sizeof o->temp, "%s.partial", o->final);
    o->f = fopen(o->temp, "w");
    if (!o->f) {
        snprintf(err, errlen, "%s: cannot write: %s", o->temp, strerror(errno));
        return -1;
    }
    return 0;
}

int amp_out_commit(amp_out_file *o, char *err, size_t errlen) {
    int bad = ferror(o->f);
    if (fclose(o->f) != 0) bad = 1;
    o->f = NULL;
    if (bad || rename(o->temp, o->final) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", o->final, strerror(errno));
        unlink(o->temp);
        return -1;
    }
    return 0;
}

void amp_out_abort(amp_out_file *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->temp[0]) unlink(o->temp);
}

int amp_mkdir_p(const char *path, char *err, size_t errlen) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "%s: cannot create the folder: %s", buf, strerror(errno));
                return -1;
            }
            *p = c;
            if (c == '\0') break;
        }
    }
    return 0;
}

int amp_write_full(int fd, const void *buf, size_t n) {
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n > (1u << 16) ? (1u << 16) : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}
