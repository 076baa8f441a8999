#include "backend/cpu_threads.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* cpu's "package:core" id into *id; 0, or -1 when sysfs does not say. */
static int core_id(int cpu, long *id) {
    long v[2];
    static const char *const what[] = {"physical_package_id", "core_id"};
    for (int i = 0; i < 2; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", cpu, what[i]);
        FILE *f = fopen(path, "r");
        int ok = f && fscanf(f, "%ld", &v[i]) == 1;
        if (f) fclose(f);
        if (!ok) return -1;
    }
    *id = v[0] * 65536 + v[1];
    return 0;
}

int amp_cpu_usable_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    int cpus = CPU_COUNT(&set);
    long *seen = malloc(sizeof *seen * (size_t)(cpus > 0 ? cpus : 1));
    int cores = 0;
    for (int cpu = 0; seen && cpu < CPU_SETSIZE; cpu++) {
        long id;
        if (!CPU_ISSET(cpu, &set)) continue;
        if (core_id(cpu, &id) != 0) {
            cores = cpus; /* no topology: every CPU counts */
            break;
        }
        int dup = 0;
        for (int i = 0; i < cores && !dup; i++) dup = seen[i] == id;
        if (!dup) seen[cores++] = id;
    }
    free(seen);
    if (!seen) cores = cpus;
    return cores > 0 ? cores : 1;
}
