/* `amptrain checkpoints DIR`: lists a run's checkpoints (DIR/checkpoints, or
 * DIR itself when it holds them) newest first, validating each one fully
 * (header, every section's CRC, the counters and shapes). Exit 0 when every
 * checkpoint is valid, 1 when one is damaged or there is none, 2 on usage.
 * One that a running train pruned between the listing and the read is
 * listed as gone, not damaged. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/checkpoint.h"
#include "io/checkpoint_file.h"
#include "io/checkpoint_store.h"
#include "cli/cli.h"
#include "cli/cli_args.h"

static const char ckpt_usage[] =
    "usage: amptrain checkpoints RUN_DIR\n"
    "  lists the checkpoints of the run in RUN_DIR, newest first, and verifies each;\n"
    "  exit 0 when all are valid, 1 when one is damaged or there is none\n";

static int ckpt_opt(void *user, int opt, const char *arg) {
    const char **run = user;
    switch (opt) {
    case 'h':
        fputs(ckpt_usage, stdout);
        return 1;
    case 1:
        if (*run || !arg[0]) {
            fprintf(stderr, "amptrain checkpoints: %s\n%s",
                    *run ? "one RUN_DIR only" : "RUN_DIR is empty", ckpt_usage);
            return -1;
        }
        *run = arg;
        return 0;
    }
    return -1;
}

/* Validates and prints one checkpoint; 1 when it was gone (pruned since
 * listed), else 0 (*damaged counts the bad ones). */
static int show(const char *dir, int64_t step, size_t *damaged) {
    char path[PATH_MAX + 32], err[512];
    amp_ckpt_store_path(path, sizeof path, dir, step);
    uint8_t *buf = NULL;
    size_t len = 0;
    amp_checkpoint ck;
    int lr = amp_ckpt_store_load(path, step, &buf, &len, &ck, err, sizeof err);
    if (lr == AMP_CKPT_GONE) {
        printf("%s  gone: %s\n", path, err);
        return 1;
    }
    if (lr != 0) {
        printf("%s  DAMAGED: %s\n", path, err);
        ++*damaged;
        return 0;
    }
    printf("%s  ok  step %lld/%lld epoch %lld  %s %s + %s %s  %llu params  %u rank%s  %zu bytes\n",
           path, (long long)ck.step, (long long)ck.total_steps, (long long)ck.epoch, ck.precision,
           ck.precision_version, ck.scaler, ck.scaler_version, (unsigned long long)ck.nparams,
           (unsigned)ck.world_size, ck.world_size == 1 ? "" : "s", len);
    free(buf);
    return 0;
}

int amp_cmd_checkpoints(int argc, char **argv) {
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *run = NULL;
    int rc = amp_cli_parse("checkpoints", argc, argv, "h", opts, ckpt_opt, &run, ckpt_usage);
    if (rc == 0 && !run) {
        fputs(ckpt_usage, stderr);
        rc = -1;
    }
    if (rc != 0) return rc > 0 ? 0 : 2;
    char dir[PATH_MAX], err[512];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/checkpoints", run);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) snprintf(dir, sizeof dir, "%s", run);
    /* Every listed one gone: a running train wrote newer ones and pruned
     * these meanwhile, so look again (a few times, then say so). */
    size_t n = 0, damaged = 0, gone = 0;
    for (int round = 0; round < 8 && (round == 0 || gone == n); round++) {
        int64_t *steps = NULL;
        if (amp_ckpt_store_list(dir, &steps, &n, err, sizeof err) != 0) {
            fprintf(stderr, "amptrain: %s\n", err);
            return 1;
        }
        if (n == 0) {
            fprintf(stderr, "amptrain: %s: no checkpoints (ckpt-<step>.amp)\n", dir);
            free(steps);
            return 1;
        }
        damaged = gone = 0;
        for (size_t i = 0; i < n; i++) gone += show(dir, steps[i], &damaged);
        free(steps);
    }
    if (gone == n) {
        fprintf(stderr, "amptrain: %s: no checkpoints (every one listed was removed meanwhile)\n",
                dir);
        return 1;
    }
    if (damaged) {
        fprintf(stderr, "amptrain: %zu of %zu checkpoints in %s are damaged\n", damaged, n - gone,
                dir);
        return 1;
    }
    return 0;
}
