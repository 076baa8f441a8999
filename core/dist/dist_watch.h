/* A watchdog for a call that has no timeout of its own and may wait for
 * ever on another rank: MPI_Init inside the launcher's fence,
 * ncclCommInitRank while a peer never joins. A thread waits beside the call;
 * if the call has not returned within the timeout, late(arg) runs on that
 * thread and must end the process (it cannot interrupt the call). */
#ifndef AMP_DIST_WATCH_H
#define AMP_DIST_WATCH_H

typedef struct amp_dist_watch amp_dist_watch;

/* Starts watching; NULL when no thread could be started (the call then
 * runs unwatched, as it would without this file). */
amp_dist_watch *amp_dist_watch_start(double timeout_s, void (*late)(void *arg), void *arg);
/* The call returned: stops the thread and frees w (NULL is fine). */
void amp_dist_watch_stop(amp_dist_watch *w);

#endif
