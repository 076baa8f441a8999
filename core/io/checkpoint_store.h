/* A run's checkpoint folder (RUN/checkpoints): ckpt-<step, 8+ digits>.amp
 * files written atomically (a hidden temporary in the same folder, fsync,
 * rename over, fsync of the folder), pruned to `keep`. A reader never
 * sees a half-written checkpoint under a ckpt-*.amp name. */
#ifndef AMP_CHECKPOINT_STORE_H
#define AMP_CHECKPOINT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "io/checkpoint.h"

/* DIR/ckpt-<step>.amp */
void amp_ckpt_store_path(char *out, size_t outlen, const char *dir, int64_t step);

/* Writes buf as the checkpoint of `step` (under a unique temporary, fsync,
 * rename, fsync of the folder), after deleting any temporary a killed
 * writer left (the caller holds the run folder's lock). Creates dir. On
 * failure the temporary is removed, older checkpoints are untouched, and
 * err names the file and the reason (e.g. "File too large"). 0 or -1. */
int amp_ckpt_store_write(const char *dir, int64_t step, const void *buf, size_t len, char *err,
                         size_t errlen);

/* Deletes old checkpoints: one goes only when `keep` newer checkpoints are
 * known to be valid, i.e. their steps are in valid[] (what this process
 * wrote, and what it resumed from). So damaged newer checkpoints never
 * cost the last good one, and the checkpoint a run resumed from stays
 * until `keep` newer ones exist. keep <= 0 keeps all. 0, or -1 with err. */
int amp_ckpt_store_prune(const char *dir, int64_t keep, const int64_t *valid, size_t nvalid,
                         char *err, size_t errlen);

/* The steps of the checkpoints in dir, newest first (*steps malloc'd, the
 * caller frees; *n may be 0). A missing dir gives 0 checkpoints. Only names
 * of the exact form ckpt-<digits>.amp count. 0, or -1 with err. */
int amp_ckpt_store_list(const char *dir, int64_t **steps, size_t *n, char *err, size_t errlen);

/* Reads a whole file into a malloc'd buffer. 0, or -1 with err. */
int amp_ckpt_store_read(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen);

/* Reads and validates the checkpoint of `step` at path (amp_ckpt_store_path):
 * the format (amp_checkpoint_parse) and the step it holds, which must be
 * the one its file name says. 0 with *buf (the caller frees; ck points into
 * it), or -1 with the reason in why and nothing to free; AMP_CKPT_GONE
 * (nothing to free) when the file no longer exists: a run that prunes
 * removed it after it was listed, which is no damage. */
#define AMP_CKPT_GONE 1
int amp_ckpt_store_load(const char *path, int64_t step, uint8_t **buf, size_t *len,
                        amp_checkpoint *ck, char *why, size_t whylen);

/* Whether dir holds a checkpoint that loads (amp_ckpt_store_load): 1 with
 * the newest such one's step in *step, 0 when none does (or dir is
 * missing), -1 with err when dir cannot be listed. */
int amp_ckpt_store_newest_valid(const char *dir, int64_t *step, char *err, size_t errlen);

#endif
