/* Config parsing, strict reading and messages: every check compares the exact
 * "file:line: message" the user would see. */
#include "io/config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"

/* The temp file's path, for building expected messages. */
static char g_path[64];

/* Writes len bytes to a fresh temp file, loads it, removes the file. */
static amp_config *load_bytes(const char *bytes, size_t len, char *err, size_t errlen)
{
    snprintf(g_path, sizeof g_path, "/tmp/amp_test_config_XXXXXX");
    int fd = mkstemp(g_path);
    if (fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    if (write(fd, bytes, len) != (ssize_t)len) {
        perror("write");
        exit(1);
    }
    close(fd);
    err[0] = '\0';
    amp_config *cfg = amp_config_load(g_path, err, errlen);
    unlink(g_path);
    return cfg;
}

static amp_config *load_text(const char *text, char *err, size_t errlen)
{
    return load_bytes(text, strlen(text), err, errlen);
}

/* Expected message: g_path followed by the formatted rest. */
static const char *at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *at(const char *fmt, ...)
{
    static char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s", g_path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    return buf;
}

#define CHECK_MSG(got, want) EXPECT(strcmp((got), (want)) == 0, "message\n  got:  %s\n  want: %s", (got), (want))

/* A load that must fail with exactly `want`. */
static void expect_load_error(const char *text, const char *want_suffix)
{
    char err[512];
    amp_config *cfg = load_text(text, err, sizeof err);
    EXPECT(!cfg, "load of %s succeeded, wanted an error", text);
    CHECK_MSG(err, at("%s", want_suffix));
    amp_config_free(cfg);
}

static void test_parse_errors(void)
{
    expect_load_error("[optim]\nlr = 0.1\nthis is not valid\n",
                      ":3: cannot parse 'this is not valid': expected '[section]', 'key = value' "
                      "or a comment");
    expect_load_error("[optim]\nlr = 0.1\n\nlr = 0.2\n",
                      ":4: duplicate key 'lr' in [optim]; first set at line 2");
    expect_load_error("lr = 0.1\n[optim]\n", ":1: key 'lr' comes before any [section] header");
    expect_load_error("[optim]\nlr = 1\n[data]\n[optim]\n",
                      ":4: duplicate section [optim]; first at line 1");
    expect_load_error("[optim\nlr = 1\n", ":1: section header '[optim' has no closing ']'");
    expect_load_error("[opt im]\n", ":1: bad section name [opt im]: use letters, digits, '_' and '-'");
    expect_load_error("[optim] x\n", ":1: unexpected 'x' after the section header");
    expect_load_error("[optim]\nlr rate = 1\n",
                      ":2: bad key name 'lr rate': use letters, digits, '_', '.', '-' and the glob "
                      "characters * ? [ ] ! ^ (not first: '[')");
    expect_load_error("[optim]\n= 1\n", ":2: missing key name before '='");
    /* Error on the last line, without a final newline. */
    expect_load_error("[optim]\nlr = 1\nbroken", ":3: cannot parse 'broken': expected '[section]', "
                                                 "'key = value' or a comment");

    /* inih would split a long line silently; we refuse it. */
    char big[1100];
    memcpy(big, "[optim]\nlr = ", 13);
    memset(big + 13, '1', 1000 - 5);
    strcpy(big + 13 + 995, "\n");
    char err[512];
    amp_config *cfg = load_text(big, err, sizeof err);
    EXPECT(!cfg, "a 1000-character line was accepted");
    const char *want = at(":2: line too long (1000 characters; the limit is ");
    EXPECT(strncmp(err, want, strlen(want)) == 0, "long line: got '%s'", err);
    amp_config_free(cfg);

    cfg = amp_config_load("/nonexistent/amp.ini", err, sizeof err);
    EXPECT(!cfg, "missing file loaded");
    CHECK_MSG(err, "/nonexistent/amp.ini: cannot read: No such file or directory");
    cfg = amp_config_load("/tmp", err, sizeof err);
    EXPECT(!cfg, "directory loaded");
    CHECK_MSG(err, "/tmp: cannot read: it is a directory, not a regular file");
}

/* Paths that are not files (issue 15): each is refused at once, never read.
 * A FIFO used to hang the process; /dev/zero used to train with defaults
 * (getline's ENOMEM was taken for the end of the file). */
static void test_not_files(void)
{
    char err[512];
    amp_config *cfg = amp_config_load("/dev/zero", err, sizeof err);
    EXPECT(!cfg, "/dev/zero loaded as a config");
    CHECK_MSG(err, "/dev/zero: cannot read: it is a character device, not a regular file");
    amp_config_free(cfg);

    char dir[] = "/tmp/amp_test_config_fifo_XXXXXX", fifo[64];
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(fifo, sizeof fifo, "%s/config.ini", dir);
    EXPECT(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
    /* With no writer, a blocking open would never return: the test would
     * hang (and time out) instead of failing here. */
    cfg = amp_config_load(fifo, err, sizeof err);
    EXPECT(!cfg, "a FIFO loaded as a config");
    char want[256];
    snprintf(want, sizeof want, "%s: cannot read: it is a FIFO (named pipe), not a regular file",
             fifo);
    CHECK_MSG(err, want);
    amp_config_free(cfg);
    unlink(fifo);
    rmdir(dir);

    /* A regular file whose read fails: /proc/self/mem at offset 0 gives EIO.
     * A read error must never look like the end of an (empty, valid) file. */
    cfg = amp_config_load("/proc/self/mem", err, sizeof err);
    EXPECT(!cfg, "/proc/self/mem (read error) loaded as an empty config");
    CHECK_MSG(err, "/proc/self/mem: cannot read: Input/output error");
    amp_config_free(cfg);
}

/* A line of 64 MiB (a sparse file of spaces would do as well): refused as
 * too long without the line ever being held in memory. */
static void test_endless_line(void)
{
    char path[] = "/tmp/amp_test_config_long_XXXXXX";
    int fd = mkstemp(path);
    EXPECT(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    static char chunk[1 << 16];
    memset(chunk, 'x', sizeof chunk);
    memcpy(chunk, "[run]\nname = ", 13);
    for (int i = 0; i < 1024; i++)
        if (write(fd, chunk + (i ? 13 : 0), sizeof chunk - (i ? 13 : 0)) < 0)
            break;
    close(fd);
    char err[512];
    amp_config *cfg = amp_config_load(path, err, sizeof err);
    unlink(path);
    EXPECT(!cfg, "a 64 MiB line loaded");
    char want[256];
    snprintf(want, sizeof want, "%s:2: line too long (more than 1048576 characters; the limit is ",
             path);
    EXPECT(strncmp(err, want, strlen(want)) == 0, "endless line: got '%s'", err);
    amp_config_free(cfg);
}

/* Parsing and reading n keys is linear (issue 15: 40k keys took 8.7 s, every
 * lookup scanned every entry). Measured in string comparisons, not time: a
 * scan would make ~n^2/2 = 8e8 of them here, the hash ~1 per lookup. */
static void test_many_keys(void)
{
    enum { NSEC = 200, NKEY = 40000 };
    size_t cap = (size_t)NKEY * 40, len = 0;
    char *text = malloc(cap);
    EXPECT(text != NULL, "malloc");
    if (!text)
        return;
    for (int i = 0; i < NKEY; i++) {
        if (i % (NKEY / NSEC) == 0)
            len += (size_t)snprintf(text + len, cap - len, "[s%d]\n", i / (NKEY / NSEC));
        len += (size_t)snprintf(text + len, cap - len, "key%d = %d\n", i, i);
    }
    char err[512] = "";
    amp_config *cfg = amp_config_parse("many.ini", text, len, err, sizeof err);
    free(text);
    EXPECT(cfg, "40k keys: %s", err);
    if (!cfg)
        return;
    size_t after_parse = amp_config_compares(cfg);
    /* Every key read back twice, a --set for every 7th, the unread check
     * and the resolved output: about a dozen hash lookups per key. */
    int bad = 0;
    for (int i = 0; i < NKEY; i++) {
        char sec[16], key[16], want[16];
        snprintf(sec, sizeof sec, "s%d", i / (NKEY / NSEC));
        snprintf(key, sizeof key, "key%d", i);
        snprintf(want, sizeof want, "%d", i);
        int64_t v = -1;
        if (amp_config_get_int(cfg, sec, key, -1, 0, NKEY, &v, err, sizeof err) != 1 || v != i)
            bad++;
        const char *where = NULL;
        const char *raw = amp_config_lookup(cfg, sec, key, &where);
        if (!raw || strcmp(raw, want) != 0)
            bad++;
    }
    EXPECT(bad == 0, "%d of %d keys read back wrong", bad, NKEY);
    for (int i = 0; i < NKEY; i += 7) {
        char set[64];
        snprintf(set, sizeof set, "s%d.key%d=%d", i / (NKEY / NSEC), i, -i);
        EXPECT(amp_config_set(cfg, set, err, sizeof err) == 0, "%s: %s", set, err);
    }
    EXPECT(amp_config_set(cfg, "s0.extra=1", err, sizeof err) == 0, "extra: %s", err);
    EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1 &&
               strstr(err, "unknown key 'extra' in [s0]") != NULL,
           "unread extra: %s", err);
    FILE *sink = fopen("/dev/null", "w");
    EXPECT(sink && amp_config_write_resolved(cfg, sink) == 0, "write_resolved");
    if (sink)
        fclose(sink);
    size_t total = amp_config_compares(cfg);
    EXPECT(after_parse <= 2 * (size_t)NKEY, "parsing %d keys made %zu comparisons", NKEY,
           after_parse);
    EXPECT(total <= 20 * (size_t)NKEY, "%d keys: %zu comparisons in all (a scan per lookup "
           "would make ~%zu)", NKEY, total, (size_t)NKEY * NKEY / 2);
    amp_config_free(cfg);
}

static void test_comments_and_layout(void)
{
    char err[512] = "";
    amp_config *cfg = load_text("\xEF\xBB\xBF; full-line comment\r\n"
                                "# another\r\n"
                                "[optim] ; trailing comment\r\n"
                                "lr = 0.25 ; inline\r\n"
                                "momentum=0.5 # inline too\r\n"
                                "   steps = 7\r\n"
                                "\tname = a;b#c\r\n"
                                "\n",
                                err, sizeof err);
    EXPECT(cfg, "comment file failed: %s", err);
    if (!cfg)
        return;
    double lr = 0, mom = 0;
    int64_t steps = 0;
    const char *name = NULL;
    EXPECT(amp_config_get_double(cfg, "optim", "lr", 1, 0, 10, &lr, err, sizeof err) == 1 &&
              lr == 0.25,
          "lr: %g %s", lr, err);
    EXPECT(amp_config_get_double(cfg, "optim", "momentum", 1, 0, 1, &mom, err, sizeof err) == 1 &&
              mom == 0.5,
          "momentum: %g %s", mom, err);
    EXPECT(amp_config_get_int(cfg, "optim", "steps", 1, 1, 100, &steps, err, sizeof err) == 1 &&
              steps == 7,
          "indented key: %lld %s", (long long)steps, err);
    /* Comment marks only count after a blank. */
    EXPECT(amp_config_get_string(cfg, "optim", "name", NULL, &name, err, sizeof err) == 1 && name &&
              strcmp(name, "a;b#c") == 0,
          "name: '%s'", name ? name : "(null)");
    EXPECT(amp_config_check_unread(cfg, err, sizeof err) == 0, "unexpected: %s", err);
    const char *where = NULL;
    EXPECT(amp_config_lookup(cfg, "optim", "steps", &where) && where &&
              strcmp(where, at(":6")) == 0,
          "where of steps: %s", where ? where : "(null)");
    amp_config_free(cfg);
}

static void test_unknown_section_and_key(void)
{
    char err[512] = "";
    double v;
    amp_config *cfg = load_text("[optim]\nlr = 0.1\n\n[optm]\nmomentum = 0.9\n", err, sizeof err);
    EXPECT(cfg, "load: %s", err);
    if (cfg) {
        amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &v, err, sizeof err);
        amp_config_get_double(cfg, "optim", "momentum", 0.9, 0, 1, &v, err, sizeof err);
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "unknown section passed");
        CHECK_MSG(err, at(":4: unknown section [optm]; did you mean [optim]?"));
        amp_config_free(cfg);
    }

    cfg = load_text("[optim]\nlr = 0.1\n[zzz]\n", err, sizeof err);
    if (cfg) {
        amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &v, err, sizeof err);
        amp_config_declare_section(cfg, "data");
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "unknown section passed");
        CHECK_MSG(err, at(":3: unknown section [zzz]; known sections: [optim], [data]"));
        amp_config_free(cfg);
    }

    cfg = load_text("[optim]\nlr_rate = 0.1\n", err, sizeof err);
    if (cfg) {
        amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &v, err, sizeof err);
        amp_config_get_double(cfg, "optim", "momentum", 0.9, 0, 1, &v, err, sizeof err);
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "lr_rate passed");
        CHECK_MSG(err, at(":2: unknown key 'lr_rate' in [optim]; did you mean 'lr'?"));
        amp_config_free(cfg);
    }

    cfg = load_text("[optim]\nlr = 0.1\n; comment\nmomentm = 0.8\n", err, sizeof err);
    if (cfg) {
        amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &v, err, sizeof err);
        amp_config_get_double(cfg, "optim", "momentum", 0.9, 0, 1, &v, err, sizeof err);
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "momentm passed");
        CHECK_MSG(err, at(":4: unknown key 'momentm' in [optim]; did you mean 'momentum'?"));
        amp_config_free(cfg);
    }

    /* Distance 2 (two deletions) still suggests. */
    cfg = load_text("[optim]\nmmentm = 0.8\n", err, sizeof err);
    if (cfg) {
        amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &v, err, sizeof err);
        amp_config_get_double(cfg, "optim", "momentum", 0.9, 0, 1, &v, err, sizeof err);
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "mmentm passed");
        CHECK_MSG(err, at(":2: unknown key 'mmentm' in [optim]; did you mean 'momentum'?"));
        amp_config_free(cfg);
    }

    cfg = load_text("[optim]\nbanana = 1\n", err, sizeof err);
    if (cfg) {
        amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &v, err, sizeof err);
        amp_config_get_double(cfg, "optim", "momentum", 0.9, 0, 1, &v, err, sizeof err);
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "banana passed");
        CHECK_MSG(err, at(":2: unknown key 'banana' in [optim]; known keys: lr, momentum"));
        amp_config_free(cfg);
    }
}

