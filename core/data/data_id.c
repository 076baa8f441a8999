#include "data_id.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io/file.h"
#include "util/log.h"
#include "util/sha256.h"

static int64_t mtime_ns(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

void amp_data_source_note(amp_data_source *src, const char *path, const struct stat *st) {
    snprintf(src->path, sizeof src->path, "%s", path);
    src->size = (uint64_t)st->st_size;
    src->dev = (uint64_t)st->st_dev;
    src->ino = (uint64_t)st->st_ino;
    src->mtime_ns = mtime_ns(st);
}

int amp_data_source_check(const amp_data_source *src, int *fd_out, char *err, size_t errlen) {
    struct stat st;
    int fd = amp_file_open_read(src->path, &st, err, errlen);
    if (fd < 0) return -1;
    if ((uint64_t)st.st_size != src->size || (uint64_t)st.st_dev != src->dev ||
        (uint64_t)st.st_ino != src->ino || mtime_ns(&st) != src->mtime_ns) {
        amp_set_err(err, errlen, "%s changed while the run used it (it was replaced or written "
                    "to): the data cannot be fingerprinted; leave the data files alone during a run",
                    src->path);
        close(fd);
        return -1;
    }
    if (fd_out) *fd_out = fd;
    else close(fd);
    return 0;
}

int amp_data_source_sha256(const amp_data_source *src, char hex[65], char *err, size_t errlen) {
    int fd;
    if (amp_data_source_check(src, &fd, err, errlen) != 0) return -1;
    amp_sha256 s;
    amp_sha256_init(&s);
    unsigned char buf[1 << 16];
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            amp_set_err(err, errlen, "%s: cannot read: %s", src->path, strerror(errno));
            close(fd);
            return -1;
        }
        if (got == 0) break;
        amp_sha256_update(&s, buf, (size_t)got);
    }
    close(fd);
    amp_sha256_final_hex(&s, hex);
    return 0;
}

/* Line i (0-based) of text[0..len) into out ("" past the end). */
static void nth_line(const char *text, size_t len, size_t i, char *out, size_t outlen) {
    size_t at = 0;
    for (; i > 0 && at < len; i--) {
        const char *nl = memchr(text + at, '\n', len - at);
        at = nl ? (size_t)(nl - text) + 1 : len;
    }
    size_t end = at;
    while (end < len && text[end] != '\n') end++;
    snprintf(out, outlen, "%.*s", (int)(end - at), text + at);
}

static size_t count_lines(const char *text, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += text[i] == '\n';
    return n + (len > 0 && text[len - 1] != '\n');
}

/* "file <sha256> <bytes> <path>" into its parts; 0, or -1 for another line. */
static int file_line(const char *line, char sha[65], unsigned long long *size, const char **path) {
    int used = 0;
    if (sscanf(line, "file %64s %llu %n", sha, size, &used) != 2 || used == 0) return -1;
    *path = line + used;
    return 0;
}

int amp_data_id_compare(const char *saved, size_t saved_len, const char *now, char *err,
                        size_t errlen) {
    size_t now_len = strlen(now), na = count_lines(saved, saved_len), nb = count_lines(now, now_len);
    for (size_t i = 0; i < (na > nb ? na : nb); i++) {
        char a[4300], b[4300], sa[65], sb[65];
        nth_line(saved, saved_len, i, a, sizeof a);
        nth_line(now, now_len, i, b, sizeof b);
        if (strcmp(a, b) == 0) continue;
        unsigned long long za, zb;
        const char *pa, *pb;
        if (file_line(a, sa, &za, &pa) == 0 && file_line(b, sb, &zb, &pb) == 0 &&
            (strcmp(sa, sb) != 0 || za != zb))
            amp_set_err(err, errlen,
                        "the data differs from the checkpoint's: %s has sha256 %s (%llu bytes), "
                        "but the checkpoint's run trained on %s with sha256 %s (%llu bytes); "
                        "restore that file, or start a new run in another folder",
                        pb, sb, zb, pa, sa, za);
        else if (file_line(a, sa, &za, &pa) == 0 && file_line(b, sb, &zb, &pb) == 0)
            continue; /* the same bytes at another path: [data] path is the config's to check */
        else
            amp_set_err(err, errlen, "the data differs from the checkpoint's: it recorded '%s', "
                        "this run's data is '%s'; resume with the data the run trained on, or "
                        "start a new run in another folder",
                        a[0] ? a : "(nothing)", b[0] ? b : "(nothing)");
        return -1;
    }
    return 0;
}
