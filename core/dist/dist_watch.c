/* The watchdog thread (dist_watch.h): a condition variable on the
 * monotonic clock, so a changed wall clock neither fires nor delays it. */
#include "dist/dist_watch.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct amp_dist_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int done;
    double timeout_s;
    void (*late)(void *arg);
    void *arg;
};

static void *watch(void *p) {
    amp_dist_watch *w = p;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)w->timeout_s;
    until.tv_nsec += (long)((w->timeout_s - (double)(time_t)w->timeout_s) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    int rc = 0;
    while (!w->done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
    int late = !w->done;
    pthread_mutex_unlock(&w->mu);
    if (late) w->late(w->arg);
    return NULL;
}

amp_dist_watch *amp_dist_watch_start(double timeout_s, void (*late)(void *arg), void *arg) {
    amp_dist_watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->timeout_s = timeout_s;
    w->late = late;
    w->arg = arg;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&w->thread, NULL, watch, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

void amp_dist_watch_stop(amp_dist_watch *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