/* One value of [optim] lr read as a double in [0, 10]: returns the getter's
 * status, err holds its message. */
static int get_lr(const char *value, double *out, char *err, size_t errlen)
{
    char text[256];
    snprintf(text, sizeof text, "[optim]\nlr = %s\n", value);
    amp_config *cfg = load_text(text, err, errlen);
    if (!cfg)
        return -2; /* err says why the load failed */
    int rc = amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, out, err, errlen);
    amp_config_free(cfg);
    return rc;
}

static int get_steps(const char *value, int64_t *out, char *err, size_t errlen)
{
    char text[256];
    snprintf(text, sizeof text, "[train]\nsteps = %s\n", value);
    amp_config *cfg = load_text(text, err, errlen);
    if (!cfg)
        return -2; /* err says why the load failed */
    int rc = amp_config_get_int(cfg, "train", "steps", 100, 1, 1000000, out, err, errlen);
    amp_config_free(cfg);
    return rc;
}

static void test_numbers(void)
{
    static const struct {
        const char *value, *what;
    } bad_doubles[] = {
        {"1e", "not a number"},
        {"abc", "not a number"},
        {"3x", "not a number"},
        {"0.1.2", "not a number"},
        {"nan", "not a finite number"},
        {"NaN", "not a finite number"},
        {"inf", "not a finite number"},
        {"-infinity", "not a finite number"},
        {"1e400", "too large for a double"},
        {"-1e400", "too large for a double"},
        {"1e-400", "too small for a double (it would be 0)"},
        {"20", "out of range"},
        {"-0.5", "out of range"},
    };
    char err[512];
    double d = -1;
    for (size_t i = 0; i < sizeof bad_doubles / sizeof bad_doubles[0]; i++) {
        int rc = get_lr(bad_doubles[i].value, &d, err, sizeof err);
        EXPECT(rc == -1, "lr = %s gave %d", bad_doubles[i].value, rc);
        CHECK_MSG(err, at(":2: [optim] lr = '%s': %s; expected a number in [0, 10]",
                          bad_doubles[i].value, bad_doubles[i].what));
    }
    /* Empty value: "lr =" */
    EXPECT(get_lr("", &d, err, sizeof err) == -1, "empty lr accepted");
    CHECK_MSG(err, at(":2: [optim] lr = '': empty value; expected a number in [0, 10]"));
    EXPECT(get_lr("1e-3", &d, err, sizeof err) == 1 && d == 1e-3, "1e-3: %s", err);
    EXPECT(get_lr("10", &d, err, sizeof err) == 1 && d == 10.0, "inclusive max: %s", err);
    EXPECT(get_lr("0", &d, err, sizeof err) == 1 && d == 0.0, "inclusive min: %s", err);

    static const struct {
        const char *value, *what;
    } bad_ints[] = {
        {"3x", "not an integer"},
        {"abc", "not an integer"},
        {"1.5", "not an integer"},
        {"1e3", "not an integer"},
        {"99999999999999999999", "too large for a 64-bit integer"},
        {"-99999999999999999999", "too small for a 64-bit integer"},
        {"0", "out of range"},
        {"1000001", "out of range"},
    };
    int64_t n = -1;
    for (size_t i = 0; i < sizeof bad_ints / sizeof bad_ints[0]; i++) {
        int rc = get_steps(bad_ints[i].value, &n, err, sizeof err);
        EXPECT(rc == -1, "steps = %s gave %d", bad_ints[i].value, rc);
        CHECK_MSG(err, at(":2: [train] steps = '%s': %s; expected an integer in [1, 1000000]",
                          bad_ints[i].value, bad_ints[i].what));
    }
    EXPECT(get_steps("1000000", &n, err, sizeof err) == 1 && n == 1000000, "max steps: %s", err);
    EXPECT(get_steps("+42", &n, err, sizeof err) == 1 && n == 42, "+42: %s", err);

    /* Absent: the default, status 0. */
    char lerr[512];
    amp_config *cfg = load_text("", lerr, sizeof lerr);
    EXPECT(cfg, "empty file: %s", lerr);
    if (cfg) {
        EXPECT(amp_config_get_int(cfg, "train", "steps", 100, 1, 1000, &n, err, sizeof err) == 0 &&
                  n == 100,
              "default steps %lld", (long long)n);
        EXPECT(amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 1, &d, err, sizeof err) == 0 &&
                  d == 0.01,
              "default lr %g", d);
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == 0, "empty file check: %s", err);
        amp_config_free(cfg);
    }
}

