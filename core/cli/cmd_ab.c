/* `amptrain ab A.ini B.ini [C.ini ...] [--seeds N] [--set s.k=v]...
 *                [--allow-diff] [--ranks N] [--out DIR]`
 *
 * A/B test of precision policies: every config (an arm) runs with the same
 * seeds; a seed fixes the initial weights and the data order (a model's
 * init_params and the batcher take only the seed, the epoch and the step),
 * so arms see the same start and the same batches. Runs are interleaved, the
 * order rotating per seed (A1 B1, B2 A2, ...), so that drift in the machine's
 * speed hits every arm alike and no arm always runs first.
 *
 * Each run is a child process, `amptrain train` itself (self_exe.h), with
 * its files kept in DIR/runs/<arm>/seed-<S>/ and its stderr in train.log
 * there; with --ranks N the child is `mpirun -np N amptrain train` (ab_ranks.h).
 * The study is then read back from those files into ab.json and
 * report.html. Configs that differ in more than [precision]/[scaler] are
 * refused (exit 2) unless --allow-diff is given. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ab/ab.h"
#include "ab/ab_progress.h"
#include "ab/ab_ranks.h"
#include "ab/ab_gemms.h"
#include "ab/ab_memory.h"
#include "ab/ab_scan.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "io/config.h"
#include "io/checkpoint_store.h"
#include "io/file.h"
#include "util/out_file.h"
#include "io/run_lock.h"
#include "train/session.h"
#include "util/clock.h"
#include "process/self_exe.h"

#define MAX_ARMS 16 /* configs a user names; a scan adds its groups' arms up to AMP_AB_MAX_ARMS */
#define MAX_SEEDS 1000

static const char usage_text[] =
    "usage: amptrain ab A.ini B.ini [C.ini ...] [--seeds N] [--set section.key=value]...\n"
    "                   [--allow-diff] [--metric auto|loss|acc] [--scan GROUPS] [--ranks N]\n"
    "                   [--tolerance X] [--out DIR]\n"
    "  runs every config with the same N seeds (default 3), interleaved, and writes\n"
    "  DIR/ab.json and DIR/report.html; the first config is the baseline\n"
    "  --seeds N    seeds per arm (default 3), the first config's [run] seed and on\n"
    "  --set section.key=value  overrides a key in every arm (any number of times)\n"
    "  --allow-diff compare configs that differ in more than [precision] and [scaler]\n"
    "  --out DIR    the study's folder (default runs/ab)\n"
    "  --metric  the verdict: validation loss (language models) or test accuracy\n"
    "            (classifiers); auto (default) follows the model\n"
    "  --scan    layer sensitivity: A.ini is the baseline policy, B.ini the candidate;\n"
    "            B also runs with each group of layers kept at A's precision. GROUPS:\n"
    "            blocks, layers, or comma-separated layer globs (`*` crosses dots)\n"
    "  --ranks   every run on N ranks (data parallel), started with the mpirun on PATH\n"
    "  --tolerance  how much worse than the baseline an arm's verdict may be (its whole\n"
    "            95% interval) to be recommended; default 0.005 for validation loss,\n"
    "            0.005 for test accuracy\n";

typedef struct ab_args {
    const char *configs[AMP_AB_MAX_ARMS];
    int nconfigs;
    /* per arm, applied after the user's --set (a scan's layer overrides), owned */
    char **arm_sets[AMP_AB_MAX_ARMS];
    int narm_sets[AMP_AB_MAX_ARMS];
    const char *scan;     /* --scan GROUPS, or NULL */
    amp_ab_group *groups, *skipped; /* the scan's groups to run, and to skip; owned */
    int ngroups, nskipped;
    const char **sets; /* [argc]: every --set, no fixed limit */
    int nsets;
    int seeds;
    int allow_diff;
    amp_ab_metric metric;
    int ranks;
    double tolerance; /* --tolerance; 0: the metric's default */
    amp_ab_launch launch; /* how a run starts (mpirun with --ranks N > 1) */
    const char *out;
} ab_args;

