/* `amptrain checkpoints DIR`: lists a run's checkpoints (DIR/checkpoints, or
 * DIR itself when it holds them) newest first, validating each one fully
 * (header, every section's CRC, the counters and shapes). Exit 0 when every
 * checkpoint is valid, 1 when one is damaged or there is none, 2 on usage. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/checkpoint.h"
#include "io/checkpoint_store.h"
#include "cli/cli.h"

int amp_cmd_checkpoints(int argc, char **argv) {
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: amptrain checkpoints RUN_DIR\n");
        return 2;
    }
    if (!argv[1][0]) { /* "" would become "/checkpoints" */
        fprintf(stderr, "amptrain checkpoints: the run folder is an empty string\n");
        return 2;
    }
    char dir[PATH_MAX], err[512];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/checkpoints", argv[1]);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) snprintf(dir, sizeof dir, "%s", argv[1]);
    int64_t *steps = NULL;
    size_t n = 0;
    if (amp_ckpt_store_list(dir, &steps, &n, err, sizeof err) != 0) {
        fprintf(stderr, "amptrain: %s\n", err);
        return 1;
    }
    if (n == 0) {
        fprintf(stderr, "amptrain: %s: no checkpoints (ckpt-<step>.amp)\n", dir);
        free(steps);
        return 1;
    }
    size_t damaged = 0;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 32];
        amp_ckpt_store_path(path, sizeof path, dir, steps[i]);
        uint8_t *buf = NULL;
        size_t len = 0;
        amp_checkpoint ck;
        if (amp_ckpt_store_load(path, steps[i], &buf, &len, &ck, err, sizeof err) != 0) {
            printf("%s  DAMAGED: %s\n", path, err);
            damaged++;
        } else {
            printf("%s  ok  step %lld/%lld epoch %lld  %s %s + %s %s  %llu params  %u rank%s  %zu "
                   "bytes\n",
                   path, (long long)ck.step, (long long)ck.total_steps, (long long)ck.epoch,
                   ck.precision, ck.precision_version, ck.scaler, ck.scaler_version,
                   (unsigned long long)ck.nparams, (unsigned)ck.world_size,
                   ck.world_size == 1 ? "" : "s", len);
        }
        free(buf);
    }
    free(steps);
    if (damaged) {
        fprintf(stderr, "amptrain: %zu of %zu checkpoints in %s are damaged\n", damaged, n, dir);
        return 1;
    }
    return 0;
}
