#include "io/checkpoint_store.h"

#include "io/checkpoint_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "util/out_file.h"

void amp_ckpt_store_path(char *out, size_t outlen, const char *dir, int64_t step) {
    snprintf(out, outlen, "%s/ckpt-%08lld.amp", dir, (long long)step);
}

/* "ckpt-<step>.amp" -> step; -1 for any other name. Only the name
 * amp_ckpt_store_path writes counts (8 digits, more only without a leading
 * zero): "ckpt-000000150.amp" would otherwise list as step 150 and be read,
 * and pruned, as the different file ckpt-00000150.amp. */
static int64_t parse_name(const char *name) {
    if (strncmp(name, "ckpt-", 5) != 0) return -1;
    const char *p = name + 5;
    int64_t v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 18) {
        v = v * 10 + (*p - '0');
        p++;
        digits++;
    }
    int canonical = digits == 8 || (digits > 8 && name[5] != '0');
    return canonical && strcmp(p, ".amp") == 0 ? v : -1;
}

/* Left by a writer killed between create and rename: ".ckpt-*.partial"
 * (amp_tmp_create's names), or ".ckpt-*.tmp" (older amptrain's). */
static int is_temp_name(const char *name) {
    size_t n = strlen(name);
    return strncmp(name, ".ckpt-", 6) == 0 &&
           ((n > 10 && strcmp(name + n - 4, ".tmp") == 0) ||
            (n > 14 && strcmp(name + n - 8, ".partial") == 0));
}

static int cmp_desc(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

int amp_ckpt_store_list(const char *dir, int64_t **steps, size_t *n, char *err, size_t errlen) {
    *steps = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: cannot list the checkpoints: %s", dir, strerror(errno));
        return -1;
    }
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t step = parse_name(e->d_name);
        if (step < 0) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *q = realloc(*steps, cap * sizeof *q);
            if (!q) {
                closedir(d);
                free(*steps);
                *steps = NULL;
                *n = 0;
                snprintf(err, errlen, "out of host memory");
                return -1;
            }
            *steps = q;
        }
        (*steps)[(*n)++] = step;
    }
    closedir(d);
    if (*n) qsort(*steps, *n, sizeof **steps, cmp_desc);
    return 0;
}

static void remove_stale_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[PATH_MAX + 300];
    while ((e = readdir(d)) != NULL) {
        if (!is_temp_name(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

int amp_ckpt_store_write(const char *dir, int64_t step, const void *buf, size_t len, char *err,
                         size_t errlen) {
    char final[PATH_MAX], temp[PATH_MAX + 32] = "";
    amp_ckpt_store_path(final, sizeof final, dir, step);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create the checkpoint folder: %s", dir, strerror(errno));
        return -1;
    }
    remove_stale_temps(dir);
    const char *what = "cannot create";
    char why[PATH_MAX + 128] = "";
    int fd = amp_tmp_create(final, temp, sizeof temp, why, sizeof why);
    if (fd >= 0) {
        what = "cannot write";
        if (amp_write_full(fd, buf, len) == 0) {
            what = "cannot sync";
            if (fsync(fd) == 0) {
                what = "cannot close";
                int rc = close(fd);
                fd = -1;
                if (rc == 0) {
                    what = "cannot rename into place";
                    if (rename(temp, final) == 0) {
                        amp_tmp_forget(temp);
                        /* The rename is durable only once the folder is synced. */
                        if (amp_fsync_dir(dir) != 0) {
                            snprintf(err, errlen, "%s: cannot sync the folder %s: %s", final, dir,
                                     strerror(errno));
                            return -1;
                        }
                        what = NULL;
                    }
                }
            }
        }
    }
    if (what) {
        int saved = errno;
        if (fd >= 0) close(fd);
        if (temp[0]) {
            unlink(temp);
            amp_tmp_forget(temp);
        }
        if (why[0]) /* amp_tmp_create said why */
            snprintf(err, errlen, "%s (the earlier checkpoints in %s are untouched)", why, dir);
        else
            snprintf(err, errlen,
                     "%s: %s the checkpoint: %s (the earlier checkpoints in %s are untouched; make "
                     "room, then continue the run with --resume)",
                     final, what, strerror(saved), dir);
        return -1;
    }
    return 0;
}

int amp_ckpt_store_prune(const char *dir, int64_t keep, const int64_t *valid, size_t nvalid,
                         char *err, size_t errlen) {
    if (keep <= 0) return 0;
    int64_t *steps = NULL;
    size_t n = 0;
    if (amp_ckpt_store_list(dir, &steps, &n, err, errlen) != 0) return -1;
    /* Newest first: a checkpoint goes only once `keep` newer ones are known
     * valid. A damaged or unchecked newer one never counts, so the one a
     * resume fell back to stays until the run has written `keep` past it. */
    int64_t newer_valid = 0;
    for (size_t i = 0; i < n; i++) {
        int known = 0;
        for (size_t k = 0; k < nvalid && !known; k++) known = valid[k] == steps[i];
        if (newer_valid >= keep) {
            char old[PATH_MAX];
            amp_ckpt_store_path(old, sizeof old, dir, steps[i]);
            unlink(old);
        } else if (known) {
            newer_valid++;
        }
    }
    free(steps);
    return 0;
}

int amp_ckpt_store_load(const char *path, int64_t step, uint8_t **buf, size_t *len,
                        amp_checkpoint *ck, char *why, size_t whylen) {
    if (amp_ckpt_store_read(path, buf, len, why, whylen) != 0) {
        /* Listed, then gone before the open: a run pruned it meanwhile. An
         * open file stays readable whole after an unlink, so only a failed
         * read whose name has since vanished can be this race. */
        struct stat st;
        if (lstat(path, &st) != 0 && errno == ENOENT) {
            snprintf(why, whylen, "removed since it was listed (pruned by a running train)");
            return AMP_CKPT_GONE;
        }
        return -1;
    }
    if (amp_checkpoint_parse(*buf, *len, ck, why, whylen) != 0) goto bad;
    /* A renamed or copied file must not pass for another step's state. */
    if (ck->step != step) {
        snprintf(why, whylen, "the file name says step %lld but it holds step %lld",
                 (long long)step, (long long)ck->step);
        goto bad;
    }
    return 0;
bad:
    free(*buf);
    *buf = NULL;
    *len = 0;
    return -1;
}

int amp_ckpt_store_read(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen) {
    /* regular files only, header checked against the size before the body */
    return amp_checkpoint_read_file(path, buf, len, err, errlen);
}

int amp_ckpt_store_newest_valid(const char *dir, int64_t *step, char *err, size_t errlen) {
    int64_t *steps = NULL;
    size_t n = 0;
    if (amp_ckpt_store_list(dir, &steps, &n, err, errlen) != 0) return -1;
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) {
        char path[PATH_MAX], why[512];
        uint8_t *buf = NULL;
        size_t len = 0;
        amp_checkpoint ck;
        amp_ckpt_store_path(path, sizeof path, dir, steps[i]);
        if (amp_ckpt_store_load(path, steps[i], &buf, &len, &ck, why, sizeof why) == 0) {
            *step = steps[i];
            found = 1;
            free(buf);
        }
    }
    free(steps);
    return found;
}
