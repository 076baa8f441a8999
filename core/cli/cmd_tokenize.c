/* `amptrain tokenize --tokenizer FILE --out DIR [--val-fraction F] TEXT...`:
 * encodes text files with a byte-level BPE tokenizer into DIR/train.bin and
 * DIR/val.bin for `[data] dataset = tokens`: raw uint16 (nanoGPT's .bin)
 * when every id fits 16 bits, else llm.c's uint32 shard (magic 20240801,
 * version 7). The files are concatenated in order; the last F of the ids are
 * the validation split. Each output is written under a temporary name and
 * renamed only when complete, so a failure leaves nothing half-written.
 * `--decode TOKENS` prints the text of a token file instead.
 * Exit 0; 2 on usage, a tokenizer or TEXT file that is missing or not one
 * amptrain reads; 1 when mapping, encoding or writing failed. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "io/file.h"
#include "util/out_file.h"
#include "data/token_header.h"
#include "tokenizer/tokenizer.h"

static const char tokenize_usage[] =
    "usage: amptrain tokenize --tokenizer FILE --out DIR [--val-fraction F] TEXT...\n"
    "       amptrain tokenize --tokenizer FILE --decode TOKENS\n"
    "\n"
    "Encodes the TEXT files (in order, one after the other) with a byte-level BPE\n"
    "tokenizer and writes DIR/train.bin and DIR/val.bin for [data] dataset = tokens.\n"
    "\n"
    "  --tokenizer FILE    a Hugging Face tokenizer.json (model BPE, ByteLevel), GPT-2's\n"
    "                      vocab.json (merges.txt beside it), or a folder with either\n"
    "  --out DIR           where train.bin and val.bin go (made if missing)\n"
    "  --val-fraction F    the share of the ids, taken from the end, that go to\n"
    "                      val.bin (default 0.1; 0 writes train.bin only)\n"
    "  --decode TOKENS     print the text of a token file (.bin, llm.c shard or .npy)\n"
    "\n"
    "The ids are those of the `tokenizers` library's encode(text,\n"
    "add_special_tokens=False); special tokens written in the text are matched.\n"
    "Invalid UTF-8 is replaced by U+FFFD (as Python's errors=\"replace\"), with a\n"
    "warning naming the file and the byte of the first. Files are uint16 raw .bin\n"
    "(nanoGPT) when the vocabulary fits 16 bits, else llm.c uint32 shards. Progress\n"
    "goes to stderr (updated in place on a terminal). The vocabulary size to put in\n"
    "[data] vocab_size is printed at the end.\n";

typedef struct tok_args {
    const char *tokenizer, *out, *decode;
    double val;
    const char **texts;
    int ntexts;
} tok_args;

static int tok_opt(void *user, int opt, const char *arg) {
    tok_args *a = user;
    char *end;
    switch (opt) {
    case 'h':
        fputs(tokenize_usage, stdout);
        return 1;
    case 't':
        a->tokenizer = arg;
        return 0;
    case 'o':
        a->out = arg;
        return 0;
    case 'd':
        a->decode = arg;
        return 0;
    case 'v':
        errno = 0;
        a->val = strtod(arg, &end);
        if (*end || errno || !(a->val >= 0 && a->val < 1)) {
            fprintf(stderr, "amptrain tokenize: --val-fraction %s: a number in [0, 1)\n%s", arg,
                    tokenize_usage);
            return -1;
        }
        return 0;
    case 1:
        a->texts[a->ntexts++] = arg;
        return 0;
    }
    return -1;
}

typedef struct progress {
    const char *file;
    int tty;
    size_t done_before, total_all;
} progress;

static void show(void *ctx, size_t done, size_t total) {
    progress *p = ctx;
    (void)total;
    if (!p->tty) return; /* off a terminal: one line per file, at its end */
    fprintf(stderr, "\rtokenize: %s: %.1f of %.1f MB (%.0f%%)   ", p->file,
            (double)(p->done_before + done) / 1e6, (double)p->total_all / 1e6,
            p->total_all ? 100.0 * (double)(p->done_before + done) / (double)p->total_all : 100.0);
    fflush(stderr);
}

/* Encodes one file into o. 0, 2 (cannot open it) or 1 (a runtime failure),
 * said. */
static int encode_file(const amp_tokenizer *t, const char *path, amp_encode_out *o, progress *p) {
    char err[1024];
    struct stat st;
    int fd = amp_file_open_read(path, &st, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "amptrain tokenize: %s\n", err);
        return 2;
    }
    size_t len = (size_t)st.st_size;
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (len && map == MAP_FAILED) {
        fprintf(stderr, "amptrain tokenize: %s: cannot map: %s\n", path, strerror(errno));
        return 1;
    }
    size_t before = o->n, bad_before = o->replaced;
    o->replaced = 0;
    p->file = path;
    int rc = amp_tokenizer_encode(t, len ? map : "", len, o, err, sizeof err);
    if (len) munmap(map, len);
    if (rc != 0) {
        fprintf(stderr, "%samptrain tokenize: %s: %s\n", p->tty ? "\n" : "", path, err);
        return 1;
    }
    p->done_before += len;
    /* on a terminal the line replaces the progress line, cleared first */
    fprintf(stderr, "%stokenize: %s: %zu bytes, %zu tokens\n", p->tty ? "\r\033[K" : "", path,
            len, o->n - before);
    if (o->replaced)
        fprintf(stderr, "amptrain tokenize: warning: %s: %zu invalid UTF-8 sequences replaced by "
                "U+FFFD, the first at byte %zu\n", path, o->replaced, o->first_bad);
    o->replaced += bad_before;
    return 0;
}

/* Writes ids[0..n) as DIR/name: raw uint16, or an llm.c uint32 shard. */
static int write_split(const char *dir, const char *name, const uint32_t *ids, size_t n, int wide,
                       amp_out_file *f, char *err, size_t errlen) {
    if (amp_out_open(f, dir, name, err, errlen) != 0) return -1;
    if (wide) {
        int32_t head[256] = {AMP_LLMC_MAGIC_U32, 7, (int32_t)n};
        fwrite(head, sizeof head, 1, f->f); /* little-endian hosts only, as llm.c */
        fwrite(ids, 4, n, f->f);
    } else {
        uint16_t buf[4096];
        for (size_t i = 0; i < n;) {
            size_t k = n - i < 4096 ? n - i : 4096;
            for (size_t j = 0; j < k; j++) buf[j] = (uint16_t)ids[i + j];
            fwrite(buf, 2, k, f->f);
            i += k;
        }
    }
    return 0; /* write errors surface at the commit */
}

static int decode_file(const amp_tokenizer *t, const char *path) {
    char err[1024], *buf;
    size_t len;
    if (amp_file_read_all(path, (size_t)1 << 34, &buf, &len, err, sizeof err) != 0) {
        fprintf(stderr, "amptrain tokenize: %s\n", err);
        return 2;
    }
    amp_token_layout l;
    size_t head = len < AMP_TOKEN_HEAD_MAX ? len : AMP_TOKEN_HEAD_MAX;
    if (amp_token_layout_parse((unsigned char *)buf, head, len, AMP_TOKENS_AUTO, path, &l, err,
                               sizeof err) != 0) {
        fprintf(stderr, "amptrain tokenize: %s\n", err);
        free(buf);
        return 2;
    }
    uint32_t *ids = malloc(((size_t)l.n ? (size_t)l.n : 1) * sizeof *ids);
    const unsigned char *p = (unsigned char *)buf + l.offset;
    for (int64_t i = 0; ids && i < l.n; i++, p += l.width)
        ids[i] = l.width == 2 ? (uint32_t)(p[0] | p[1] << 8)
                              : (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                                    (uint32_t)p[3] << 24;
    free(buf);
    char *text;
    if (!ids || amp_tokenizer_decode(t, ids, (size_t)l.n, 0, &text, &len) != 0) {
        fprintf(stderr, "amptrain tokenize: %s: out of memory\n", path);
        free(ids);
        return 1;
    }
    free(ids);
    fwrite(text, 1, len, stdout);
    free(text);
    return 0;
}

static int tokenize(const amp_tokenizer *t, const tok_args *a) {
    char err[1024];
    progress p = {NULL, isatty(fileno(stderr)), 0, 0};
    for (int i = 0; i < a->ntexts; i++) {
        struct stat st;
        if (stat(a->texts[i], &st) == 0) p.total_all += (size_t)st.st_size;
    }
    amp_encode_out o = {.progress = show, .ctx = &p};
    for (int i = 0; i < a->ntexts; i++) {
        int rc = encode_file(t, a->texts[i], &o, &p);
        if (rc) {
            free(o.ids);
            return rc;
        }
    }
    size_t nval = (size_t)floor((double)o.n * a->val), ntrain = o.n - nval;
    int64_t vocab = amp_tokenizer_vocab_size(t);
    int wide = vocab > 65536, rc = 1;
    if (ntrain == 0 || (a->val > 0 && nval == 0) || (wide && o.n > INT32_MAX)) {
        fprintf(stderr, "amptrain tokenize: %zu tokens %s\n", o.n,
                o.n > INT32_MAX ? "are more than an llm.c shard holds (2^31 - 1)"
                                : "are too few for the train and validation splits");
        free(o.ids);
        return 2;
    }
    amp_out_file tf = {0}, vf = {0};
    if (amp_mkdir_p(a->out, err, sizeof err) == 0 &&
        write_split(a->out, "train.bin", o.ids, ntrain, wide, &tf, err, sizeof err) == 0 &&
        (nval == 0 || write_split(a->out, "val.bin", o.ids + ntrain, nval, wide, &vf, err,
                                  sizeof err) == 0) &&
        amp_out_commit(&tf, err, sizeof err) == 0 &&
        (nval == 0 || amp_out_commit(&vf, err, sizeof err) == 0))
        rc = 0;
    else
        fprintf(stderr, "amptrain tokenize: %s\n", err);
    amp_out_abort(&tf);
    amp_out_abort(&vf);
    free(o.ids);
    if (rc == 0 && nval)
        printf("%s/train.bin: %zu tokens, %s/val.bin: %zu tokens (%s); vocab_size = %" PRId64 "\n",
               a->out, ntrain, a->out, nval, wide ? "llm.c uint32 shards" : "raw uint16", vocab);
    else if (rc == 0)
        printf("%s/train.bin: %zu tokens, no val.bin (--val-fraction 0) (%s); vocab_size = %" PRId64
               "\n", a->out, ntrain, wide ? "llm.c uint32 shard" : "raw uint16", vocab);
    return rc;
}

int amp_cmd_tokenize(int argc, char **argv) {
    static const struct option longopts[] = {{"tokenizer", required_argument, NULL, 't'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"val-fraction", required_argument, NULL, 'v'},
                                             {"decode", required_argument, NULL, 'd'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *texts[argc > 0 ? argc : 1];
    tok_args a = {.val = 0.1, .texts = texts};
    int rc = amp_cli_parse("tokenize", argc, argv, "h", longopts, tok_opt, &a, tokenize_usage);
    if (rc) return rc > 0 ? 0 : 2;
    const char *why = !a.tokenizer ? "--tokenizer FILE is required"
                      : a.decode ? (a.ntexts || a.out ? "--decode takes no TEXT and no --out" : NULL)
                      : !a.out   ? "--out DIR is required"
                      : !a.ntexts ? "no TEXT file"
                                  : NULL;
    if (why) {
        fprintf(stderr, "amptrain tokenize: %s\n%s", why, tokenize_usage);
        return 2;
    }
    char err[2048];
    amp_tokenizer *t = amp_tokenizer_load(a.tokenizer, err, sizeof err);
    if (!t) {
        fprintf(stderr, "amptrain tokenize: %s\n", err);
        return 2;
    }
    rc = a.decode ? decode_file(t, a.decode) : tokenize(t, &a);
    amp_tokenizer_free(t);
    return rc;
}
