/* make_old_ckpt IN.amp METRICS.jsonl OUT.amp: rewrites a checkpoint the way
 * amptrain wrote them before MPOS existed: METR holds every metrics line
 * up to the checkpoint (here the first MPOS bytes of METRICS.jsonl) and
 * there is no MPOS. history.sh resumes from such a file to show that old
 * checkpoints still read and restore their whole history.
 * make_old_ckpt IN.amp OUT.amp: the checkpoint as written before DATA (the
 * data's fingerprint) existed; data_changed.sh resumes from it. Both forms
 * drop DATA, which neither kind of old file had. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/file.h"

static uint8_t *slurp(const char *path, size_t *len) {
    char err[512];
    char *buf = NULL;
    if (amp_file_read_all(path, (size_t)1 << 30, &buf, len, err, sizeof err) != 0) {
        fprintf(stderr, "make_old_ckpt: %s: %s\n", path, err);
        exit(1);
    }
    return (uint8_t *)buf;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: make_old_ckpt IN.amp [METRICS.jsonl] OUT.amp\n");
        return 2;
    }
    int history = argc == 4;
    const char *outpath = argv[argc - 1];
    size_t len = 0, mlen = 0;
    uint8_t *buf = slurp(argv[1], &len), *metrics = history ? slurp(argv[2], &mlen) : NULL;
    amp_checkpoint ck;
    char err[512] = "";
    if (amp_checkpoint_parse(buf, len, &ck, err, sizeof err) != 0 || !ck.data_id ||
        (history && (!ck.has_metrics_pos || ck.metrics_pos > mlen || ck.metrics_len != 0))) {
        fprintf(stderr, "make_old_ckpt: %s: %s\n", argv[1], err[0] ? err : "not a new checkpoint");
        return 1;
    }
    ck.data_id = NULL;
    ck.data_id_len = 0;
    if (history) {
        ck.has_metrics_pos = 0;
        ck.metrics = (const char *)metrics;
        ck.metrics_len = (size_t)ck.metrics_pos;
    }
    uint8_t *out = NULL;
    size_t outlen = 0;
    FILE *f = NULL;
    if (amp_checkpoint_encode(&ck, &out, &outlen, err, sizeof err) != 0 ||
        !(f = fopen(outpath, "wb")) || fwrite(out, 1, outlen, f) != outlen || fclose(f) != 0) {
        fprintf(stderr, "make_old_ckpt: %s: %s\n", outpath, err[0] ? err : "cannot write");
        return 1;
    }
    free(out);
    free(buf);
    free(metrics);
    return 0;
}
