/* A run's checkpoint folder (RUN/checkpoints): ckpt-<step, 8+ digits>.amp
 * files written atomically (a hidden temporary in the same folder, fsync,
 * rename over, fsync of the folder), the newest `keep` kept. A reader never
 * sees a half-written checkpoint under a ckpt-*.amp name. */
#ifndef AMP_CHECKPOINT_STORE_H
#define AMP_CHECKPOINT_STORE_H

#include <stddef.h>
#include <stdint.h>

/* DIR/ckpt-<step>.amp */
void amp_ckpt_store_path(char *out, size_t outlen, const char *dir, int64_t step);

/* Writes buf as the checkpoint of `step`, then deletes all but the newest
 * `keep` checkpoints and any temporary a killed writer left. Creates dir.
 * On failure the temporary is removed, older checkpoints are untouched, and
 * err names the file and the reason (e.g. "File too large"). 0 or -1. */
int amp_ckpt_store_write(const char *dir, int64_t step, const void *buf, size_t len, int64_t keep,
                         char *err, size_t errlen);

/* The steps of the checkpoints in dir, newest first (*steps malloc'd, the
 * caller frees; *n may be 0). A missing dir gives 0 checkpoints. Only names
 * of the exact form ckpt-<digits>.amp count. 0, or -1 with err. */
int amp_ckpt_store_list(const char *dir, int64_t **steps, size_t *n, char *err, size_t errlen);

/* Reads a whole file into a malloc'd buffer. 0, or -1 with err. */
int amp_ckpt_store_read(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen);

#endif
