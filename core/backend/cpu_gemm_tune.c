/* GEMM paths by measurement, kept in a per-machine cache (cpu_gemm_tune.h).
 *
 * The cache file holds one line per shape,
 *   <key>\t<path>\t<candidate>=<ms>,<candidate>=<ms>...\n
 * appended under flock(LOCK_EX) with one write(), never rewritten: a line
 * that is not whole (a crash mid-write, another version's format) is
 * skipped. A process that needs a shape the table lacks takes the lock,
 * reads the file again (another process may have measured it meanwhile),
 * and measures only when the shape is still missing, so two runs started
 * together cannot choose differently. */
#include "backend/cpu_gemm_tune.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "process/env.h"
#include "util/log.h"
#include "util/mkdir_p.h"

/* Interleaved timing rounds per shape: at least MIN_ROUNDS, more while
 * they take under ROUND_BUDGET_S in all, never more than MAX_ROUNDS. The
 * fastest round of each candidate counts: the least disturbed by other
 * work on the machine. */
#define MIN_ROUNDS 3
#define MAX_ROUNDS 15
#define ROUND_BUDGET_S 0.05

static const char *const cand_names[AMP_GEMM_CAND_COUNT] = {
    "onednn-f32", "openblas-f32", "onednn-bf16", "onednn-f16", "reference-f64"};

const char *amp_gemm_cand_name(amp_gemm_cand c) {
    return c >= 0 && c < AMP_GEMM_CAND_COUNT ? cand_names[c] : "?";
}

int amp_gemm_cand_parse(const char *name) {
    for (int i = 0; i < AMP_GEMM_CAND_COUNT; i++)
        if (strcmp(name, cand_names[i]) == 0) return i;
    return -1;
}

struct amp_gemm_tuner {
    amp_gemm_choice *c;
    int n, cap;
    char path[4096]; /* the cache file; "" when there is none */
    int warned;      /* the cache's trouble was said once */
};

static const char *dtype_text(amp_dtype dt) {
    return dt == AMP_DTYPE_F16 ? "f16" : dt == AMP_DTYPE_BF16 ? "bf16" : "f32";
}

void amp_gemm_tune_key(const amp_gemm_desc *d, int threads, char *out, size_t len) {
    int b = d->batch > 1;
    snprintf(out, len, "%s %c%c %dx%dx%d ld%d,%d,%d b%d s%lld,%lld,%lld beta%d t%d",
             dtype_text(d->in_dtype), d->trans_a ? 'T' : 'N', d->trans_b ? 'T' : 'N', d->m, d->n,
             d->k, d->lda, d->ldb, d->ldc, b ? d->batch : 1, b ? (long long)d->stride_a : 0LL,
             b ? (long long)d->stride_b : 0LL, b ? (long long)d->stride_c : 0LL,
             d->beta != 0.0f, threads);
}

/* FNV-1a: the machine text as a short file name. */
static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void cache_path(amp_gemm_tuner *t, const char *machine) {
    const char *dir = amp_env_get("AMPTRAIN_GEMM_CACHE");
    char buf[4000];
    if (dir && strcmp(dir, "off") == 0) return; /* no file: every run measures */
    if (!dir) {
        const char *xdg = amp_env_get("XDG_CACHE_HOME"), *home = amp_env_get("HOME");
        if (xdg) snprintf(buf, sizeof buf, "%s/amptrain", xdg);
        else if (home) snprintf(buf, sizeof buf, "%s/.cache/amptrain", home);
        else return;
        dir = buf;
    }
    snprintf(t->path, sizeof t->path, "%s/gemm-paths-%016llx.tsv", dir,
             (unsigned long long)fnv1a(machine));
}

amp_gemm_tuner *amp_gemm_tuner_create(const char *machine) {
    amp_gemm_tuner *t = calloc(1, sizeof *t);
    if (t) cache_path(t, machine);
    return t;
}

void amp_gemm_tuner_destroy(amp_gemm_tuner *t) {
    if (!t) return;
    free(t->c);
    free(t);
}

const amp_gemm_choice *amp_gemm_tuner_choices(const amp_gemm_tuner *t, int *n) {
    *n = t->n;
    return t->c;
}

static amp_gemm_choice *find(amp_gemm_tuner *t, const char *key) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->c[i].key, key) == 0) return &t->c[i];
    return NULL;
}