static int ab_opt(void *user, int opt, const char *arg) {
    ab_args *a = user;
    switch (opt) {
    case 'h':
        fputs(usage_text, stdout);
        return 1;
    case 's':
        a->sets[a->nsets++] = arg;
        return 0;
    case 'o':
        a->out = arg;
        return 0;
    case 'n': {
        char *end;
        errno = 0;
        long n = strtol(arg, &end, 10);
        if (errno || end == arg || *end || n < 1 || n > MAX_SEEDS) {
            fprintf(stderr, "amptrain ab: --seeds '%s': expected an integer in [1, %d]\n", arg,
                    MAX_SEEDS);
            return -1;
        }
        a->seeds = (int)n;
        return 0;
    }
    case 'd':
        a->allow_diff = 1;
        return 0;
    case 'S':
        a->scan = arg;
        return 0;
    case 'r': {
        char err[128];
        if (amp_ab_ranks_parse(&a->ranks, arg, err, sizeof err) != 0) {
            fprintf(stderr, "amptrain ab: %s\n", err);
            return -1;
        }
        return 0;
    }
    case 't': {
        char *end;
        errno = 0;
        double x = strtod(arg, &end);
        if (errno || end == arg || *end || !(x > 0) || !isfinite(x)) {
            fprintf(stderr, "amptrain ab: --tolerance '%s': expected a positive number\n", arg);
            return -1;
        }
        a->tolerance = x;
        return 0;
    }
    case 'm':
        if (strcmp(arg, "auto") == 0) a->metric = AMP_AB_METRIC_AUTO;
        else if (strcmp(arg, "loss") == 0) a->metric = AMP_AB_METRIC_LOSS;
        else if (strcmp(arg, "acc") == 0) a->metric = AMP_AB_METRIC_ACC;
        else {
            fprintf(stderr, "amptrain ab: --metric '%s': expected auto, loss or acc\n", arg);
            return -1;
        }
        return 0;
    case 1:
        if (!arg[0]) {
            fprintf(stderr, "amptrain ab: a config path is empty\n%s", usage_text);
            return -1;
        }
        if (a->nconfigs == MAX_ARMS) {
            fprintf(stderr, "amptrain ab: more than %d configs\n", MAX_ARMS);
            return -1;
        }
        a->configs[a->nconfigs++] = arg;
        return 0;
    }
    return -1;
}

/* 0, 1 (--help printed), or -1 (a usage error, printed). On 0, a->sets is
 * malloc'd: the caller frees it. */
static int parse_args(ab_args *a, int argc, char **argv) {
    static const struct option opts[] = {{"set", required_argument, NULL, 's'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"seeds", required_argument, NULL, 'n'},
                                         {"allow-diff", no_argument, NULL, 'd'},
                                         {"metric", required_argument, NULL, 'm'},
                                         {"scan", required_argument, NULL, 'S'},
                                         {"ranks", required_argument, NULL, 'r'},
                                         {"tolerance", required_argument, NULL, 't'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    a->seeds = 3;
    a->ranks = 1;
    a->out = "runs/ab";
    a->sets = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a->sets);
    if (!a->sets) {
        fprintf(stderr, "amptrain ab: out of memory\n");
        return -1;
    }
    int rc = amp_cli_parse("ab", argc, argv, "h", opts, ab_opt, a, usage_text);
    if (rc == 0 && a->nconfigs < 2) {
        fprintf(stderr, "amptrain ab: needs at least two configs to compare\n%s", usage_text);
        rc = -1;
    }
    if (rc == 0 && a->scan && a->nconfigs != 2) {
        fprintf(stderr, "amptrain ab: --scan takes two configs, the baseline policy and the "
                        "candidate; got %d\n", a->nconfigs);
        rc = -1;
    }
    if (rc != 0) {
        free(a->sets);
        a->sets = NULL;
    }
    return rc;
}

/* ------------------------------------------------------------ configs */

typedef struct entry {
    char *section, *key, *value, *origin;
} entry;

typedef struct arm_cfg { /* what validation learnt about one config */
    entry *e;
    size_t n, cap;
    uint64_t seed;
    char **layers;    /* [nlayers] the model's layer names */
    amp_layer_precision *prec; /* [nlayers] what the policy chose for each */
    int nlayers;
} arm_cfg;

static int add_entry(void *user, const char *section, const char *key, const char *value,
                     const char *origin) {
    arm_cfg *c = user;
    if (c->n == c->cap) {
        size_t nc = c->cap ? 2 * c->cap : 64;
        entry *p = realloc(c->e, nc * sizeof *p);
        if (!p) return -1;
        c->e = p;
        c->cap = nc;
    }
    entry *e = &c->e[c->n];
    e->section = strdup(section);
    e->key = strdup(key);
    e->value = strdup(value);
    e->origin = strdup(origin);
    if (!e->section || !e->key || !e->value || !e->origin) {
        free(e->section);
        free(e->key);
        free(e->value);
        free(e->origin);
        return -1;
    }
    c->n++;
    return 0;
}

static void arm_cfg_free(arm_cfg *c) {
    for (size_t i = 0; i < c->n; i++) {
        free(c->e[i].section);
        free(c->e[i].key);
        free(c->e[i].value);
        free(c->e[i].origin);
    }
    free(c->e);
    for (int l = 0; l < c->nlayers; l++) free(c->layers[l]);
    free(c->layers);
    free(c->prec);
}

/* The layers and the policy's choice for each: what a scan groups and keeps. */
static int keep_layers(arm_cfg *c, const amp_session *s) {
    c->layers = calloc((size_t)s->nlayers + 1, sizeof *c->layers);
    c->prec = calloc((size_t)s->nlayers + 1, sizeof *c->prec);
    if (!c->layers || !c->prec) return -1;
    for (int l = 0; l < s->nlayers; l++) {
        if (!(c->layers[l] = strdup(s->layer_ptrs[l]))) return -1;
        c->prec[l] = s->model->prec[l];
        c->nlayers = l + 1;
    }
    return 0;
}

static const entry *find_entry(const arm_cfg *c, const char *section, const char *key) {
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->e[i].section, section) == 0 && strcmp(c->e[i].key, key) == 0) return &c->e[i];
    return NULL;
}

