/* See out_file.h. */
#include "out_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------- temporaries */

#define TMP_SLOTS 32
#define TMP_SUFFIX ".partial"
#define TMP_XS "XXXXXX"

/* Written by normal code, read by a signal handler: a slot's path is
 * complete before `used` is set, and `used` is cleared before the path is
 * reused. */
static char tmp_paths[TMP_SLOTS][PATH_MAX + 32];
static volatile sig_atomic_t tmp_used[TMP_SLOTS];

static void tmp_track(const char *path) {
    for (int i = 0; i < TMP_SLOTS; i++)
        if (!tmp_used[i]) {
            snprintf(tmp_paths[i], sizeof tmp_paths[i], "%s", path);
            tmp_used[i] = 1;
            return;
        }
    /* More than TMP_SLOTS at once does not happen; an untracked temporary
     * is still removed on every ordinary failure path. */
}

void amp_tmp_forget(const char *tmp) {
    for (int i = 0; i < TMP_SLOTS; i++)
        if (tmp_used[i] && strcmp(tmp_paths[i], tmp) == 0) tmp_used[i] = 0;
}

void amp_tmp_unlink_all(void) {
    for (int i = 0; i < TMP_SLOTS; i++)
        if (tmp_used[i]) unlink(tmp_paths[i]);
}

/* The umask, read once (it can only be read by setting it). */
static mode_t file_mode(void) {
    static mode_t mode;
    static int known;
    if (!known) {
        mode_t u = umask(022);
        umask(u);
        mode = 0666 & ~u;
        known = 1;
    }
    return mode;
}

int amp_tmp_create(const char *final, char *tmp, size_t tmplen, char *err, size_t errlen) {
    const char *slash = strrchr(final, '/');
    int dirlen = slash ? (int)(slash - final + 1) : 0;
    const char *base = slash ? slash + 1 : final;
    int n = snprintf(tmp, tmplen, "%.*s.%s." TMP_XS TMP_SUFFIX, dirlen, final, base);
    if (!base[0] || n < 0 || (size_t)n >= tmplen) {
        snprintf(err, errlen, "%s: the path is too long or names no file", final);
        if (tmplen) tmp[0] = '\0';
        return -1;
    }
    int fd = mkostemps(tmp, (int)strlen(TMP_SUFFIX), O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary beside it: %s", final, strerror(errno));
        tmp[0] = '\0';
        return -1;
    }
    tmp_track(tmp);
    /* mkstemp makes it 0600; an output file gets what fopen would give it. */
    if (fchmod(fd, file_mode()) != 0) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        amp_tmp_forget(tmp);
        snprintf(err, errlen, "%s: cannot set its mode: %s", tmp, strerror(saved));
        tmp[0] = '\0';
        return -1;
    }
    return fd;
}

int amp_tmp_is_temp_of(const char *name, const char *base) {
    size_t nb = strlen(base), nx = strlen(TMP_XS), ns = strlen(TMP_SUFFIX);
    return name[0] == '.' && strncmp(name + 1, base, nb) == 0 && name[1 + nb] == '.' &&
           strlen(name) == 1 + nb + 1 + nx + ns && strcmp(name + 2 + nb + nx, TMP_SUFFIX) == 0;
}

void amp_tmp_remove_stale(const char *dir, const char *const *bases) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        for (int i = 0; bases[i]; i++)
            if (amp_tmp_is_temp_of(e->d_name, bases[i])) {
                char p[PATH_MAX + 300];
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
                break;
            }
    closedir(d);
}

/* --------------------------------------------------------- output files */

static void dir_of(char *out, size_t outlen, const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, outlen, ".");
    else
        snprintf(out, outlen, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

int amp_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int amp_out_open(amp_out_file *o, const char *dir, const char *name, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    if (snprintf(o->final, sizeof o->final, "%s/%s", dir, name) >= (int)sizeof o->final) {
        snprintf(err, errlen, "%s/%s: the path is too long", dir, name);
        return -1;
    }
    int fd = amp_tmp_create(o->final, o->temp, sizeof o->temp, err, errlen);
    if (fd < 0) return -1;
    o->f = fdopen(fd, "w");
    if (!o->f) {
        snprintf(err, errlen, "%s: cannot write: %s", o->temp, strerror(errno));
        close(fd);
        amp_out_abort(o);
        return -1;
    }
    return 0;
}

/* Everything written so far reaches the disk. */
static int flush_sync(amp_out_file *o) {
    return fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0 ? -1 : 0;
}

int amp_out_publish(amp_out_file *o, char *err, size_t errlen) {
    if (o->published) return 0;
    if (flush_sync(o) != 0 || rename(o->temp, o->final) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", o->final, strerror(errno));
        return -1;
    }
    amp_tmp_forget(o->temp);
    o->temp[0] = '\0';
    o->published = 1;
    char dir[PATH_MAX];
    dir_of(dir, sizeof dir, o->final);
    if (amp_fsync_dir(dir) != 0) {
        snprintf(err, errlen, "%s: cannot sync the folder %s: %s", o->final, dir, strerror(errno));
        return -1;
    }
    return 0;
}

int amp_out_commit(amp_out_file *o, char *err, size_t errlen) {
    int bad = flush_sync(o) != 0;
    int saved = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    o->f = NULL;
    if (!bad && !o->published && rename(o->temp, o->final) != 0) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        snprintf(err, errlen, "%s: write failed: %s", o->final, strerror(saved));
        if (o->temp[0]) {
            unlink(o->temp);
            amp_tmp_forget(o->temp);
            o->temp[0] = '\0';
        }
        return -1;
    }
    if (o->temp[0]) amp_tmp_forget(o->temp);
    o->temp[0] = '\0';
    return 0;
}

void amp_out_abort(amp_out_file *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->temp[0]) {
        unlink(o->temp);
        amp_tmp_forget(o->temp);
        o->temp[0] = '\0';
    }
}

int amp_out_check_inputs(const char *dir, const char *const *names, const char *const *inputs,
                         int ninputs, char *err, size_t errlen) {
    for (int i = 0; names[i]; i++) {
        char out[PATH_MAX + 64];
        struct stat so, si;
        snprintf(out, sizeof out, "%s/%s", dir, names[i]);
        if (stat(out, &so) != 0) continue; /* not there: nothing to destroy */
        for (int k = 0; k < ninputs; k++)
            if (inputs[k] && stat(inputs[k], &si) == 0 && si.st_dev == so.st_dev &&
                si.st_ino == so.st_ino) {
                snprintf(err, errlen,
                         "%s is an input of this run (%s): the run would write its output %s over "
                         "it; choose another output folder, or copy the input elsewhere first",
                         out, inputs[k], names[i]);
                return -1;
            }
    }
    return 0;
}

/* ------------------------------------------------------------- helpers */

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
