/* How many threads the CPU backend runs by default: one per core this
 * process may run on (the CPUs of its affinity mask, taskset/cgroup
 * cpusets included), counting the hardware threads of one core once, since
 * a second thread on a core's sibling only competes for its FMA units. */
#ifndef AMP_CPU_THREADS_H
#define AMP_CPU_THREADS_H

/* Distinct cores among the CPUs of the affinity mask (their topology from
 * /sys/devices/system/cpu); the mask's CPU count where the topology cannot
 * be read; at least 1. */
int amp_cpu_usable_cores(void);

#endif
