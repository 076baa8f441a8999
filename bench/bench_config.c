/* bench_config: INI parse + read + check time against the number of keys.
 * See bench/README.md. For each size N it builds a config text of N keys in
 * N/200 sections (at least one), parses it (amp_config_parse), reads every
 * key back (amp_config_get_int), runs amp_config_check_unread, and prints
 * the wall time and the string comparisons the lookups made per key. A
 * linear parser shows a flat ms-per-1k-keys column.
 *
 *   bench_config [N...]     default: 1000 10000 40000 100000
 *
 * Exit status: 0 ok, 1 a parse or read failed, 2 usage error. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/config.h"
#include "util/clock.h"

static int run(long n) {
    long per = n < 200 ? n : n / 200;
    size_t cap = (size_t)n * 48 + 64, len = 0;
    char *text = malloc(cap);
    if (!text) return 1;
    for (long i = 0; i < n; i++) {
        if (i % per == 0) len += (size_t)snprintf(text + len, cap - len, "[s%ld]\n", i / per);
        len += (size_t)snprintf(text + len, cap - len, "key%ld = %ld\n", i, i);
    }
    char err[512];
    double t0 = amp_clock_ms();
    amp_config *cfg = amp_config_parse("bench.ini", text, len, err, sizeof err);
    double t1 = amp_clock_ms();
    free(text);
    if (!cfg) {
        fprintf(stderr, "bench_config: %s\n", err);
        return 1;
    }
    int rc = 0;
    for (long i = 0; i < n && !rc; i++) {
        char sec[32], key[32];
        snprintf(sec, sizeof sec, "s%ld", i / per);
        snprintf(key, sizeof key, "key%ld", i);
        int64_t v;
        if (amp_config_get_int(cfg, sec, key, -1, 0, INT64_MAX, &v, err, sizeof err) != 1 || v != i) {
            fprintf(stderr, "bench_config: %s %s: %s\n", sec, key, err);
            rc = 1;
        }
    }
    if (!rc && amp_config_check_unread(cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench_config: %s\n", err);
        rc = 1;
    }
    double t2 = amp_clock_ms();
    if (!rc)
        printf("%8ld %10.1f %10.1f %10.1f %10.2f %9.1f\n", n, t1 - t0, t2 - t1, t2 - t0,
               (t2 - t0) / ((double)n / 1000.0), (double)amp_config_compares(cfg) / (double)n);
    amp_config_free(cfg);
    return rc;
}

int main(int argc, char **argv) {
    long sizes[16] = {1000, 10000, 40000, 100000};
    int ns = 4;
    if (argc > 1) {
        ns = 0;
        for (int i = 1; i < argc; i++) {
            char *end;
            errno = 0;
            long v = strtol(argv[i], &end, 10);
            if (errno || end == argv[i] || *end || v < 1 || v > 10000000 || ns == 16) {
                fprintf(stderr, "usage: bench_config [N...]   (1 <= N <= 10000000, at most 16)\n");
                return 2;
            }
            sizes[ns++] = v;
        }
    }
    printf("%8s %10s %10s %10s %10s %9s\n", "keys", "parse ms", "read ms", "total ms",
           "ms/1k keys", "cmp/key");
    for (int i = 0; i < ns; i++)
        if (run(sizes[i])) return 1;
    return 0;
}