/* Opens the config exactly as `train` would (plugins, data and model
 * included), so a bad config fails here and not after an hour of runs. */
static int validate(const ab_args *a, int i, amp_ab_arm *arm, arm_cfg *ac, char *err,
                    size_t errlen) {
    amp_config *cfg = amp_config_load(a->configs[i], err, errlen);
    if (!cfg) return 2;
    for (int k = 0; k < a->nsets + a->narm_sets[i]; k++)
        if (amp_config_set(cfg, k < a->nsets ? a->sets[k] : a->arm_sets[i][k - a->nsets], err,
                           errlen) != 0) {
            amp_config_free(cfg);
            return 2;
        }
    amp_session *s = NULL;
    int code = amp_session_open(&s, cfg, err, errlen);
    if (code == 0) {
        snprintf(arm->name, sizeof arm->name, "%s", s->set.name);
        snprintf(arm->config, sizeof arm->config, "%s", a->configs[i]);
        snprintf(arm->precision, sizeof arm->precision, "%s", s->precision.entry->name);
        snprintf(arm->scaler, sizeof arm->scaler, "%s", s->scaler.entry->name);
        ac->seed = s->set.seed;
        /* one rank's steps per epoch / N: the epoch on N ranks (floors nest) */
        if (s->steps_per_epoch < a->ranks) {
            snprintf(err, errlen,
                     "%s: on %d ranks a step takes [data] batch_size %d x [train] accumulate "
                     "%lld x %d = %lld examples, but the training set has only %lld; lower "
                     "batch_size, accumulate or --ranks",
                     a->configs[i], a->ranks, s->set.batch_size, (long long)s->set.accumulate,
                     a->ranks,
                     (long long)s->set.batch_size * s->set.accumulate * a->ranks,
                     (long long)s->data_ops->train_rows(&s->data));
            code = 2;
        } else if (amp_config_each_resolved(cfg, add_entry, ac) != 0 || keep_layers(ac, s) != 0 ||
                   amp_ab_keep_gemms(arm, s) != 0) {
            snprintf(err, errlen, "out of host memory");
            code = 1;
        }
    }
    amp_session_close(s);
    amp_config_free(cfg);
    return code;
}

static void make_slug(char *out, size_t cap, const char *name) {
    size_t j = 0;
    for (const char *p = name; *p && j + 1 < cap; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || (c == '.' && j > 0);
        out[j++] = ok ? c : '_';
    }
    out[j] = '\0';
    if (j == 0) snprintf(out, cap, "arm");
}

/* Collects every compared key whose value is not the same in all arms. */
static int find_diffs(amp_ab_study *st, const arm_cfg *ac) {
    for (int a = 0; a < st->narms; a++)
        for (size_t i = 0; i < ac[a].n; i++) {
            const entry *e = &ac[a].e[i];
            if (amp_settings_ab_free(e->section, e->key)) continue;
            int seen = 0; /* already examined from an earlier arm */
            for (int p = 0; p < a && !seen; p++) seen = find_entry(&ac[p], e->section, e->key) != NULL;
            if (seen) continue;
            int differs = 0;
            for (int b = 0; b < st->narms; b++) {
                const entry *o = find_entry(&ac[b], e->section, e->key);
                differs |= !o || strcmp(o->value, e->value) != 0;
            }
            if (!differs) continue;
            amp_ab_diff *nd = realloc(st->diffs, (size_t)(st->ndiffs + 1) * sizeof *nd);
            if (!nd) return -1;
            st->diffs = nd;
            amp_ab_diff *d = &st->diffs[st->ndiffs];
            snprintf(d->section, sizeof d->section, "%s", e->section);
            snprintf(d->key, sizeof d->key, "%s", e->key);
            d->values = calloc((size_t)st->narms, sizeof *d->values);
            if (!d->values) return -1;
            st->ndiffs++;
            for (int b = 0; b < st->narms; b++) {
                const entry *o = find_entry(&ac[b], e->section, e->key);
                d->values[b] = strdup(o ? o->value : "(unset)");
                if (!d->values[b]) return -1;
            }
        }
    return 0;
}

static void print_diffs(const amp_ab_study *st, const arm_cfg *ac, FILE *f) {
    for (int d = 0; d < st->ndiffs; d++) {
        const amp_ab_diff *df = &st->diffs[d];
        fprintf(f, "  [%s] %s:", df->section, df->key);
        for (int a = 0; a < st->narms; a++) {
            const entry *o = find_entry(&ac[a], df->section, df->key);
            fprintf(f, "%s %s = %s (%s)", a ? "," : "", st->arms[a].name, df->values[a],
                    o ? o->origin : "not set");
        }
        fputc('\n', f);
    }
}

/* ------------------------------------------------------------ files */

/* Writes DIR/name through name.partial and a rename: never half a file. */
static int write_atomic(const char *dir, const char *name, int (*fn)(const amp_ab_study *, FILE *),
                        const amp_ab_study *st, char *err, size_t errlen) {
    amp_out_file o = {0};
    if (amp_out_open(&o, dir, name, err, errlen) != 0) return -1;
    if (fn(st, o.f) != 0) {
        snprintf(err, errlen, "%s: write failed", o.final);
        amp_out_abort(&o);
        return -1;
    }
    return amp_out_commit(&o, err, errlen);
}

/* The last non-empty line of a log, to show why a run failed. On several
 * ranks mpirun closes the log with its own boxed notes, so the line that
 * says most is, in this order: the last a rank wrote about itself failing
 * alone ("amptrain: rank 1: ..."), what mpirun saw ("mpirun noticed that
 * process rank 1 ... exited on signal 9"), the last amptrain message (an
 * error all ranks agreed on), the last line that is not a box's rule. */
static void last_line(const char *path, int ranks, char *out, size_t cap) {
    out[0] = '\0';
    char err[64];
    FILE *f = amp_file_fopen_read(path, NULL, err, sizeof err); /* a log, not a FIFO */
    if (!f) return;
    enum { RANK, MPIRUN, OURS, ANY, KINDS };
    char best[KINDS][1024];
    for (int k = 0; k < KINDS; k++) best[k][0] = '\0';
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        line[n] = '\0';
        char *p = strrchr(line, '\r'); /* progress bars redraw with \r */
        const char *l = p ? p + 1 : line;
        if (!l[0] || strspn(l, "-") == strlen(l)) continue;
        snprintf(best[ANY], sizeof best[ANY], "%s", l);
        if (ranks == 1) continue;
        if (strncmp(l, "amptrain: rank ", 15) == 0) snprintf(best[RANK], sizeof best[RANK], "%s", l);
        else if (strncmp(l, "mpirun noticed", 14) == 0)
            snprintf(best[MPIRUN], sizeof best[MPIRUN], "%s", l);
        else if (strncmp(l, "amptrain: ", 10) == 0 && strncmp(l, "amptrain: warning", 17) != 0)
            snprintf(best[OURS], sizeof best[OURS], "%s", l);
    }
    fclose(f);
    for (int k = 0; k < KINDS; k++)
        if (best[k][0]) {
            snprintf(out, cap, "%s", best[k]);
            return;
        }
}

/* Deletes DIR/checkpoints/ (only the files in it: it has no subfolders). */
static void remove_checkpoints(const char *dir) {
    char cdir[PATH_MAX + 16];
    snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
    DIR *d = opendir(cdir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[2 * PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", cdir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(cdir);
}

/* SIGINT, SIGTERM, SIGHUP or SIGPIPE during a study: the running child gets
 * the signal too, exactly once (it runs in its own process group, so the
 * terminal's Ctrl-C reaches ab alone); it finishes its step and checkpoints,
 * then the study stops without ab.json or report.html. A second signal is
 * forwarded as well and stops the child at once (it still removes its
 * temporaries). Without forwarding, `kill <ab>` would leave the child
 * training on as an orphan. */
static volatile sig_atomic_t stop_signal, stop_count, second_signal;

static void on_stop(int sig) {
    if (stop_count && sig == SIGPIPE) return; /* every write to a closed pipe raises one */
    if (!stop_count) stop_signal = sig;
    else if (stop_count == 1) second_signal = sig;
    stop_count++;
}
static void on_child(int sig) { (void)sig; } /* only wakes sigsuspend */

static const int ab_stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static const char *ab_signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
         : sig == SIGPIPE ? "SIGPIPE" : "a signal";
}

static void catch_stop_signals(void) {
    for (int i = 0; i < 4; i++) {
        struct sigaction sa, old;
        sigaction(ab_stop_signals[i], NULL, &old);
        if (old.sa_handler == SIG_IGN) continue; /* e.g. started with nohup or in the background */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop; /* no SA_RESTART */
        sigemptyset(&sa.sa_mask);
        sigaction(ab_stop_signals[i], &sa, NULL);
    }
    struct sigaction sc;
    memset(&sc, 0, sizeof sc);
    sc.sa_handler = on_child;
    sigemptyset(&sc.sa_mask);
    sc.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sc, NULL);
}

/* What a child stopped by ab's signal left, from its folder, not its exit
 * status alone: a child signalled while it starts exits 128 + the signal
 * too, having written nothing. */
static void stopped_message(int status, int forwarded, const char *dir, char *err,
                            size_t errlen) {
    const char *sig = ab_signal_name(stop_signal);
    char cdir[PATH_MAX + 16], why[512] = "";
    snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
    int64_t step = 0;
    int has = amp_ckpt_store_newest_valid(cdir, &step, why, sizeof why);
    char left[PATH_MAX + 700];
    if (has > 0)
        snprintf(left, sizeof left, "its checkpoint of step %lld and its log are in %s",
                 (long long)step, dir);
    else if (has == 0)
        snprintf(left, sizeof left, "it wrote no checkpoint; its log is in %s", dir);
    else
        snprintf(left, sizeof left, "%s; its log is in %s", why, dir);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        snprintf(err, errlen, "stopped by %s as the run finished; its files are in %s", sig, dir);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 128 + stop_signal)
        snprintf(err, errlen, "stopped by %s; %s", sig, left);
    else
        snprintf(err, errlen, "stopped by %s%s; the run ended with %s %d: %s", sig,
                 forwarded > 1 ? " and a second signal" : "",
                 WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), left);
}