static void test_bool_and_choice(void)
{
    static const struct {
        const char *text;
        int want;
    } bools[] = {{"true", 1}, {"False", 0}, {"yes", 1}, {"no", 0},
                 {"ON", 1},   {"off", 0},   {"1", 1},   {"0", 0}};
    char text[128], err[512];
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
        snprintf(text, sizeof text, "[train]\nflag = %s\n", bools[i].text);
        amp_config *cfg = load_text(text, err, sizeof err);
        int b = -1;
        EXPECT(cfg && amp_config_get_bool(cfg, "train", "flag", !bools[i].want, &b, err,
                                         sizeof err) == 1 &&
                  b == bools[i].want,
              "bool '%s' -> %d", bools[i].text, b);
        amp_config_free(cfg);
    }
    amp_config *cfg = load_text("[train]\n\nflag = maybe\n", err, sizeof err);
    int b = -1;
    EXPECT(cfg && amp_config_get_bool(cfg, "train", "flag", 0, &b, err, sizeof err) == -1,
          "maybe accepted");
    CHECK_MSG(err, at(":3: [train] flag = 'maybe': not a boolean; expected true/false, yes/no, "
                      "on/off or 1/0"));
    amp_config_free(cfg);

    static const char *const dtypes[] = {"fp32", "fp16", "bf16", NULL};
    cfg = load_text("[precision]\nplugin = fp61\n", err, sizeof err);
    int idx = -7;
    EXPECT(cfg && amp_config_get_choice(cfg, "precision", "plugin", "fp32", dtypes, &idx, err,
                                       sizeof err) == -1,
          "fp61 accepted");
    CHECK_MSG(err, at(":2: [precision] plugin = 'fp61': not a known choice; expected one of fp32, "
                      "fp16, bf16; did you mean 'fp16'?"));
    amp_config_free(cfg);

    cfg = load_text("[precision]\nplugin = bf16\n", err, sizeof err);
    EXPECT(cfg && amp_config_get_choice(cfg, "precision", "plugin", "fp32", dtypes, &idx, err,
                                       sizeof err) == 1 &&
              idx == 2,
          "bf16 -> %d", idx);
    EXPECT(cfg && amp_config_get_choice(cfg, "precision", "other", "fp16", dtypes, &idx, err,
                                       sizeof err) == 0 &&
              idx == 1,
          "default choice -> %d", idx);
    amp_config_free(cfg);
}