static amp_gemm_choice *add(amp_gemm_tuner *t, const char *key) {
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        amp_gemm_choice *c = realloc(t->c, (size_t)cap * sizeof *c);
        if (!c) return NULL;
        t->c = c;
        t->cap = cap;
    }
    amp_gemm_choice *c = &t->c[t->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->key, sizeof c->key, "%s", key);
    return c;
}

static int among(amp_gemm_cand c, const amp_gemm_cand *cands, int n) {
    for (int i = 0; i < n; i++)
        if (cands[i] == c) return 1;
    return 0;
}

/* Says once what went wrong with the cache file: `what` and why. */
static void warn_cache(amp_gemm_tuner *t, const char *what, const char *why) {
    if (t->warned) return;
    t->warned = 1;
    amp_log(AMP_LOG_WARN,
            "GEMM path cache %s: %s: %s; this run keeps its measured paths to itself (set "
            "AMPTRAIN_GEMM_CACHE to a writable folder, or to 'off')",
            t->path, what, why);
}

/* mkdir -p of the cache file's folder; 0, or -1 with the warning said. */
static int make_folder(amp_gemm_tuner *t) {
    char dir[sizeof t->path], err[512];
    snprintf(dir, sizeof dir, "%s", t->path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = '\0';
    if (amp_mkdir_p(dir, err, sizeof err) == 0) return 0;
    warn_cache(t, "cannot make its folder", err);
    return -1;
}

/* One cache line into c (its key already set): 0, or -1 when the line is
 * not whole. */
static int parse_rest(char *rest, amp_gemm_choice *c) {
    char *tab = strchr(rest, '\t');
    if (!tab) return -1;
    *tab = '\0';
    if (amp_gemm_cand_parse(rest) < 0) return -1;
    snprintf(c->path, sizeof c->path, "%s", rest);
    c->ncand = 0;
    for (char *tok = strtok(tab + 1, ","); tok && c->ncand < AMP_GEMM_MAX_CANDS;
         tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq) return -1;
        *eq = '\0';
        char *end;
        double ms = strtod(eq + 1, &end);
        if (end == eq + 1 || amp_gemm_cand_parse(tok) < 0) return -1;
        snprintf(c->cand[c->ncand], sizeof c->cand[0], "%s", tok);
        c->ms[c->ncand++] = ms;
    }
    return c->ncand > 0 ? 0 : -1;
}

/* Reads the cache file's line for key into c (source "cache"): 1 found, 0 not. */
static int cache_lookup(FILE *f, const char *key, amp_gemm_choice *c) {
    char line[1024];
    size_t kl = strlen(key);
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') continue; /* not whole */
        line[len - 1] = '\0';
        if (strncmp(line, key, kl) != 0 || line[kl] != '\t') continue;
        amp_gemm_choice got = *c;
        if (parse_rest(line + kl + 1, &got) != 0) continue;
        *c = got;
        snprintf(c->source, sizeof c->source, "cache");
        return 1;
    }
    return 0;
}