/* Runs `amptrain train` for one (arm, seed) as a child; 0 when it exited 0. */
static int run_child(const ab_args *a, int arm, uint64_t seed, const char *dir,
                     amp_ab_progress *prog, char *err, size_t errlen) {
    char seed_set[64], out_log[PATH_MAX + 16];
    snprintf(seed_set, sizeof seed_set, "run.seed=%llu", (unsigned long long)seed);
    snprintf(out_log, sizeof out_log, "%s/train.log", dir);
    const char **argv = malloc((size_t)(10 + AMP_AB_LAUNCH_ARGS + 2 * (a->nsets + a->narm_sets[arm])) *
                               sizeof *argv);
    if (!argv) {
        snprintf(err, errlen, "cannot start a run: out of host memory");
        return -1;
    }
    const char *program;
    int n = amp_ab_launch_argv(&a->launch, argv, &program);
    argv[n++] = "train";
    argv[n++] = a->configs[arm];
    for (int i = 0; i < a->nsets + a->narm_sets[arm]; i++) {
        argv[n++] = "--set";
        argv[n++] = i < a->nsets ? a->sets[i] : a->arm_sets[arm][i - a->nsets];
    }
    /* last, so a user's --set cannot undo them */
    argv[n++] = "--set";
    argv[n++] = seed_set;
    argv[n++] = "--set";
    argv[n++] = "train.log_every=1";
    argv[n++] = "--out";
    argv[n++] = dir;
    argv[n] = NULL;
    /* The stop signals and SIGCHLD stay blocked except inside sigsuspend,
     * so none can slip in between checking for it and waiting. */
    sigset_t block, orig;
    sigemptyset(&block);
    for (int i = 0; i < 4; i++) sigaddset(&block, ab_stop_signals[i]);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &orig);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) free(argv); /* the child execs with it */
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &orig, NULL);
        snprintf(err, errlen, "cannot start a run: fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* Its own process group: a signal reaches it only through ab. And it
         * stops (with a checkpoint) should ab die without forwarding. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(126);
        for (int i = 0; i < 4; i++) signal(ab_stop_signals[i], SIG_DFL); /* train installs its own */
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_SETMASK, &orig, NULL);
        int fd = open(out_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
        execv(program, (char *const *)argv);
        fprintf(stderr, "amptrain ab: cannot run %s: %s\n", program, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: whichever runs first, no signal finds it in ab's group */
    int status = 0, forwarded = 0, rc = -1;
    for (;;) {
        /* Forward each of the first two stop signals once. */
        while (forwarded < stop_count && forwarded < 2) {
            kill(pid, forwarded == 0 ? stop_signal : second_signal);
            forwarded++;
        }
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) {
            snprintf(err, errlen, "waitpid: %s", strerror(errno));
            sigprocmask(SIG_SETMASK, &orig, NULL);
            return -1;
        }
        /* as sigsuspend (returns after any handled signal), and on a terminal
         * each second to redraw the progress */
        ppoll(NULL, 0, prog->tty ? &(struct timespec){1, 0} : NULL, &orig);
        amp_ab_progress_tick(prog);
    }
    sigprocmask(SIG_SETMASK, &orig, NULL);
    if (stop_signal) {
        stopped_message(status, forwarded, dir, err, errlen);
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    char why[1100];
    last_line(out_log, a->ranks, why, sizeof why);
    if (WIFSIGNALED(status))
        snprintf(err, errlen, "killed by signal %d; its log: %s%s%s", WTERMSIG(status), out_log,
                 why[0] ? "\n  last line: " : "", why);
    else
        snprintf(err, errlen, "exit status %d; its log: %s%s%s", WEXITSTATUS(status), out_log,
                 why[0] ? "\n  last line: " : "", why);
    return rc;
}

/* A short text from the arm's first-seed model, `amptrain sample` run as a
 * child into DIR/sample.txt; read back into arm->sample. A sample that
 * fails leaves the reason in sample.log and the study without a sample. */
#define AB_SAMPLE_TOKENS "200"
static void sample_arm(amp_ab_arm *arm) {
    const char *dir = arm->runs[0].dir;
    char out[PATH_MAX + 16], log[PATH_MAX + 16];
    snprintf(out, sizeof out, "%s/sample.txt", dir);
    snprintf(log, sizeof log, "%s/sample.log", dir);
    char *const argv[] = {"amptrain", "sample", (char *)dir, "--tokens", AB_SAMPLE_TOKENS,
                          "--seed", "1", NULL}; /* the default prompt: a newline */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int fl = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fo < 0 || fl < 0 || dup2(fo, 1) < 0 || dup2(fl, 2) < 0) _exit(126);
        amp_self_execv(argv, NULL, 0); /* ab checked the executable before the runs */
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "amptrain ab: no sample for arm '%s': see %s\n", arm->name, log);
        return;
    }
    char err[256];
    size_t n = 0;
    if (amp_file_read_all(out, 1 << 16, &arm->sample, &n, err, sizeof err) != 0) {
        fprintf(stderr, "amptrain ab: no sample for arm '%s': %s\n", arm->name, err);
        arm->sample = NULL;
    }
}

