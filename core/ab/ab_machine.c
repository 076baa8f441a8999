/* The machine and the time a study ran on, for ab.json and the report
 * (amp_ab_machine_info, ab.h). */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ab/ab.h"
#include "io/file.h"

void amp_ab_machine_info(amp_ab_study *st) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(st->created, sizeof st->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    struct utsname u;
    snprintf(st->host, sizeof st->host, "%s", uname(&u) == 0 ? u.nodename : "unknown");
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    st->ncpu = n > 0 ? (int)n : 0;
    snprintf(st->cpu, sizeof st->cpu, "unknown");
    char err[64];
    FILE *f = amp_file_fopen_read("/proc/cpuinfo", NULL, err, sizeof err);
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (strncmp(line, "model name", 10) == 0 && colon) {
                colon++;
                while (*colon == ' ') colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(st->cpu, sizeof st->cpu, "%s", colon);
                break;
            }
        }
        fclose(f);
    }
}
