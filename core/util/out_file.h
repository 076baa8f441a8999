/* Writing output files so that no reader ever sees half of one: each file is
 * written under a unique temporary name in its own folder and renamed into
 * place only when it is complete. Also the small file-system helpers the
 * writers share.
 *
 * Temporaries are ".<name>.XXXXXX.partial" (mkstemp: two processes never
 * share one). Every temporary alive is registered, so that a process that
 * must stop at once (a second signal) can remove them with
 * amp_tmp_unlink_all, which is async-signal-safe. What a SIGKILLed writer
 * left is removed by the next run that locks the folder
 * (amp_tmp_remove_stale). */
#ifndef AMP_OUT_FILE_H
#define AMP_OUT_FILE_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "mkdir_p.h"

typedef struct amp_out_file {
    char final[PATH_MAX];
    char temp[PATH_MAX + 32]; /* "" once renamed or removed */
    FILE *f;
    int published; /* renamed into place while still open for appending */
} amp_out_file;

/* Opens a unique temporary for DIR/NAME for writing. 0, or -1 with
 * "path: why" in err. */
int amp_out_open(amp_out_file *o, const char *dir, const char *name, char *err, size_t errlen);
/* Flushes, syncs and renames the temporary onto DIR/NAME while keeping it
 * open: later writes append to DIR/NAME itself (a log that must survive the
 * process, such as metrics.jsonl). 0, or -1 with err. */
int amp_out_publish(amp_out_file *o, char *err, size_t errlen);
/* Flushes, syncs, closes and renames onto DIR/NAME (a published file is only
 * synced and closed); on any write error the temporary is removed and -1
 * returned with the reason in err. */
int amp_out_commit(amp_out_file *o, char *err, size_t errlen);
/* Closes and removes the temporary (a published file is closed and kept;
 * safe on a zeroed or committed struct). */
void amp_out_abort(amp_out_file *o);

/* A unique temporary beside `final` (same folder, so a rename is atomic),
 * created with mode 0666 & ~umask and O_CLOEXEC, and registered. Its path
 * goes to tmp. Returns the descriptor, or -1 with err. */
int amp_tmp_create(const char *final, char *tmp, size_t tmplen, char *err, size_t errlen);
/* Unregisters tmp once it was renamed or removed. */
void amp_tmp_forget(const char *tmp);
/* Removes every registered temporary. Async-signal-safe (unlink only). */
void amp_tmp_unlink_all(void);
/* 1 when `name` (no folder) is a temporary amp_tmp_create makes for a file
 * named `base`. */
int amp_tmp_is_temp_of(const char *name, const char *base);
/* Removes the temporaries of the files `bases` (NULL-terminated) in dir: call
 * only with the folder locked, when any temporary is a dead writer's. */
void amp_tmp_remove_stale(const char *dir, const char *const *bases);

/* fsync of a folder, so that a rename in it is durable. 0 or -1 (errno). */
int amp_fsync_dir(const char *dir);

/* Refuses to write the outputs `names` (NULL-terminated) into dir when one
 * of them is the same file as one of `inputs` (NULL entries skipped): the
 * rename would destroy an input of the run. 0, or -1 with err naming both. */
int amp_out_check_inputs(const char *dir, const char *const *names, const char *const *inputs,
                         int ninputs, char *err, size_t errlen);

/* write(2) until all n bytes are out, in pieces of at most 64 KiB, retrying
 * short writes and EINTR. 0, or -1 with errno set. */
int amp_write_full(int fd, const void *buf, size_t n);

#endif