static void study_free(amp_ab_study *st) {
    for (int a = 0; a < st->narms; a++) {
        for (int r = 0; r < st->arms[a].nruns; r++) amp_ab_run_free(&st->arms[a].runs[r]);
        free(st->arms[a].gemm);
        free(st->arms[a].runs);
        free(st->arms[a].sample);
    }
    for (int d = 0; d < st->ndiffs; d++) {
        for (int a = 0; a < st->narms; a++) free(st->diffs[d].values[a]);
        free(st->diffs[d].values);
    }
    free(st->diffs);
    free(st->arms);
    free(st->seeds);
}

static const char *const dtype_names[AMP_DTYPE_COUNT] = {"f32", "f16", "bf16"};

/* --scan: one more arm per group of the candidate's (arm 1's) layers, the
 * candidate's config with the group's layers set to the baseline's (arm
 * 0's) GEMM dtype; groups the candidate already computes as the baseline
 * does are skipped. 0, 2 (a bad --scan value, nothing to scan) or 1. */
static int add_scan_arms(ab_args *a, const arm_cfg *ac, const char *cand_name, char *err,
                         size_t errlen) {
    if (amp_ab_scan_groups(&a->groups, &a->ngroups, a->scan, (const char *const *)ac[1].layers,
                           ac[1].nlayers, AMP_AB_MAX_SCAN, err, errlen) != 0)
        return a->groups ? 1 : 2;
    if (ac[0].nlayers != ac[1].nlayers) {
        snprintf(err, errlen, "--scan: the baseline's model has %d layers, the candidate's %d; a "
                 "scan compares policies on one model", ac[0].nlayers, ac[1].nlayers);
        return 2;
    }
    if (amp_ab_scan_split(a->groups, &a->ngroups, &a->skipped, &a->nskipped, ac[0].prec,
                          ac[1].prec) != 0)
        return 1;
    if (a->ngroups == 0) {
        snprintf(err, errlen, "--scan %s: the candidate %s computes every layer of every group "
                 "exactly as the baseline %s does: nothing to scan", a->scan, a->configs[1], a->configs[0]);
        return 2;
    }
    for (int g = 0; g < a->ngroups; g++) {
        const amp_ab_group *gr = &a->groups[g];
        int arm = a->nconfigs++;
        a->configs[arm] = a->configs[1];
        char **sets = calloc((size_t)gr->nmembers + 1, sizeof *sets);
        a->arm_sets[arm] = sets;
        if (!sets) return 1;
        char name[65];
        amp_ab_scan_arm_name(name, cand_name, a->groups, g);
        size_t need = sizeof name + 16;
        if (!(sets[0] = malloc(need))) return 1;
        snprintf(sets[0], need, "run.name=%s", name);
        a->narm_sets[arm] = 1;
        for (int m = 0; m < gr->nmembers; m++) {
            int l = gr->members[m];
            need = strlen(ac[1].layers[l]) + 32;
            if (!(sets[m + 1] = malloc(need))) return 1;
            snprintf(sets[m + 1], need, "precision.layer.%s=%s", ac[1].layers[l],
                     dtype_names[ac[0].prec[l].compute[AMP_OP_GEMM]]);
            a->narm_sets[arm] = m + 2;
        }
    }
    return 0;
}

static void args_free(ab_args *a) {
    for (int i = 0; i < a->nconfigs; i++) {
        for (int k = 0; k < a->narm_sets[i]; k++) free(a->arm_sets[i][k]);
        free(a->arm_sets[i]);
    }
    amp_ab_groups_free(a->groups, a->ngroups);
    amp_ab_groups_free(a->skipped, a->nskipped);
    free(a->sets);
}

/* Validates and compares the configs (and adds a scan's arms); fills arms,
 * seeds and diffs. */
