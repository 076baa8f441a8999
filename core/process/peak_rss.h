/* The process's peak resident set (VmHWM), which summary.json reports beside
 * the arena bytes it accounts for: what is not in the arenas (libraries,
 * their workspaces, thread stacks) shows as the difference. */
#ifndef AMP_PEAK_RSS_H
#define AMP_PEAK_RSS_H

#include <stddef.h>

/* VmHWM of /proc/self/status in bytes; 0 where it cannot be read. */
size_t amp_peak_rss_bytes(void);

#endif