/* Plugin sections: lookup/each, unread keys reported with their line. */
static int collect(void *user, const char *key, const char *value, const char *where)
{
    char *acc = user;
    size_t n = strlen(acc);
    snprintf(acc + n, 512 - n, "%s=%s@%s;", key, value, where);
    return 0;
}

static void test_plugin_sections(void)
{
    char err[512];
    amp_config *cfg = load_text("[scaler]\n"
                                "plugin = dynamic\n"
                                "init_scale = 65536\n"
                                "backof = 0.5\n",
                                err, sizeof err);
    EXPECT(cfg, "load: %s", err);
    if (!cfg)
        return;
    const char *plugin = NULL, *where = NULL;
    amp_config_get_string(cfg, "scaler", "plugin", "none", &plugin, err, sizeof err);
    const char *v = amp_config_lookup(cfg, "scaler", "init_scale", &where);
    EXPECT(v && strcmp(v, "65536") == 0, "lookup init_scale: %s", v ? v : "(null)");
    EXPECT(where && strcmp(where, at(":3")) == 0, "where: %s", where ? where : "(null)");
    EXPECT(amp_config_lookup(cfg, "scaler", "backoff", &where) == NULL && where == NULL,
          "absent lookup returned something");
    EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "unread plugin key passed");
    CHECK_MSG(err, at(":4: unknown key 'backof' in [scaler]; did you mean 'backoff'?"));
    amp_config_free(cfg);

    /* A key nobody looked up at all, no near miss. */
    cfg = load_text("[scaler]\nplugin = none\n\ngrowth = 2\n", err, sizeof err);
    if (cfg) {
        amp_config_get_string(cfg, "scaler", "plugin", "none", &plugin, err, sizeof err);
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "unread key passed");
        CHECK_MSG(err, at(":4: unknown key 'growth' in [scaler]; known keys: plugin"));
        amp_config_free(cfg);
    }

    /* A declared section with nothing read. */
    cfg = load_text("[scaler]\n\n[precision]\nfoo = 1\n", err, sizeof err);
    if (cfg) {
        amp_config_declare_section(cfg, "scaler");
        amp_config_declare_section(cfg, "precision");
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "unread key passed");
        CHECK_MSG(err, at(":4: unknown key 'foo' in [precision]; nothing reads keys from "
                          "[precision]"));
        amp_config_free(cfg);
    }

    cfg = load_text("[precision]\nlayer.fc1 = fp32\nplugin = fp16\nlayer.fc2 = bf16\nother = 1\n",
                    err, sizeof err);
    if (cfg) {
        char acc[512] = "";
        EXPECT(amp_config_each(cfg, "precision", "layer.", collect, acc) == 0, "each rc");
        char want[512];
        snprintf(want, sizeof want, "layer.fc1=fp32@%s:2;layer.fc2=bf16@%s:4;", g_path, g_path);
        CHECK_MSG(acc, want);
        amp_config_lookup(cfg, "precision", "plugin", NULL);
        EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "other passed");
        CHECK_MSG(err, at(":5: unknown key 'other' in [precision]; known keys: layer.fc1, "
                          "layer.fc2, plugin"));
        amp_config_free(cfg);
    }
}

static void test_set(void)
{
    char err[512];
    amp_config *cfg = load_text("[optim]\nlr = 0.1\n", err, sizeof err);
    EXPECT(cfg, "load: %s", err);
    if (!cfg)
        return;
    double lr = 0;
    EXPECT(amp_config_set(cfg, " optim.lr = 0.5 ", err, sizeof err) == 0, "set: %s", err);
    EXPECT(amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &lr, err, sizeof err) == 1 &&
              lr == 0.5,
          "--set did not override: %g", lr);
    const char *where = NULL;
    amp_config_lookup(cfg, "optim", "lr", &where);
    EXPECT(where && strcmp(where, "--set optim.lr") == 0, "where: %s", where ? where : "(null)");

    EXPECT(amp_config_set(cfg, "optim.lr=abc", err, sizeof err) == 0, "set: %s", err);
    EXPECT(amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &lr, err, sizeof err) == -1,
          "abc accepted");
    CHECK_MSG(err, "--set optim.lr: [optim] lr = 'abc': not a number; expected a number in [0, 10]");
    EXPECT(amp_config_set(cfg, "optim.lr=2", err, sizeof err) == 0, "set: %s", err);

    EXPECT(amp_config_set(cfg, "optimlr=1", err, sizeof err) == -1, "optimlr=1 accepted");
    CHECK_MSG(err, "--set 'optimlr=1': 'optimlr' is not section.key; expected section.key=value, "
                   "e.g. --set optim.lr=0.01");
    EXPECT(amp_config_set(cfg, "optim.lr", err, sizeof err) == -1, "no '=' accepted");
    CHECK_MSG(err, "--set 'optim.lr': no '='; expected section.key=value, e.g. --set optim.lr=0.01");
    EXPECT(amp_config_set(cfg, ".lr=1", err, sizeof err) == -1, ".lr=1 accepted");
    EXPECT(amp_config_set(cfg, "optim.=1", err, sizeof err) == -1, "optim.=1 accepted");
    EXPECT(amp_config_set(cfg, "op tim.lr=1", err, sizeof err) == -1, "space accepted");

    /* New keys: a typo in a known section, then in an unknown section. */
    EXPECT(amp_config_set(cfg, "optim.lrr=1", err, sizeof err) == 0, "set: %s", err);
    amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &lr, err, sizeof err);
    EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "lrr passed");
    CHECK_MSG(err, "--set optim.lrr: unknown key 'lrr' in [optim]; did you mean 'lr'?");
    amp_config_free(cfg);

    cfg = amp_config_new_empty("test");
    EXPECT(amp_config_set(cfg, "optm.lr=1", err, sizeof err) == 0, "set: %s", err);
    EXPECT(amp_config_set(cfg, "precision.layer.fc1=bf16", err, sizeof err) == 0, "set: %s", err);
    amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &lr, err, sizeof err);
    EXPECT(amp_config_lookup(cfg, "precision", "layer.fc1", NULL) != NULL, "dotted key lost");
    EXPECT(amp_config_check_unread(cfg, err, sizeof err) == -1, "optm passed");
    CHECK_MSG(err, "--set optm.lr: unknown section [optm]; did you mean [optim]?");
    EXPECT(strcmp(amp_config_path(cfg), "test") == 0, "path");
    amp_config_free(cfg);
}