static int prepare(ab_args *a, amp_ab_study *st, char *err, size_t errlen) {
    arm_cfg ac[AMP_AB_MAX_ARMS];
    memset(ac, 0, sizeof ac);
    int code = 0;
    for (int i = 0; i < a->nconfigs && code == 0; i++) {
        code = validate(a, i, &st->arms[i], &ac[i], err, errlen);
        if (code == 0 && i == 1 && a->scan) code = add_scan_arms(a, ac, st->arms[1].name, err, errlen);
        st->narms = a->nconfigs;
        if (code) break;
        amp_ab_arm *arm = &st->arms[i];
        make_slug(arm->slug, sizeof arm->slug, arm->name);
        for (int j = 0; j < i && code == 0; j++)
            if (strcmp(st->arms[j].slug, arm->slug) == 0) {
                if (strcmp(st->arms[j].name, arm->name) == 0)
                    snprintf(err, errlen,
                             "%s and %s both have [run] name = %s; the name labels the arm, so "
                             "give each config its own (or use a copy of the file)",
                             st->arms[j].config, arm->config, arm->name);
                else
                    snprintf(err, errlen,
                             "%s ([run] name = %s) and %s ([run] name = %s) would share the "
                             "folder runs/%s; rename one of them",
                             st->arms[j].config, st->arms[j].name, arm->config, arm->name,
                             arm->slug);
                code = 2;
            }
    }
    if (code == 0) {
        st->nseeds = a->seeds;
        st->seeds = calloc((size_t)a->seeds, sizeof *st->seeds);
        for (int i = 0; i < a->nconfigs; i++)
            st->arms[i].runs = calloc((size_t)a->seeds, sizeof *st->arms[i].runs);
        int oom = !st->seeds || find_diffs(st, ac) != 0;
        for (int i = 0; i < a->nconfigs; i++) oom |= !st->arms[i].runs;
        if (oom) {
            snprintf(err, errlen, "out of host memory");
            code = 1;
        }
    }
    if (code == 0) {
        for (int i = 0; i < a->seeds; i++) st->seeds[i] = ac[0].seed + (uint64_t)i;
        if (st->ndiffs && !a->allow_diff) {
            fprintf(stderr,
                    "amptrain ab: the configs differ in more than their [precision] and [scaler] "
                    "settings:\n");
            print_diffs(st, ac, stderr);
            snprintf(err, errlen,
                     "an A/B test would mix these effects with the policy's; make them equal "
                     "(or use --set), or pass --allow-diff to compare anyway (the report lists "
                     "them)");
            code = 2;
        } else if (st->ndiffs) {
            fprintf(stderr, "amptrain ab: --allow-diff: the arms also differ in:\n");
            print_diffs(st, ac, stderr);
        }
    }
    for (int i = 0; i < a->nconfigs; i++) arm_cfg_free(&ac[i]);
    return code;
}

