/* The INT8 test family (int8.c) and the format code that selects it: a
 * value past the ABI's amp_format, so no built-in family serves it. The
 * policy (policy.c) includes this too, with the plugin header alone. */
#ifndef AMP_TEST_FAMILY_INT8_H
#define AMP_TEST_FAMILY_INT8_H

#define AMP_TEST_FORMAT_INT8 0x7e57u

struct amp_format_family;
extern const struct amp_format_family amp_test_family_int8;

#endif