static void test_write_resolved(void)
{
    char err[512];
    amp_config *cfg = load_text("[optim]\nlr = 0.1\n[scaler]\nplugin = dynamic\ninit_scale = 1024\n"
                                "extra = 3\n",
                                err, sizeof err);
    EXPECT(cfg, "load: %s", err);
    if (!cfg)
        return;
    double d;
    int64_t n;
    int b;
    const char *s;
    amp_config_set(cfg, "optim.lr=0.5", err, sizeof err);
    amp_config_get_double(cfg, "optim", "lr", 0.01, 0, 10, &d, err, sizeof err);
    amp_config_get_double(cfg, "optim", "momentum", 0.9, 0, 1, &d, err, sizeof err);
    amp_config_get_int(cfg, "train", "steps", 1000, 1, 100000, &n, err, sizeof err);
    amp_config_get_bool(cfg, "train", "tf32", 0, &b, err, sizeof err);
    amp_config_get_string(cfg, "scaler", "plugin", "none", &s, err, sizeof err);
    amp_config_lookup(cfg, "scaler", "init_scale", NULL);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    EXPECT(f && amp_config_write_resolved(cfg, f) == 0, "write failed");
    if (f)
        fclose(f);
    amp_config_free(cfg);
    if (!text)
        return;
    char want[1024];
    snprintf(want, sizeof want,
             "; amptrain resolved configuration (defaults included) from %s\n"
             "\n[optim]\n"
             "lr = 0.5  ; --set optim.lr\n"
             "momentum = 0.9  ; default\n"
             "\n[train]\n"
             "steps = 1000  ; default\n"
             "tf32 = false  ; default\n"
             "\n[scaler]\n"
             "plugin = dynamic  ; %s:4\n"
             "init_scale = 1024  ; %s:5\n"
             "extra = 3  ; %s:6, not read\n",
             g_path, g_path, g_path, g_path);
    CHECK_MSG(text, want);

    /* What was written loads back to the same values. */
    amp_config *again = load_text(text, err, sizeof err);
    EXPECT(again, "resolved output does not load: %s", err);
    if (again) {
        EXPECT(amp_config_get_double(again, "optim", "lr", 0.01, 0, 10, &d, err, sizeof err) == 1 &&
                  d == 0.5,
              "reloaded lr %g", d);
        amp_config_free(again);
    }
    free(text);
}

