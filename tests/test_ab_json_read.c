/* The JSON reader (jansson): values, escapes, errors that name line and
 * column, duplicate keys refused, paths, and files that are not files. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ab/ab.h"
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

static void put(const char *dir, const char *name, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    EXPECT(f != NULL, "cannot write %s", path);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* What `amptrain ab` makes of a run folder's files: errors inside a
 * document name the value's path (jansson keeps no line per value), errors
 * in metrics.jsonl the line; a duplicate key is an error, never "the first
 * one wins"; an endless line is refused without being read whole. */
static void test_run_load(void) {
    static const char summary_head[] =
        "{\"plugins\": {\"precision\": {\"name\": \"fp16\"}, \"scaler\": {\"name\": \"dynamic\"}},\n"
        " \"device\": \"cpu\", \"steps\": 2, \"skipped_steps\": 0, \"final_train_loss\": 1,\n"
        " \"test_loss\": 1, \"test_acc\": 0.5, \"final_scale\": 65536, \"wall_seconds\": 1,\n"
        " \"median_step_ms\": 1, \"underflow\": 0, \"overflow\": 0, \"rounded\": 0,\n"
        " \"memory_peak_bytes\": {\"total\": 100},\n"
        " \"layers\": [{\"name\": \"fc1\", \"forward\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0},\n"
        "   \"grad\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0}},\n";
    static const char metrics[] =
        "{\"step\": 1, \"skipped\": false, \"loss\": 1, \"scale\": 1, \"step_ms\": 1, \"underflow\": 0, \"overflow\": 0}\n"
        "{\"step\": 2, \"skipped\": false, \"loss\": 1, \"scale\": 1, \"step_ms\": 1, \"underflow\": 0, \"overflow\": 0}\n";
    char dir[] = "/tmp/amp_test_ab_load_XXXXXX", text[4096], err[512];
    if (!mkdtemp(dir)) {
        EXPECT(0, "mkdtemp");
        return;
    }
    amp_ab_study st;
    amp_ab_run r;
    struct {
        const char *layer1, *metrics, *want;
    } cases[] = {
        {"  {\"name\": \"fc2\", \"forward\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0},"
         " \"grad\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0}}]}\n",
         metrics, NULL},
        {"  {\"name\": \"fc2\", \"forward\": {\"underflow\": \"x\", \"overflow\": 0, \"rounded\": 0},"
         " \"grad\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0}}]}\n",
         metrics, "summary.json: in layers[1].forward: \"underflow\" is a string, expected a number"},
        {"  {\"name\": \"fc2\", \"forward\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0}}]}\n",
         metrics, "summary.json: in layers[1]: missing \"grad\""},
        {"  {\"name\": \"fc2\", \"name\": \"fc3\"}]}\n", metrics,
         "summary.json:8:24: duplicate object key near '\"name\"'"},
        {"  {\"name\": \"fc2\", \"forward\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0},"
         " \"grad\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0}}]}\n",
         "{\"step\": 1, \"skipped\": false, \"loss\": 1, \"scale\": 1, \"step_ms\": 1, \"underflow\": 0, \"overflow\": 0}\n"
         "{\"step\": 2, \"step\": 3}\n",
         "metrics.jsonl:2:18: duplicate object key near '\"step\"'"},
        {"  {\"name\": \"fc2\", \"forward\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0},"
         " \"grad\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0}}]}\n",
         "{\"skipped\": false}\n", "metrics.jsonl:1: missing \"step\""},
        /* A step that does not fit int64 (converting it was undefined). */
        {"  {\"name\": \"fc2\", \"forward\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0},"
         " \"grad\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0}}]}\n",
         "{\"step\": 1e300, \"skipped\": false}\n",
         "metrics.jsonl:1: \"step\" is 1.0000000000000001e+300, not a whole number in [0, 2^53]"},
        {"  {\"name\": \"fc2\", \"forward\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0},"
         " \"grad\": {\"underflow\": 0, \"overflow\": 0, \"rounded\": 0}}]}\n",
         "{\"step\": 2.5, \"test_acc\": 1, \"test_loss\": 1}\n",
         "metrics.jsonl:1: \"step\" is 2.5, not a whole number"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(text, sizeof text, "%s%s", summary_head, cases[c].layer1);
        put(dir, "summary.json", text);
        put(dir, "metrics.jsonl", cases[c].metrics);
        memset(&st, 0, sizeof st);
        memset(&r, 0, sizeof r);
        snprintf(r.dir, sizeof r.dir, "%s", dir);
        err[0] = '\0';
        int rc = amp_ab_run_load(&r, &st, err, sizeof err);
        if (!cases[c].want)
            EXPECT(rc == 0 && r.nlayers == 2 && r.npts == 2, "case %zu: %s", c, err);
        else
            EXPECT(rc != 0 && strstr(err, cases[c].want) != NULL, "case %zu: got '%s', want '%s'", c,
                   err, cases[c].want);
        amp_ab_run_free(&r);
    }
    /* A metrics line of 8 MiB (no newline): refused after 1 MiB. */
    char path[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"step\": ", f);
        for (int i = 0; i < 8 << 10; i++) fprintf(f, "%01023d", 0);
        fclose(f);
    }
    memset(&st, 0, sizeof st);
    memset(&r, 0, sizeof r);
    snprintf(r.dir, sizeof r.dir, "%s", dir);
    snprintf(text, sizeof text, "%s%s", summary_head, cases[0].layer1);
    put(dir, "summary.json", text);
    int rc = amp_ab_run_load(&r, &st, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, "metrics.jsonl:1: longer than 1048576 bytes"), "long line: %s", err);
    amp_ab_run_free(&r);
    unlink(path);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    test_run_load();
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
        EXPECT(amp_json_get_type(v, "o", AMP_JOBJ) && amp_json_get(v, "o")->n == 0, "empty object");
        EXPECT(amp_json_get(v, "missing") == NULL, "absent member");
        EXPECT(amp_json_get_type(v, "a", AMP_JOBJ) == NULL, "type mismatch gives NULL");
    }
    amp_json_free(v);

    /* Errors come from jansson with line:column. */
    bad("{\"a\": 1,}", "t.json:1:9: string or '}' expected");
    bad("{\n\"a\": 1\n\"b\": 2}", "t.json:3:3: '}' expected near '\"b\"'");
    bad("[01]", "t.json:1:2: invalid token");
    bad("[1.]", "t.json:1:3: invalid token");
    bad("[NaN]", "t.json:1:4: invalid token near 'NaN'");
    bad("[Infinity]", "t.json:1:9: invalid token near 'Infinity'");
    bad("{\"a\": 1} x", "t.json:1:10: end of file expected near 'x'");
    bad("\n\n\"abc", "t.json:3:4: premature end of input");
    bad("\"a\tb\"", "t.json:1:2: control character 0x9");
    bad("\"\\ud800x\"", "t.json:1:9: invalid Unicode '\\uD800'");
    bad("\"\\u0000\"", "t.json:1:8: \\u0000 is not allowed");
    bad("\"\\q\"", "t.json:1:3: invalid escape");
    bad("{'a': 1}", "t.json:1:2: string or '}' expected");
    bad("", "t.json:1:1: unexpected token near end of file");
    bad("[1e999]", "t.json:1:6: real number overflow");
    bad("[\"\xff\"]", "t.json:1:2: unable to decode byte 0xff");
    /* Duplicate keys are refused at any depth, never "the first one wins". */
    bad("{\"loss\": 1, \"loss\": 2}", "t.json:1:18: duplicate object key near '\"loss\"'");
    bad("{\"a\": {\"x\": 1,\n \"x\": 2}}", "t.json:2:4: duplicate object key");
    {
        static char deep[6001];
        memset(deep, '[', 3000);
        memset(deep + 3000, ']', 3000);
        bad(deep, "t.json:1:2049: maximum parsing depth reached");
    }
    /* A large integer is a large number, not an error. */
    v = parse("[123456789012345678901234567890]", err);
    EXPECT(v && v->n == 1 && v->items[0].num > 1.2e29 && v->items[0].num < 1.3e29, "%s", err);
    amp_json_free(v);
    /* Paths name values inside a document. */
    v = parse("{\"layers\": [{\"name\": \"fc1\"}, {\"forward\": {\"underflow\": \"x\"}}]}", err);
    EXPECT(v != NULL, "%s", err);
    if (v) {
        const amp_jval *l = amp_json_get_type(v, "layers", AMP_JARR);
        char path[128];
        const amp_jval *u = l && l->n == 2 ? amp_json_get(amp_json_get(&l->items[1], "forward"), "underflow") : NULL;
        EXPECT(u && strcmp(amp_json_path(u, path, sizeof path), "layers[1].forward.underflow") == 0,
               "path: %s", u ? path : "(no value)");
        EXPECT(strcmp(amp_json_path(v, path, sizeof path), "") == 0, "root path: %s", path);
    }
    amp_json_free(v);
    /* a .jsonl line keeps its own line number */
    v = amp_json_parse("{\"x\": tru}", 10, "m.jsonl", 42, err, sizeof err);
    EXPECT(!v && strncmp(err, "m.jsonl:42:9: invalid token near 'tru'", 38) == 0, "%s", err);
    v = amp_json_parse_file("/nonexistent/summary.json", err, sizeof err);
    EXPECT(!v && strstr(err, "/nonexistent/summary.json: cannot read") == err, "%s", err);
    /* Only regular files: a FIFO or a device is refused at once. */
    v = amp_json_parse_file("/dev/zero", err, sizeof err);
    EXPECT(!v && strcmp(err, "/dev/zero: cannot read: it is a character device, not a regular "
                             "file") == 0, "%s", err);
    char dir[] = "/tmp/amp_test_json_XXXXXX", fifo[64];
    if (mkdtemp(dir)) {
        snprintf(fifo, sizeof fifo, "%s/summary.json", dir);
        EXPECT(mkfifo(fifo, 0600) == 0, "mkfifo");
        v = amp_json_parse_file(fifo, err, sizeof err);
        EXPECT(!v && strstr(err, "it is a FIFO (named pipe), not a regular file"), "%s", err);
        unlink(fifo);
        /* A file above AMP_JSON_FILE_MAX is refused before it is read. */
        int fd = open(fifo, O_CREAT | O_WRONLY, 0600);
        EXPECT(fd >= 0 && ftruncate(fd, (off_t)AMP_JSON_FILE_MAX + 1) == 0, "sparse file");
        if (fd >= 0) close(fd);
        v = amp_json_parse_file(fifo, err, sizeof err);
        EXPECT(!v && strstr(err, "bytes, more than the 67108864 this file may have"), "%s", err);
        unlink(fifo);
        rmdir(dir);
    }
    return amp_test_failures ? 1 : 0;
}
