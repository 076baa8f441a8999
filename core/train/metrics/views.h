/* metrics.csv and the TensorBoard event file: views of metrics.jsonl,
 * fed the same lines as it is and kept in step with it. A new run writes
 * them as temporaries published with metrics.jsonl (its first checkpoint,
 * or the end); a resume rebuilds them from the history metrics.jsonl was
 * cut back to, so no step appears twice; a failed write cuts every file
 * back to its last whole row and record and is an error like a failed
 * metrics.jsonl write. The event file is DIR/tensorboard/
 * events.out.tfevents.<seconds>.<host>, written only with [run]
 * tensorboard = true; the folder's other event files (an earlier run's, or
 * this run's before a resume) are removed when the new one is published.
 * Only the process that writes metrics.jsonl (rank 0) holds views. */
#ifndef AMP_METRICS_VIEWS_H
#define AMP_METRICS_VIEWS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "util/out_file.h"

typedef struct amp_views {
    int tensorboard; /* [run] tensorboard: write the event file */
    int open;
    amp_out_file csv, tb;
    uint64_t csv_len, tb_len; /* whole rows / records written */
    char tbdir[PATH_MAX];
} amp_views;

/* Opens the temporaries in outdir (removing dead writers' temporaries of
 * event files; call with the folder locked): the CSV header, and the event
 * file's version record. v->tensorboard is set by the caller. 0, or -1
 * with err. */
int amp_views_open(amp_views *v, const char *outdir, char *err, size_t errlen);
/* Converts and appends whole lines text[0..n) (metrics.jsonl's). 0, or
 * -1 with err and every file as it was before the call. A no-op when not
 * open. */
int amp_views_add(amp_views *v, const char *text, size_t n, char *err, size_t errlen);
/* Feeds the first len bytes of the file fd (a metrics.jsonl history). */
int amp_views_replay(amp_views *v, int fd, uint64_t len, char *err, size_t errlen);
/* Renames the temporaries into place, still open for appending, after
 * removing the folder's other event files. 0, or -1 with err. */
int amp_views_publish(amp_views *v, char *err, size_t errlen);
/* Syncs and closes (publishing first when not published). */
int amp_views_commit(amp_views *v, char *err, size_t errlen);
/* Closes; removes unpublished temporaries, keeps published files. */
void amp_views_abort(amp_views *v);
/* Removes the published files too (a history nothing points into). */
void amp_views_remove(amp_views *v);

#endif