/* Binary input must give a located error, never a crash. */
static void test_binary(void)
{
    char err[512];
    static const char nul[] = "[optim]\nlr\0= 1\n";
    amp_config *cfg = load_bytes(nul, sizeof nul - 1, err, sizeof err);
    EXPECT(!cfg, "NUL byte accepted");
    CHECK_MSG(err, at(":2: control byte 0x00 at column 3: this is not a text INI file"));
    amp_config_free(cfg);

    cfg = load_text("\xff\xfe\x80garbage\xc3\n", err, sizeof err);
    EXPECT(!cfg, "high-byte garbage accepted");
    EXPECT(strncmp(err, at(":1: "), strlen(at(":1: "))) == 0, "garbage: %s", err);
    amp_config_free(cfg);

    /* Random files: each either loads or fails with "path:" in front. */
    unsigned state = 12345;
    char buf[2048];
    for (int round = 0; round < 200; round++) {
        size_t len = 1 + (size_t)(round * 37 % (int)sizeof buf);
        for (size_t i = 0; i < len; i++) {
            state = state * 1103515245u + 12345u;
            unsigned r = state >> 16;
            /* Mix in INI punctuation so some lines get past the first checks. */
            static const char punct[] = "[]=;#\n \t.abc";
            buf[i] = (r % 4 == 0) ? punct[(r >> 4) % (sizeof punct - 1)] : (char)(r & 0xff);
        }
        cfg = load_bytes(buf, len, err, sizeof err);
        if (!cfg)
            EXPECT(strncmp(err, g_path, strlen(g_path)) == 0 && err[strlen(g_path)] == ':',
                  "random file %d: unlocated error '%s'", round, err);
        amp_config_free(cfg);
    }
}

int main(void)
{
    test_parse_errors();
    test_not_files();
    test_endless_line();
    test_many_keys();
    test_comments_and_layout();
    test_unknown_section_and_key();
    test_numbers();
    test_bool_and_choice();
    test_plugin_sections();
    test_set();
    test_write_resolved();
    test_binary();
    if (amp_test_failures) {
        fprintf(stderr, "test_config: %d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("test_config: all checks passed\n");
    return 0;
}
