/* The one monotonic clock the timings read (steps, watchdogs, benches), and
 * the process CPU clock beside it: CPU time is all threads' work, which
 * other processes on the machine cannot add to, so a slow step can be told
 * from a busy host. clock_gettime is async-signal-safe, so the stop handler
 * may read amp_clock_s too. */
#ifndef AMP_CLOCK_H
#define AMP_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC (the origin is arbitrary: take differences). */
static inline double amp_clock_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The same in milliseconds. */
static inline double amp_clock_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Process CPU time (every thread) in milliseconds. */
static inline double amp_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif
