/* Recursive-descent JSON parser; see json_read.h for what it accepts. */
#include "io/json_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct parser {
    const char *p, *end;
    const char *name;
    int line;
    int depth;
    char *err;
    size_t errlen;
    int failed;
} parser;

static void fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(parser *ps, const char *fmt, ...) {
    if (ps->failed) return;
    ps->failed = 1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(ps->err, ps->errlen, "%s:%d: %s", ps->name, ps->line, msg);
}

/* What the parser is looking at, for messages. */
static const char *seen(const parser *ps, char *buf, size_t cap) {
    if (ps->p >= ps->end) return "the end of the input";
    unsigned char c = (unsigned char)*ps->p;
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '\n')
            ps->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            return;
        ps->p++;
    }
}

static void free_contents(amp_jval *v) {
    if (v->type == AMP_JSTR) free(v->str);
    if (v->type == AMP_JARR || v->type == AMP_JOBJ) {
        for (size_t i = 0; i < v->n; i++) {
            free_contents(&v->items[i]);
            if (v->keys) free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    memset(v, 0, sizeof *v);
}

void amp_json_free(amp_jval *v) {
    if (!v) return;
    free_contents(v);
    free(v);
}

static int hex4(parser *ps, unsigned *out) {
    if (ps->end - ps->p < 4) {
        fail(ps, "\\u needs 4 hex digits");
        return -1;
    }
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else {
            fail(ps, "\\u needs 4 hex digits");
            return -1;
        }
    }
    ps->p += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* At the opening quote; returns a malloc'd string. Escapes never make the
 * text longer than its source, so the source length bounds the buffer. */
static char *parse_string(parser *ps) {
    ps->p++;
    const char *q = ps->p;
    while (q < ps->end && *q != '"') q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
    if (q >= ps->end) {
        fail(ps, "unterminated string");
        return NULL;
    }
    char *out = malloc((size_t)(q - ps->p) + 1), *o = out;
    if (!out) {
        fail(ps, "out of memory");
        return NULL;
    }
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            fail(ps, "control character 0x%02x in a string (escape it)", c);
            goto bad;
        }
        if (c != '\\') {
            *o++ = (char)c;
            ps->p++;
            continue;
        }
        ps->p++;
        char e = *ps->p++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(ps, &cp)) goto bad;
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    fail(ps, "a high surrogate \\u%04X must be followed by a low one", cp);
                    goto bad;
                }
                ps->p += 2;
                if (hex4(ps, &lo)) goto bad;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail(ps, "\\u%04X is not a low surrogate", lo);
                    goto bad;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                fail(ps, "lone low surrogate \\u%04X", cp);
                goto bad;
            } else if (cp == 0) {
                fail(ps, "\\u0000 is not supported");
                goto bad;
            }
            o += put_utf8(o, cp);
            break;
        }
        default:
            fail(ps, "unknown escape '\\%c'", e);
            goto bad;
        }
    }
    ps->p++;
    *o = '\0';
    return out;
bad:
    free(out);
    return NULL;
}

static int parse_number(parser *ps, double *out) {
    const char *s = ps->p;
    const char *q = s;
    if (q < ps->end && *q == '-') q++;
    if (q < ps->end && *q == '0') {
        q++;
    } else if (q < ps->end && *q >= '1' && *q <= '9') {
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    } else {
        fail(ps, "malformed number");
        return -1;
    }
    if (q < ps->end && *q == '.') {
        q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            fail(ps, "malformed number: a digit must follow '.'");
            return -1;
        }
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-')) q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            fail(ps, "malformed number: a digit must follow the exponent");
            return -1;
        }
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < ps->end && *q >= '0' && *q <= '9') {
        fail(ps, "malformed number: leading zero");
        return -1;
    }
    char buf[64];
    size_t n = (size_t)(q - s);
    if (n >= sizeof buf) {
        fail(ps, "number too long");
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    *out = strtod(buf, NULL);
    if (errno == ERANGE && (*out > 1.0 || *out < -1.0)) {
        fail(ps, "number %s is out of range for a double", buf);
        return -1;
    }
    ps->p = q;
    return 0;
}

static int literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return 0;
    ps->p += n;
    return 1;
}

static int parse_value(parser *ps, amp_jval *v);

/* Appends *child to v's items (and key to its keys), taking ownership. */
static int push(parser *ps, amp_jval *v, size_t *cap, amp_jval *child, char *key) {
    if (v->n == *cap) {
        size_t nc = *cap ? 2 * *cap : 8;
        amp_jval *it = realloc(v->items, nc * sizeof *it);
        if (!it) goto oom;
        v->items = it;
        if (v->type == AMP_JOBJ) {
            char **k = realloc(v->keys, nc * sizeof *k);
            if (!k) goto oom;
            v->keys = k;
        }
        *cap = nc;
    }
    v->items[v->n] = *child;
    if (v->type == AMP_JOBJ) v->keys[v->n] = key;
    v->n++;
    return 0;
oom:
    free_contents(child);
    free(key);
    fail(ps, "out of memory");
    return -1;
}

static int parse_container(parser *ps, amp_jval *v, int is_obj) {
    char close = is_obj ? '}' : ']';
    char buf[32];
    size_t cap = 0;
    v->type = is_obj ? AMP_JOBJ : AMP_JARR;
    if (++ps->depth > MAX_DEPTH) {
        fail(ps, "nested deeper than %d levels", MAX_DEPTH);
        return -1;
    }
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (is_obj) {
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, "expected a member name in quotes, found %s", seen(ps, buf, sizeof buf));
                return -1;
            }
            if (!(key = parse_string(ps))) return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                fail(ps, "expected ':' after \"%s\", found %s", key, seen(ps, buf, sizeof buf));
                free(key);
                return -1;
            }
            ps->p++;
        }
        amp_jval child;
        if (parse_value(ps, &child) != 0) {
            free(key);
            return -1;
        }
        if (push(ps, v, &cap, &child, key) != 0) return -1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == close) {
                fail(ps, "trailing comma before '%c'", close);
                return -1;
            }
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            ps->depth--;
            return 0;
        }
        fail(ps, "expected ',' or '%c', found %s", close, seen(ps, buf, sizeof buf));
        return -1;
    }
}

static int parse_value(parser *ps, amp_jval *v) {
    char buf[32];
    memset(v, 0, sizeof *v);
    skip_ws(ps);
    v->line = ps->line;
    if (ps->p >= ps->end) {
        fail(ps, "expected a value, found the end of the input");
        return -1;
    }
    char c = *ps->p;
    if (c == '{' || c == '[') return parse_container(ps, v, c == '{');
    if (c == '"') {
        v->type = AMP_JSTR;
        v->str = parse_string(ps);
        return v->str ? 0 : -1;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = AMP_JNUM;
        return parse_number(ps, &v->num);
    }
    if (literal(ps, "true")) { v->type = AMP_JBOOL; v->b = 1; return 0; }
    if (literal(ps, "false")) { v->type = AMP_JBOOL; return 0; }
    if (literal(ps, "null")) { v->type = AMP_JNULL; return 0; }
    fail(ps, "expected a value, found %s", seen(ps, buf, sizeof buf));
    return -1;
}

amp_jval *amp_json_parse(const char *text, size_t len, const char *name, int first_line,
                         char *err, size_t errlen) {
    parser ps = {text, text + len, name, first_line, 0, err, errlen, 0};
    amp_jval *v = malloc(sizeof *v);
    if (!v) {
        snprintf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    if (parse_value(&ps, v) != 0) {
        free_contents(v);
        free(v);
        return NULL;
    }
    skip_ws(&ps);
    if (ps.p < ps.end) {
        char buf[32];
        fail(&ps, "unexpected %s after the value", seen(&ps, buf, sizeof buf));
        amp_json_free(v);
        return NULL;
    }
    return v;
}

amp_jval *amp_json_parse_file(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t nc = cap ? 2 * cap : 65536;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "%s: out of memory", path);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        snprintf(err, errlen, "%s: read error", path);
        return NULL;
    }
    amp_jval *v = amp_json_parse(buf, len, path, 1, err, errlen);
    free(buf);
    return v;
}

const amp_jval *amp_json_get(const amp_jval *v, const char *key) {
    if (!v || v->type != AMP_JOBJ) return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0) return &v->items[i];
    return NULL;
}

const amp_jval *amp_json_get_type(const amp_jval *v, const char *key, amp_jtype type) {
    const amp_jval *m = amp_json_get(v, key);
    return m && m->type == type ? m : NULL;
}
