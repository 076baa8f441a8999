/* Reading one checkpoint file (the format is core/io/checkpoint.h). */
#ifndef AMP_CHECKPOINT_FILE_H
#define AMP_CHECKPOINT_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads the checkpoint at path into a malloc'd buffer (*buf, *len; the
 * caller frees, then parses it with amp_checkpoint_parse). Only a regular
 * file is opened, without blocking (io/file.h); its header is checked
 * against the file's size (amp_checkpoint_check_head) before the rest is
 * read, so a 6 GB sparse file named ckpt-*.amp is refused after a few
 * hundred bytes instead of being read whole. err holds the reason alone (the
 * caller names the path). 0, or -1 with err. */
int amp_checkpoint_read_file(const char *path, uint8_t **buf, size_t *len, char *err,
                             size_t errlen);

#endif
