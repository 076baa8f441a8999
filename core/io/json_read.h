/* Reading JSON back (summary.json, metrics.jsonl, ab.json) with Debian's
 * jansson (libjansson-dev), into a small tree the A/B code walks. Errors
 * name the source, line and column: "runs/x/summary.json:12:5: duplicate
 * object key near '"loss"'".
 *
 * Strict (RFC 8259, as jansson reads it): no comments, no trailing commas,
 * no NaN/Infinity, no leading zeros, no control characters or invalid UTF-8
 * in strings, nothing after the value but whitespace, nesting at most 2048
 * deep (jansson's limit). Duplicate keys in an object are an error
 * (JSON_REJECT_DUPLICATES), as is \u0000 (strings are C strings). Numbers
 * are read as doubles (JSON_DECODE_INT_AS_REAL), so a large integer is a
 * large number, not an error. */
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

/* The largest file amp_json_parse_file reads (summary.json and ab.json are
 * kilobytes; a bigger file is not one amptrain wrote). */
#define AMP_JSON_FILE_MAX (64u << 20)

typedef struct amp_jval amp_jval;
struct amp_jval {
    amp_jtype type;
    int line;       /* first_line of the parse (jansson keeps no position per
                     * value): the line of a .jsonl record; use amp_json_path
                     * to name a value inside a document */
    int b;          /* AMP_JBOOL */
    double num;     /* AMP_JNUM */
    char *str;      /* AMP_JSTR: owned, NUL-terminated */
    size_t n;       /* AMP_JARR / AMP_JOBJ: element count */
    amp_jval *items; /* [n] elements (arrays) or member values (objects), owned */
    char **keys;    /* [n] member names (objects), owned; NULL for arrays */
    const amp_jval *parent; /* the array or object holding it; NULL for the root */
};

/* Parses text[0..len). name labels messages (a path); first_line is the line
 * number of text's first line (1 for a file, the line number for one line of
 * a .jsonl). Returns a tree to free with amp_json_free, or NULL with
 * "name:line:column: message" in err. */
amp_jval *amp_json_parse(const char *text, size_t len, const char *name, int first_line,
                         char *err, size_t errlen);
/* Reads and parses a whole file: a regular file (io/file.h) of at most
 * AMP_JSON_FILE_MAX bytes; "path: cannot read: <why>" when it cannot be
 * read. */
amp_jval *amp_json_parse_file(const char *path, char *err, size_t errlen);
void amp_json_free(amp_jval *v);

/* Member of an object by name, NULL when v is not an object or has no such
 * member (keys are unique: duplicates are refused when parsing). */
const amp_jval *amp_json_get(const amp_jval *v, const char *key);
/* The member as a number / string / array; NULL when absent or of another
 * type. */
const amp_jval *amp_json_get_type(const amp_jval *v, const char *key, amp_jtype type);

/* Where v sits in its document, for messages: "layers[2].forward", "" for
 * the root. Returns out. */
char *amp_json_path(const amp_jval *v, char *out, size_t cap);

#endif
