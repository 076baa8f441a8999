/* The strict JSON reader: values, escapes, and errors that name the line. */
#include <math.h>
#include <string.h>

#include "expect.h"
#include "io/json_read.h"

static amp_jval *parse(const char *text, char *err) {
    return amp_json_parse(text, strlen(text), "t.json", 1, err, 256);
}

/* The text must fail with a message starting with want. */
static void bad(const char *text, const char *want) {
    char err[256] = "";
    amp_jval *v = parse(text, err);
    EXPECT(v == NULL, "accepted: %s", text);
    EXPECT(strncmp(err, want, strlen(want)) == 0, "%s: got '%s', expected '%s...'", text, err, want);
    amp_json_free(v);
}

int main(void) {
    char err[256] = "";
    amp_jval *v = parse("{\"a\": [1, -2.5e3, 0.25, true, false, null],\n"
                        " \"s\": \"x\\\"\\\\\\/\\n\\u00e9\\ud83d\\ude00\", \"o\": {}, \"e\": []}",
                        err);
    EXPECT(v != NULL, "%s", err);
    if (v) {
        const amp_jval *a = amp_json_get_type(v, "a", AMP_JARR);
        EXPECT(a && a->n == 6, "array of 6");
        if (a && a->n == 6) {
            EXPECT(a->items[0].num == 1 && a->items[1].num == -2500 && a->items[2].num == 0.25,
                   "numbers");
            EXPECT(a->items[3].type == AMP_JBOOL && a->items[3].b && !a->items[4].b, "booleans");
            EXPECT(a->items[5].type == AMP_JNULL, "null");
        }
        const amp_jval *s = amp_json_get_type(v, "s", AMP_JSTR);
        EXPECT(s && strcmp(s->str, "x\"\\/\n\xc3\xa9\xf0\x9f\x98\x80") == 0, "escapes and UTF-8");
        EXPECT(s && s->line == 2, "line of \"s\": %d", s ? s->line : -1);
        EXPECT(amp_json_get_type(v, "o", AMP_JOBJ) && amp_json_get(v, "o")->n == 0, "empty object");
        EXPECT(amp_json_get(v, "missing") == NULL, "absent member");
        EXPECT(amp_json_get_type(v, "a", AMP_JOBJ) == NULL, "type mismatch gives NULL");
    }
    amp_json_free(v);

    bad("{\"a\": 1,}", "t.json:1: trailing comma");
    bad("{\n\"a\": 1\n\"b\": 2}", "t.json:3: expected ',' or '}'");
    bad("[01]", "t.json:1: malformed number: leading zero");
    bad("[1.]", "t.json:1: malformed number");
    bad("[NaN]", "t.json:1: expected a value");
    bad("[Infinity]", "t.json:1: expected a value");
    bad("{\"a\": 1} x", "t.json:1: unexpected 'x' after the value");
    bad("\n\n\"abc", "t.json:3: unterminated string");
    bad("\"a\tb\"", "t.json:1: control character 0x09");
    bad("\"\\ud800x\"", "t.json:1: a high surrogate");
    bad("\"\\u0000\"", "t.json:1: \\u0000 is not supported");
    bad("\"\\q\"", "t.json:1: unknown escape");
    bad("{'a': 1}", "t.json:1: expected a member name");
    bad("", "t.json:1: expected a value, found the end");
    bad("[1e999]", "t.json:1: number 1e999 is out of range");
    {
        char deep[200];
        memset(deep, '[', 100);
        deep[100] = '\0';
        bad(deep, "t.json:1: nested deeper than 64");
    }
    /* a .jsonl line keeps its own line number */
    v = amp_json_parse("{\"x\": tru}", 10, "m.jsonl", 42, err, sizeof err);
    EXPECT(!v && strncmp(err, "m.jsonl:42: expected a value", 27) == 0, "%s", err);
    v = amp_json_parse_file("/nonexistent/summary.json", err, sizeof err);
    EXPECT(!v && strstr(err, "/nonexistent/summary.json: cannot read") == err, "%s", err);
    return amp_test_failures ? 1 : 0;
}
