/* See run_lock.h. */
#include "io/run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/out_file.h"

/* What the holder wrote: "PID what\n" (empty while it is being written). */
static void read_holder(int fd, char *out, size_t outlen) {
    char buf[128];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    out[0] = '\0';
    if (n <= 0) return;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    long pid = 0;
    char what[32] = "";
    if (sscanf(buf, "%ld %31s", &pid, what) >= 1 && pid > 0)
        snprintf(out, outlen, "PID %ld%s%s", pid, what[0] ? ", amptrain " : "", what);
}

int amp_run_lock_acquire(amp_run_lock *l, const char *dir, const char *what, char *err,
                         size_t errlen) {
    l->fd = -1;
    if (snprintf(l->path, sizeof l->path, "%s/%s", dir, AMP_RUN_LOCK_NAME) >= (int)sizeof l->path) {
        snprintf(err, errlen, "%s: the path is too long", dir);
        return -1;
    }
    /* The holder removes the file when it is done, so the file we lock may
     * have been unlinked between our open and our flock: lock, then check
     * that the name still leads to that file, or start again. */
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot create the run folder's lock file: %s", l->path,
                     strerror(errno));
            return -1;
        }
        struct stat a, b;
        if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
            snprintf(err, errlen, "%s: not a regular file; remove it", l->path);
            close(fd);
            return -1;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int saved = errno;
            if (saved != EWOULDBLOCK && saved != EINTR) {
                snprintf(err, errlen, "%s: cannot lock: %s", l->path, strerror(saved));
                close(fd);
                return -1;
            }
            char holder[96] = "";
            /* The holder writes its PID right after locking; give it a moment. */
            for (int i = 0; i < 50 && !holder[0]; i++) {
                read_holder(fd, holder, sizeof holder);
                if (!holder[0]) usleep(2000);
            }
            close(fd);
            snprintf(err, errlen,
                     "%s is in use by another process (%s; lock file %s): two runs in one folder "
                     "would mix their files; wait for it to finish or stop it, or choose another "
                     "output folder",
                     dir, holder[0] ? holder : "its PID is not written yet", l->path);
            return 1;
        }
        if (stat(l->path, &b) != 0 || b.st_dev != a.st_dev || b.st_ino != a.st_ino) {
            close(fd); /* released and removed by its last holder: take the new one */
            continue;
        }
        char line[64];
        int n = snprintf(line, sizeof line, "%ld %s\n", (long)getpid(), what);
        if (ftruncate(fd, 0) != 0 || amp_write_full(fd, line, (size_t)n) != 0) {
            snprintf(err, errlen, "%s: cannot write: %s", l->path, strerror(errno));
            close(fd);
            return -1;
        }
        l->fd = fd;
        return 0;
    }
    snprintf(err, errlen, "%s: the lock file keeps changing; is another program removing it?",
             l->path);
    return -1;
}

void amp_run_lock_release(amp_run_lock *l) {
    if (l->fd < 0) return;
    /* Unlink while still holding the lock: a waiter that opened the old file
     * then sees the name gone and starts again. */
    unlink(l->path);
    close(l->fd);
    l->fd = -1;
}
