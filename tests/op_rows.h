/* A GPU op test as a table of rows, one per op and shape: each row runs,
 * passes or fails on its own, and the test goes on to the next row, so one
 * run on a GPU reports every op. A row fails on a failed EXPECT (expect.h)
 * or on amp_op_abort (a call that cannot go on: an alloc, an upload, the op
 * itself returning an error), which jumps back to the table; whatever that
 * row allocated is leaked, which a test process may do. amp_op_finish lists
 * the failed rows and fails a test in which no row passed: a test that
 * checked nothing cannot pass.
 *
 * Built with -DAMP_TEST_BREAK_OP="label prefix" (CMake: -DAMP_TEST_BREAK_OP=...)
 * every row whose label starts so fails at its start, on purpose: the run
 * then shows that every later row is still reported. */
#ifndef AMP_TESTS_OP_ROWS_H
#define AMP_TESTS_OP_ROWS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"

static jmp_buf amp_op_jmp;
static char amp_op_label[160];
static int amp_op_in_row, amp_op_failures_at_start;
static int amp_op_rows, amp_op_passed, amp_op_failed;
static char amp_op_failed_list[4096]; /* "label; label; ..." */

/* The current row cannot go on: reports why, counts the failure, and jumps
 * back to the row's AMP_OP_ROW. Outside a row it only reports and counts. */
static void amp_op_abort(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "FAIL %s: ", amp_op_in_row ? amp_op_label : "(setup)");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    amp_test_failures++;
    if (amp_op_in_row) longjmp(amp_op_jmp, 1);
}

static void amp_op_enter(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(amp_op_label, sizeof amp_op_label, fmt, ap);
    va_end(ap);
    amp_op_in_row = 1;
    amp_op_failures_at_start = amp_test_failures;
    amp_op_rows++;
}

static void amp_op_break_if_asked(void) {
#ifdef AMP_TEST_BREAK_OP
    if (strncmp(amp_op_label, AMP_TEST_BREAK_OP, strlen(AMP_TEST_BREAK_OP)) == 0)
        amp_op_abort("broken on purpose (built with AMP_TEST_BREAK_OP=\"%s\")", AMP_TEST_BREAK_OP);
#endif
}

static void amp_op_leave(void) {
    amp_op_in_row = 0;
    if (amp_test_failures == amp_op_failures_at_start) {
        amp_op_passed++;
        printf("ok   %s\n", amp_op_label);
        return;
    }
    amp_op_failed++;
    printf("FAIL %s\n", amp_op_label);
    size_t used = strlen(amp_op_failed_list);
    snprintf(amp_op_failed_list + used, sizeof amp_op_failed_list - used, "%s%s",
             used ? "; " : "", amp_op_label);
}

/* AMP_OP_ROW(call, label_fmt, ...): one row; call is a statement (an op
 * test function call). setjmp stands alone in its if, as C11 7.13.1.1
 * requires. */
#define AMP_OP_ROW(call, ...)                \
    do {                                     \
        amp_op_enter(__VA_ARGS__);           \
        if (setjmp(amp_op_jmp) == 0) {       \
            amp_op_break_if_asked();         \
            call;                            \
        }                                    \
        amp_op_leave();                      \
    } while (0)

/* AMP_OP_CALL(call): a row labelled with the call's own text. */
#define AMP_OP_CALL(call) AMP_OP_ROW(call, "%s", #call)

/* The test's exit status: 0 when every row passed and at least one ran, 1
 * otherwise (with the list of failed rows on stderr). */
static int amp_op_finish(const char *test) {
    if (amp_op_failed || amp_test_failures) {
        fprintf(stderr, "%s: %d of %d op row(s) failed (%d check(s)): %s\n", test, amp_op_failed,
                amp_op_rows, amp_test_failures, amp_op_failed_list[0] ? amp_op_failed_list : "(setup)");
        return 1;
    }
    if (amp_op_passed == 0) {
        fprintf(stderr, "%s: FAIL: no op row ran, nothing was checked\n", test);
        return 1;
    }
    printf("%s: all %d op rows passed\n", test, amp_op_passed);
    return 0;
}

#endif
