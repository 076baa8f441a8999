#include "views.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/json_read.h"
#include "convert.h"
#include "tb_event.h"

static const char tb_prefix[] = "events.out.tfevents.";

static double wall_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Writes b to o's end (at *len); on failure cuts o back to *len. */
static int put(amp_out_file *o, uint64_t *len, const amp_bytes *b, char *err, size_t errlen) {
    if (b->oom) {
        snprintf(err, errlen, "%s: out of host memory", o->final);
        return -1;
    }
    int fd = fileno(o->f);
    if (amp_write_full(fd, b->p, b->n) == 0) {
        *len += b->n;
        return 0;
    }
    snprintf(err, errlen, "%s: cannot write: %s", o->final, strerror(errno));
    if (ftruncate(fd, (off_t)*len) != 0 || lseek(fd, (off_t)*len, SEEK_SET) < 0) {
        size_t k = strlen(err);
        snprintf(err + k, errlen - k, " (and cannot cut it back: %s)", strerror(errno));
    }
    return -1;
}

static void cut_back(amp_out_file *o, uint64_t len) {
    int fd = fileno(o->f);
    if (ftruncate(fd, (off_t)len) != 0 || lseek(fd, (off_t)len, SEEK_SET) < 0) {
        /* put() said why the write failed; this file keeps a whole record more */
    }
}

/* Removes the event files in tbdir but `keep` (a name, or NULL), and the
 * folder when nothing else is in it (temporaries are left: this process's
 * own is one). */
static void remove_event_files(const char *tbdir, const char *keep) {
    DIR *d = opendir(tbdir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strncmp(n, tb_prefix, sizeof tb_prefix - 1) != 0 || (keep && strcmp(n, keep) == 0))
            continue;
        char p[PATH_MAX + 300];
        snprintf(p, sizeof p, "%s/%s", tbdir, n);
        unlink(p);
    }
    closedir(d);
    if (!keep) rmdir(tbdir); /* fails, harmlessly, when the user keeps files there */
}

/* Dead writers' temporaries only: the published files stay until a new one
 * replaces them. */
static void remove_stale_temps(const char *tbdir) {
    DIR *d = opendir(tbdir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        if (n[0] == '.' && strncmp(n + 1, tb_prefix, sizeof tb_prefix - 1) == 0 && len > 8 &&
            strcmp(n + len - 8, ".partial") == 0) {
            char p[PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s", tbdir, n);
            unlink(p);
        }
    }
    closedir(d);
}

int amp_views_open(amp_views *v, const char *outdir, char *err, size_t errlen) {
    snprintf(v->tbdir, sizeof v->tbdir, "%s/tensorboard", outdir);
    remove_stale_temps(v->tbdir);
    if (amp_out_open(&v->csv, outdir, "metrics.csv", err, errlen) != 0) return -1;
    v->open = 1;
    amp_bytes b = {0};
    amp_csv_header(&b);
    int rc = put(&v->csv, &v->csv_len, &b, err, errlen);
    amp_bytes_free(&b);
    if (rc != 0 || !v->tensorboard) return rc;
    if (amp_mkdir_p(v->tbdir, err, errlen) != 0) return -1;
    char host[128] = "localhost", name[300];
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++)
        if (*p == '/') *p = '_';
    double now = wall_now();
    snprintf(name, sizeof name, "%s%lld.%s", tb_prefix, (long long)now, host);
    if (amp_out_open(&v->tb, v->tbdir, name, err, errlen) != 0) return -1;
    amp_tb_version(&b, now);
    rc = put(&v->tb, &v->tb_len, &b, err, errlen);
    amp_bytes_free(&b);
    return rc;
}

int amp_views_add(amp_views *v, const char *text, size_t n, char *err, size_t errlen) {
    if (!v->open || n == 0) return 0;
    amp_bytes csv = {0}, tb = {0};
    double now = wall_now();
    int rc = 0;
    for (size_t at = 0; at < n && rc == 0;) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (text + at)) : n - at;
        char why[512];
        amp_jval *line = amp_json_parse(text + at, len, "metrics.jsonl", 0, why, sizeof why);
        if (!line || line->type != AMP_JOBJ) {
            snprintf(err, errlen, "%s: cannot read a metrics.jsonl line back: %s", v->csv.final,
                     line ? "not an object" : why);
            rc = -1;
        } else {
            rc = amp_csv_row(&csv, line, err, errlen);
            if (v->tensorboard) amp_tb_line(&tb, line, now);
        }
        amp_json_free(line);
        at += len + 1;
    }
    uint64_t csv0 = v->csv_len;
    if (rc == 0) rc = put(&v->csv, &v->csv_len, &csv, err, errlen);
    if (rc == 0 && v->tensorboard && put(&v->tb, &v->tb_len, &tb, err, errlen) != 0) {
        cut_back(&v->csv, csv0); /* the row goes with the record */
        v->csv_len = csv0;
        rc = -1;
    }
    amp_bytes_free(&csv);
    amp_bytes_free(&tb);
    return rc;
}

int amp_views_replay(amp_views *v, int fd, uint64_t len, char *err, size_t errlen) {
    size_t cap = 1u << 20;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    uint64_t at = 0;
    size_t have = 0; /* bytes of an unfinished line at buf's start */
    int rc = 0;
    while (rc == 0 && at < len) {
        if (have == cap) { /* a line longer than the buffer */
            char *p = realloc(buf, cap * 2);
            if (!p) {
                snprintf(err, errlen, "out of host memory");
                rc = -1;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t want = cap - have;
        if (want > len - at) want = (size_t)(len - at);
        ssize_t got = pread(fd, buf + have, want, (off_t)at);
        if (got <= 0) {
            snprintf(err, errlen, "cannot read metrics.jsonl back: %s",
                     got < 0 ? strerror(errno) : "it ends early");
            rc = -1;
            break;
        }
        at += (uint64_t)got;
        have += (size_t)got;
        size_t whole = have;
        while (whole > 0 && buf[whole - 1] != '\n') whole--;
        if (at == len) whole = have; /* the history ends with a whole line */
        rc = amp_views_add(v, buf, whole, err, errlen);
        memmove(buf, buf + whole, have - whole);
        have -= whole;
    }
    free(buf);
    return rc;
}

static const char *tb_name(const amp_views *v) {
    const char *slash = strrchr(v->tb.final, '/');
    return slash ? slash + 1 : v->tb.final;
}

int amp_views_publish(amp_views *v, char *err, size_t errlen) {
    if (!v->open) return 0;
    remove_event_files(v->tbdir, v->tensorboard ? tb_name(v) : NULL);
    if (amp_out_publish(&v->csv, err, errlen) != 0) return -1;
    return v->tensorboard ? amp_out_publish(&v->tb, err, errlen) : 0;
}

int amp_views_commit(amp_views *v, char *err, size_t errlen) {
    if (!v->open) return 0;
    if (!v->csv.published) remove_event_files(v->tbdir, v->tensorboard ? tb_name(v) : NULL);
    if (amp_out_commit(&v->csv, err, errlen) != 0) return -1;
    return v->tensorboard ? amp_out_commit(&v->tb, err, errlen) : 0;
}

void amp_views_abort(amp_views *v) {
    int kept = v->tb.published;
    amp_out_abort(&v->csv);
    amp_out_abort(&v->tb);
    if (v->tensorboard && !kept) rmdir(v->tbdir); /* made for nothing; fails when in use */
}

void amp_views_remove(amp_views *v) {
    if (v->csv.published) unlink(v->csv.final);
    if (v->tb.published) unlink(v->tb.final);
}