static void cache_append(amp_gemm_tuner *t, int fd, const amp_gemm_choice *c) {
    char line[1024];
    int n = snprintf(line, sizeof line, "%s\t%s\t", c->key, c->path);
    for (int i = 0; i < c->ncand && n < (int)sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s%s=%.4f", i ? "," : "", c->cand[i],
                      c->ms[i]);
    if (n >= (int)sizeof line - 1) return;
    line[n++] = '\n';
    if (lseek(fd, 0, SEEK_END) < 0 || write(fd, line, (size_t)n) != n) warn_cache(t, "write", strerror(errno));
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Times cands in interleaved rounds into c; 0, or -1 when a run fails. */
static int measure(amp_gemm_choice *c, const amp_gemm_cand *cands, int n, amp_gemm_time_fn time,
                   void *ctx) {
    double best[AMP_GEMM_MAX_CANDS];
    for (int i = 0; i < n; i++) /* a first run of each: its primitive is made, its memory touched */
        if (time(ctx, cands[i]) < 0) return -1;
    double start = now_s();
    for (int r = 0; r < MAX_ROUNDS; r++) {
        for (int j = 0; j < n; j++) {
            int i = (r & 1) ? n - 1 - j : j; /* alternate the order: no candidate always first */
            double s = time(ctx, cands[i]);
            if (s < 0) return -1;
            if (r == 0 || s < best[i]) best[i] = s;
        }
        if (r + 1 >= MIN_ROUNDS && now_s() - start > ROUND_BUDGET_S) break;
    }
    int win = 0;
    for (int i = 0; i < n; i++) {
        if (best[i] < best[win]) win = i;
        snprintf(c->cand[i], sizeof c->cand[0], "%s", amp_gemm_cand_name(cands[i]));
        c->ms[i] = 1e3 * best[i];
    }
    c->ncand = n;
    snprintf(c->path, sizeof c->path, "%s", amp_gemm_cand_name(cands[win]));
    snprintf(c->source, sizeof c->source, "measured");
    return 0;
}

/* The choice and its candidates' times, in the debug log. */
static void say(const amp_gemm_choice *c) {
    char times[160] = "";
    for (int i = 0, at = 0; i < c->ncand && at < (int)sizeof times; i++)
        at += snprintf(times + at, sizeof times - (size_t)at, "%s%s %.4f ms", i ? ", " : "",
                       c->cand[i], c->ms[i]);
    amp_log(AMP_LOG_DEBUG, "GEMM %s: %s (%s: %s)", c->key, c->path, c->source, times);
}

int amp_gemm_tuner_choose(amp_gemm_tuner *t, const char *key, const amp_gemm_cand *cands, int n,
                          amp_gemm_time_fn time, void *ctx, amp_gemm_cand *out, char *err,
                          size_t errlen) {
    amp_gemm_choice *c = find(t, key);
    int added = 0;
    if (c) {
        int p = amp_gemm_cand_parse(c->path);
        if (among((amp_gemm_cand)p, cands, n)) {
            *out = (amp_gemm_cand)p;
            return 0;
        }
        /* a checkpoint's path this machine or setting lacks */
        amp_log(AMP_LOG_WARN,
                "the checkpoint ran GEMM shape '%s' on %s, which this run cannot (another CPU, "
                "library or gemm_path); choosing again: the numbers will not be bit-identical to "
                "an uninterrupted run",
                key, c->path);
        memset(c->path, 0, sizeof c->path);
    } else if (!(c = add(t, key))) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    } else {
        added = 1;
    }
    if (n == 1) {
        snprintf(c->path, sizeof c->path, "%s", amp_gemm_cand_name(cands[0]));
        snprintf(c->source, sizeof c->source, "only");
        *out = cands[0];
        say(c);
        return 0;
    }
    int fd = -1;
    FILE *f = NULL;
    if (t->path[0] && make_folder(t) == 0) {
        if ((fd = open(t->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
            warn_cache(t, "open", strerror(errno));
        else if (flock(fd, LOCK_EX) != 0) {
            warn_cache(t, "lock", strerror(errno));
            close(fd);
            fd = -1;
        } else if (!(f = fdopen(dup(fd), "r"))) {
            warn_cache(t, "read", strerror(errno));
        }
    }
    int rc = 0;
    amp_gemm_choice got = *c;
    if (f && cache_lookup(f, key, &got) &&
        among((amp_gemm_cand)amp_gemm_cand_parse(got.path), cands, n)) {
        *c = got;
    } else if (measure(c, cands, n, time, ctx) != 0) {
        rc = -1;
    } else if (fd >= 0) {
        cache_append(t, fd, c);
    }
    if (f) fclose(f);
    if (fd >= 0) close(fd); /* releases the lock */
    if (rc != 0) {
        if (added) t->n--; /* not chosen: the next call measures again */
        return -1;
    }
    *out = (amp_gemm_cand)amp_gemm_cand_parse(c->path);
    say(c);
    return 0;
}

int amp_gemm_tuner_preload(amp_gemm_tuner *t, const char *key, const char *path, char *err,
                           size_t errlen) {
    if (amp_gemm_cand_parse(path) < 0) {
        snprintf(err, errlen, "unknown GEMM path '%s' for shape '%s'", path, key);
        return -1;
    }
    amp_gemm_choice *c = find(t, key);
    if (!c && !(c = add(t, key))) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    snprintf(c->source, sizeof c->source, "checkpoint");
    c->ncand = 0;
    return 0;
}
