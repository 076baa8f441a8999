#include "peak_rss.h"

#include <stdio.h>
#include <string.h>

size_t amp_peak_rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t kib = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0 && sscanf(line + 6, "%zu", &kib) == 1) break;
    fclose(f);
    return kib * 1024;
}
