/* One process at a time in a run folder: `train` (new or --resume) and `ab`
 * take an exclusive flock on DIR/.amptrain.lock for as long as they write
 * there. The file holds the holder's PID and command, so a second process
 * is refused with a message that names them. The kernel drops the lock
 * when the holder exits, however it exits (a SIGKILLed holder leaves the
 * file, which the next holder reuses). */
#ifndef AMP_RUN_LOCK_H
#define AMP_RUN_LOCK_H

#include <limits.h>
#include <stddef.h>

#define AMP_RUN_LOCK_NAME ".amptrain.lock"

typedef struct amp_run_lock {
    int fd; /* -1 when not held */
    char path[PATH_MAX + 32];
} amp_run_lock;

/* Locks the existing folder dir for `what` ("train", "ab"). 0 held; 1 busy
 * (another process holds it: err names its PID and what it runs); -1 any
 * other failure (err says why). The descriptor is O_CLOEXEC, so children
 * do not inherit the lock. */
int amp_run_lock_acquire(amp_run_lock *l, const char *dir, const char *what, char *err,
                         size_t errlen);

/* Removes the lock file and releases the lock (safe when not held). */
void amp_run_lock_release(amp_run_lock *l);

#endif
