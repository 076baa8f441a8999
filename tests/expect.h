/* The one soft assertion the C tests share: report the failed check with its
 * file:line and go on, so one run lists every failure; main() returns 1 when
 * amp_test_failures is non-zero. */
#ifndef AMP_TESTS_EXPECT_H
#define AMP_TESTS_EXPECT_H

#include <stdio.h>

static int amp_test_failures;

#define EXPECT(cond, ...)                                        \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
            amp_test_failures++;                                 \
        }                                                        \
    } while (0)

#endif
