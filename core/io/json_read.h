/* A small strict JSON reader (RFC 8259) for reading back what amptrain wrote
 * (summary.json, metrics.jsonl, ab.json). It builds a tree; errors name the
 * source and line: "runs/x/summary.json:12: expected ',' or '}'".
 *
 * Strict: no comments, no trailing commas, no NaN/Infinity, no leading
 * zeros, no control characters in strings, nothing after the value but
 * whitespace, nesting at most 64 deep. \uXXXX escapes (surrogate pairs
 * included) become UTF-8; \u0000 is refused (strings are C strings). */
#ifndef AMP_JSON_READ_H
#define AMP_JSON_READ_H

#include <stddef.h>

typedef enum amp_jtype {
    AMP_JNULL,
    AMP_JBOOL,
    AMP_JNUM,
    AMP_JSTR,
    AMP_JARR,
    AMP_JOBJ
} amp_jtype;

typedef struct amp_jval amp_jval;
struct amp_jval {
    amp_jtype type;
    int line;       /* line where the value starts, for messages */
    int b;          /* AMP_JBOOL */
    double num;     /* AMP_JNUM */
    char *str;      /* AMP_JSTR: owned, NUL-terminated */
    size_t n;       /* AMP_JARR / AMP_JOBJ: element count */
    amp_jval *items; /* [n] elements (arrays) or member values (objects), owned */
    char **keys;    /* [n] member names (objects), owned; NULL for arrays */
};

/* Parses text[0..len). name labels messages (a path); first_line is the line
 * number of text's first line (1 for a file, the line number for one line of
 * a .jsonl). Returns a tree to free with amp_json_free, or NULL with
 * "name:line: message" in err. */
amp_jval *amp_json_parse(const char *text, size_t len, const char *name, int first_line,
                         char *err, size_t errlen);
/* Reads and parses a whole file; "path: cannot read: <strerror>" when it
 * cannot be read. */
amp_jval *amp_json_parse_file(const char *path, char *err, size_t errlen);
void amp_json_free(amp_jval *v);

/* Member of an object by name (the first one when repeated), NULL when v is
 * not an object or has no such member. */
const amp_jval *amp_json_get(const amp_jval *v, const char *key);
/* The member as a number / string / array; NULL when absent or of another
 * type. */
const amp_jval *amp_json_get_type(const amp_jval *v, const char *key, amp_jtype type);

#endif