int amp_cmd_ab(int argc, char **argv) {
    ab_args a;
    int pa = parse_args(&a, argc, argv);
    if (pa != 0) return pa > 0 ? 0 : 2;
    /* Empty paths are usage errors ("" would read as the current folder). */
    int empty = !a.out[0];
    for (int i = 0; i < a.nconfigs; i++) empty |= !a.configs[i][0];
    if (empty) {
        fprintf(stderr, "amptrain ab: %s is an empty string; give a path\n",
                !a.out[0] ? "--out" : "a config");
        return 2;
    }
    char err[4096] = "";
    int lc = amp_ab_launch_prepare(&a.launch, a.ranks, err, sizeof err);
    if (lc != 0) {
        fprintf(stderr, "amptrain ab: %s\n", err);
        args_free(&a);
        return lc;
    }
    amp_run_lock lock = {-1, ""};
    amp_ab_study st;
    memset(&st, 0, sizeof st);
    st.arms = calloc(AMP_AB_MAX_ARMS, sizeof *st.arms); /* a scan adds arms */
    if (!st.arms) {
        fprintf(stderr, "amptrain ab: out of host memory\n");
        args_free(&a);
        return 1;
    }
    st.narms = a.nconfigs;
    st.allow_diff = a.allow_diff;
    st.sets = a.sets;
    st.nsets = a.nsets;
    st.ranks = a.ranks;
    st.tolerance = a.tolerance;
    int code = prepare(&a, &st, err, sizeof err);
    if (code != 0) {
        fprintf(stderr, "amptrain ab: %s\n", err);
        study_free(&st);
        args_free(&a);
        return code;
    }
    code = 1;
    if (amp_mkdir_p(a.out, err, sizeof err) != 0) goto fail;
    /* One study per folder; a second is refused, naming the first. */
    int lr = amp_run_lock_acquire(&lock, a.out, "ab", err, sizeof err);
    if (lr != 0) {
        code = lr > 0 ? 2 : 1;
        goto fail;
    }
    static const char *const ab_outputs[] = {"ab.json", "report.html", NULL};
    amp_tmp_remove_stale(a.out, ab_outputs);
    if (amp_out_check_inputs(a.out, ab_outputs, a.configs, a.nconfigs, err, sizeof err) != 0) {
        code = 2;
        goto fail;
    }
    /* A report from an earlier study must not outlive a failed one. */
    char stale[PATH_MAX + 32];
    snprintf(stale, sizeof stale, "%s/ab.json", a.out);
    unlink(stale);
    snprintf(stale, sizeof stale, "%s/report.html", a.out);
    unlink(stale);

    amp_ab_machine_info(&st);
    int total = st.nseeds * st.narms, k = 0;
    char on_ranks[PATH_MAX + 64] = "";
    if (a.ranks > 1) snprintf(on_ranks, sizeof on_ranks, "; every run on %d ranks (%s)", a.ranks, a.launch.mpirun);
    fprintf(stderr, "amptrain ab: %d arms x %d seeds (%llu..%llu), interleaved (order rotating per seed); baseline %s%s; output in %s\n",
            st.narms, st.nseeds, (unsigned long long)st.seeds[0],
            (unsigned long long)st.seeds[st.nseeds - 1], st.arms[0].name, on_ranks, a.out);
    double t_all = amp_clock_s();
    amp_ab_progress prog;
    amp_ab_progress_start(&prog, st.narms, st.nseeds);
    catch_stop_signals();
    for (int s = 0; s < st.nseeds; s++)
        for (int j = 0; j < st.narms; j++) {
            int i = (j + s) % st.narms; /* each seed starts with another arm */
            if (stop_signal) {
                snprintf(err, sizeof err, "stopped by %s before run %d of %d",
                         ab_signal_name(stop_signal), k + 1, total);
                goto fail;
            }
            amp_ab_arm *arm = &st.arms[i];
            amp_ab_run *r = &arm->runs[s];
            r->seed = st.seeds[s];
            r->order = j;
            snprintf(r->dir, sizeof r->dir, "%s/runs/%s/seed-%llu", a.out, arm->slug,
                     (unsigned long long)r->seed);
            k++;
            amp_ab_progress_run(&prog, i, arm->name, r->seed, r->dir);
            if (amp_mkdir_p(r->dir, err, sizeof err) != 0) goto fail;
            /* Files of an earlier study in this folder must not pass for this
             * run's. Cleared under the run folder's lock: never under a
             * `train` that writes there. */
            amp_run_lock rl;
            if (amp_run_lock_acquire(&rl, r->dir, "ab", err, sizeof err) != 0) {
                amp_ab_progress_failed(&prog);
                goto fail;
            }
            static const char *const outputs[] = {"summary.json", "metrics.jsonl", "metrics.csv",
                                                  "config.ini", "weights.safetensors"};
            for (int f = 0; f < 5; f++) {
                char p[PATH_MAX + 32];
                snprintf(p, sizeof p, "%s/%s", r->dir, outputs[f]);
                unlink(p);
            }
            /* A stopped study leaves checkpoints; ab always starts a run afresh,
             * and `train --out` refuses a folder holding checkpoints. */
            remove_checkpoints(r->dir);
            amp_run_lock_release(&rl);
            double t0 = amp_clock_s();
            char cerr[2048];
            if (run_child(&a, i, r->seed, r->dir, &prog, cerr, sizeof cerr) != 0) {
                amp_ab_progress_failed(&prog);
                snprintf(err, sizeof err, "arm '%s' seed %llu failed: %s", arm->name,
                         (unsigned long long)r->seed, cerr);
                goto fail;
            }
            r->parent_wall_s = amp_clock_s() - t0;
            if (amp_ab_run_load(r, &st, err, sizeof err) != 0) {
                amp_ab_progress_failed(&prog);
                amp_ab_run_free(r);
                goto fail;
            }
            arm->nruns = s + 1;
            amp_ab_progress_done(&prog, r);
        }
    st.wall_s = amp_clock_s() - t_all;
    for (int i = 0; i < st.narms; i++) amp_ab_arm_stats(&st.arms[i], st.nmem);
    snprintf(st.device, sizeof st.device, "%s", st.arms[0].runs[0].device);
    st.metric_forced = a.metric != AMP_AB_METRIC_AUTO;
    st.metric = st.metric_forced ? a.metric
                : st.arms[0].runs[0].has_val_loss ? AMP_AB_METRIC_LOSS : AMP_AB_METRIC_ACC;
    amp_ab_timing_check(&st);
    if (st.arms[0].runs[0].has_val_loss)
        for (int i = 0; i < st.narms && !stop_signal; i++) sample_arm(&st.arms[i]);
    static amp_ab_scan scan; /* large: off the stack */
    if (a.scan) {
        memset(&scan, 0, sizeof scan);
        scan.groups = a.groups;
        scan.ngroups = a.ngroups;
        scan.skipped = a.skipped;
        scan.nskipped = a.nskipped;
        scan.first_arm = 2;
        for (int g = 0; g < a.ngroups; g++) {
            const char *set = a.arm_sets[2 + g][1]; /* precision.layer.NAME=DTYPE */
            snprintf(scan.base_dtype[g], sizeof scan.base_dtype[g], "%s", strrchr(set, '=') + 1);
        }
        amp_ab_scan_rank(&scan, &st);
        st.scan = &scan;
    }
    if (write_atomic(a.out, "ab.json", amp_ab_write_json, &st, err, sizeof err) != 0 ||
        write_atomic(a.out, "report.html", amp_ab_write_report, &st, err, sizeof err) != 0)
        goto fail;
    amp_ab_print_table(&st, stdout);
    amp_ab_print_memory(&st, stdout);
    if (st.scan) amp_ab_scan_print(st.scan, &st, stdout);
    printf("\nab.json:     %s/ab.json\nreport.html: %s/report.html\n", a.out, a.out);
    code = 0;
fail:
    if (code != 0) {
        fprintf(stderr, "amptrain ab: %s\n", err);
        if (stop_signal) {
            fprintf(stderr, "amptrain ab: no ab.json or report.html was written; the same "
                            "command starts the study over\n");
            code = 128 + stop_signal;
        }
    }
    amp_run_lock_release(&lock);
    study_free(&st);
    args_free(&a);
    return code;
}
