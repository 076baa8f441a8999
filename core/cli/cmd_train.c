/* `amptrain train CONFIG.ini [--set section.key=value]... [--out DIR]` and
 * `amptrain train [CONFIG.ini] --resume DIR [--set section.key=value]...`:
 * the options and the config (on a resume, the run's own from its
 * checkpoint unless CONFIG is given, which must agree with it; --set only
 * of the keys a resume may change, resume_config.h); the run itself is
 * core/train/trainer.h's (outputs, checkpoints, resume, stop signals, several
 * ranks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "train/resume_config.h"
#include "train/trainer.h"

static const char train_usage[] =
    "usage: amptrain train CONFIG.ini [--set section.key=value]... [--out DIR]\n"
    "       amptrain train [CONFIG.ini] --resume DIR [--set section.key=value]...\n"
    "       mpirun -np N amptrain train CONFIG.ini ...   (one model on N ranks)\n"
    "  trains the model CONFIG.ini describes (every key and its default: amptrain\n"
    "  settings; the reference: docs/settings.md)\n"
    "  --set section.key=value\n"
    "               overrides one key of the config, any number of times (a relative\n"
    "               path is relative to the working directory; in the file, to the\n"
    "               config's folder)\n"
    "  --out DIR    the output folder (default runs/<[run] name>): config.ini (the\n"
    "               resolved config), metrics.jsonl, summary.json, weights.safetensors,\n"
    "               checkpoints/ (docs/outputs.md)\n"
    "  --resume DIR continues the run in DIR from its newest checkpoint, with the config\n"
    "               the checkpoint holds (a CONFIG given, with its --set's, must agree\n"
    "               with it); without CONFIG --set may change only [train] steps,\n"
    "               log_every, eval_every, checkpoint_every, checkpoint_minutes, keep,\n"
    "               [run] name, device, [dist] check_every, timeout, shard\n"
    "  -h, --help   this help\n"
    "  progress on stderr: on a terminal one live line (step, loss, last evaluation,\n"
    "  ms/step, samples or tokens per second, elapsed, ETA); off one a line per logged\n"
    "  step and per evaluation. SIGINT (Ctrl-C), SIGTERM or SIGHUP: the step finishes, a\n"
    "  checkpoint is written, the command that continues is printed, exit 128 + signal.\n"
    "  environment: AMPTRAIN_THREADS, AMPTRAIN_LOG, ... (docs/configuration.md)\n"
    "  exit codes: 0 ok, 1 runtime failure, 2 usage or config error\n";

typedef struct train_args {
    const char *config;
    const char *out;
    const char *resume;
    const char **sets; /* [argc]: every --set in order, no fixed limit; freed once applied */
    int nsets;
} train_args;

static int train_opt(void *user, int opt, const char *arg) {
    train_args *a = user;
    switch (opt) {
    case 's':
        a->sets[a->nsets++] = arg;
        return 0;
    case 'o':
    case 'r': {
        const char **slot = opt == 'o' ? &a->out : &a->resume;
        if (*slot) {
            fprintf(stderr, "amptrain train: --%s given twice ('%s', '%s')\n",
                    opt == 'o' ? "out" : "resume", *slot, arg);
            return -1;
        }
        *slot = arg;
        return 0;
    }
    case 'h':
        fputs(train_usage, stdout);
        return 1;
    case 1:
        if (!arg[0]) {
            fprintf(stderr, "amptrain train: the config path is empty\n%s", train_usage);
            return -1;
        }
        if (a->config) {
            fprintf(stderr, "amptrain train: more than one config given ('%s', '%s')\n", a->config,
                    arg);
            return -1;
        }
        a->config = arg;
        return 0;
    }
    return -1;
}

/* 0, 1 (--help printed), or -1 (a usage error, printed). */
static int parse_args(train_args *a, int argc, char **argv) {
    static const struct option opts[] = {{"set", required_argument, NULL, 's'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"resume", required_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    a->sets = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a->sets);
    if (!a->sets) {
        fprintf(stderr, "amptrain train: out of memory\n");
        return -1;
    }
    int rc = amp_cli_parse("train", argc, argv, "h", opts, train_opt, a, train_usage);
    if (rc == 0 && !a->config && !a->resume) {
        fputs(train_usage, stderr);
        rc = -1;
    }
    if (rc == 0 && a->resume && a->out && strcmp(a->resume, a->out) != 0) {
        fprintf(stderr, "amptrain train: --resume %s continues in that folder; drop --out %s\n",
                a->resume, a->out);
        rc = -1;
    }
    if (rc != 0) {
        free(a->sets);
        a->sets = NULL;
    }
    return rc;
}

/* Empty paths are usage errors ("" would read as the current folder, or
 * worse). */
static int check_paths(const train_args *a) {
    const char *what = a->config && !a->config[0] ? "the config" : a->out && !a->out[0] ? "--out"
                     : a->resume && !a->resume[0] ? "--resume" : NULL;
    if (!what) return 0;
    fprintf(stderr, "amptrain train: %s is an empty string; give a path\n", what);
    return -1;
}

int amp_cmd_train(int argc, char **argv) {
    train_args a;
    int prc = parse_args(&a, argc, argv);
    if (prc != 0) return prc > 0 ? 0 : 2;
    if (check_paths(&a) != 0) return 2;
    char err[2048] = "";
    int code = 2;
    amp_config *cfg = a.config ? amp_config_load(a.config, err, sizeof err)
                               : amp_resume_config_load(a.resume, &code, err, sizeof err);
    code = cfg ? 0 : a.config ? 2 : code;
    for (int i = 0; code == 0 && !a.config && i < a.nsets; i++)
        if (amp_resume_set_allowed(cfg, a.sets[i], err, sizeof err) != 0) code = 2;
    for (int i = 0; code == 0 && i < a.nsets; i++)
        if (amp_config_set(cfg, a.sets[i], err, sizeof err) != 0) code = 2;
    free(a.sets);
    amp_train_opts o = {a.config, a.out, a.resume, &argc, &argv, {NULL, NULL}};
    code = amp_train(&o, cfg, code, err, sizeof err);
    amp_config_free(cfg);
    return code;
}
