/* The op-row harness of the GPU tests (op_rows.h), on the CPU: a row that
 * aborts and a row whose EXPECT fails are both listed, the rows after them
 * still run, an aborted row stops where it aborted, a test in which no row
 * ran fails, and one in which every row passed succeeds. Built a second time
 * with AMP_TEST_BREAK_OP="pass first" (test_op_rows_break): that row fails on
 * purpose and every later row is still reported. */
#include "op_rows.h"

static int after_abort_ran, last_ran, self_failures;

#define SELF_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "SELF-TEST FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            self_failures++;                                                   \
        }                                                                      \
    } while (0)

static void reset(void) {
    amp_test_failures = amp_op_rows = amp_op_passed = amp_op_failed = 0;
    amp_op_failed_list[0] = '\0';
}

static void row_pass(void) { EXPECT(1 + 1 == 2, "arithmetic"); }
static void row_abort(void) {
    amp_op_abort("a call that cannot go on (simulated)");
    after_abort_ran = 1;
}
static void row_expect_fails(void) { EXPECT(1 + 1 == 3, "a failed check (simulated)"); }
static void row_last(void) { last_ran = 1; }

int main(void) {
    AMP_OP_ROW(row_pass(), "pass first");
    AMP_OP_ROW(row_abort(), "abort %s", "middle");
    AMP_OP_CALL(row_expect_fails());
    AMP_OP_ROW(row_last(), "pass last");
    int rc = amp_op_finish("mixed");
#ifdef AMP_TEST_BREAK_OP
    const char *want = "pass first; abort middle; row_expect_fails()";
    int want_passed = 1;
#else
    const char *want = "abort middle; row_expect_fails()";
    int want_passed = 2;
#endif
    SELF_CHECK(rc == 1, "finish returned %d with failed rows", rc);
    SELF_CHECK(strcmp(amp_op_failed_list, want) == 0, "failed list '%s', expected '%s'",
               amp_op_failed_list, want);
    SELF_CHECK(last_ran, "the row after the failures did not run");
    SELF_CHECK(!after_abort_ran, "an aborted row went on past amp_op_abort");
    SELF_CHECK(amp_op_rows == 4 && amp_op_passed == want_passed, "rows %d passed %d", amp_op_rows,
               amp_op_passed);

    reset();
    rc = amp_op_finish("empty");
    SELF_CHECK(rc == 1, "a test with no row returned %d", rc);

    reset();
    AMP_OP_ROW(row_last(), "only");
    rc = amp_op_finish("passing");
    SELF_CHECK(rc == 0, "a test whose one row passed returned %d", rc);

    if (self_failures) return 1;
    printf("op-row harness self-test passed\n");
    return 0;
}
