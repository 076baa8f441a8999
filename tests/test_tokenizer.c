/* The tokenizer's decode against the `tokenizers` library's: 200 random id
 * sequences of the GPT-2-style fixture (many ending inside a UTF-8
 * sequence, some with <|endoftext|> between the pieces of one) decoded
 * with skip_special_tokens false and true (tests/data/tokenizer/decode_*,
 * scripts/bpe_reference.py). And tokenizer.json files that amptrain does not
 * read are refused naming what: a normalizer, another model, another
 * pre-tokenizer, a Split that is not Isolated, dropout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "io/file.h"
#include "tokenizer/tokenizer.h"

#define DIR AMP_TEST_SOURCE_DIR "/tests/data/tokenizer/"

static char *slurp(const char *path, size_t *len) {
    char *buf, err[512];
    if (amp_file_read_all(path, (size_t)1 << 26, &buf, len, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return buf;
}

static void decodes_as_library(void) {
    char err[1024];
    amp_tokenizer *t = amp_tokenizer_load(DIR "gpt2.json", err, sizeof err);
    EXPECT(t, "%s", err);
    if (!t) return;
    size_t nids, nref;
    unsigned char *ids = (unsigned char *)slurp(DIR "decode_ids.bin", &nids);
    unsigned char *ref = (unsigned char *)slurp(DIR "decode_gpt2.txt", &nref);
    size_t pi = 0, pr = 0;
    int seqs = 0, replaced = 0;
    while (pi + 2 <= nids) {
        unsigned k = ids[pi] | ids[pi + 1] << 8;
        uint32_t seq[64];
        for (unsigned j = 0; j < k && j < 64; j++)
            seq[j] = ids[pi + 2 + 2 * j] | ids[pi + 3 + 2 * j] << 8;
        pi += 2 + 2 * (size_t)k;
        for (int skip = 0; skip < 2; skip++) {
            uint32_t want = (uint32_t)ref[pr] | (uint32_t)ref[pr + 1] << 8 |
                            (uint32_t)ref[pr + 2] << 16 | (uint32_t)ref[pr + 3] << 24;
            const char *w = (const char *)ref + pr + 4;
            pr += 4 + want;
            char *got;
            size_t len;
            EXPECT(amp_tokenizer_decode(t, seq, k, skip, &got, &len) == 0, "decode failed");
            EXPECT(len == want && memcmp(got, w, want) == 0,
                   "sequence %d (skip_special %d): got \"%.*s\", the library \"%.*s\"", seqs, skip,
                   (int)len, got, (int)want, w);
            replaced += strstr(got, "\xEF\xBF\xBD") != NULL;
            free(got);
        }
        seqs++;
    }
    EXPECT(seqs == 200 && pr == nref, "read %d sequences, %zu of %zu reference bytes", seqs, pr, nref);
    /* the fixture does exercise cut UTF-8 sequences */
    EXPECT(replaced > 50, "only %d decodes hold a U+FFFD", replaced);
    printf("ok  %d sequences decode as the library's (%d with U+FFFD)\n", seqs, replaced);
    free(ids);
    free(ref);
    amp_tokenizer_free(t);
}

/* gpt2.json with `from` replaced by `to` must be refused naming `want`. */
static void refused(const char *json, size_t len, const char *from, const char *to,
                    const char *want) {
    const char *at = strstr(json, from);
    EXPECT(at, "the fixture has no %s", from);
    if (!at) return;
    size_t a = (size_t)(at - json), fl = strlen(from), tl = strlen(to);
    char *edit = malloc(len - fl + tl + 1);
    memcpy(edit, json, a);
    memcpy(edit + a, to, tl);
    memcpy(edit + a + tl, at + fl, len - a - fl);
    char err[2048];
    amp_tokenizer *t = amp_tokenizer_from_json("tok.json", edit, len - fl + tl, err, sizeof err);
    EXPECT(!t && strstr(err, want), "%s -> %s: %s", from, to, t ? "accepted" : err);
    if (!t) printf("ok  refused: %s\n", err);
    amp_tokenizer_free(t);
    free(edit);
}

int main(void) {
    decodes_as_library();
    size_t len;
    char *json = slurp(DIR "gpt2.json", &len);
    refused(json, len, "\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}", "normalizer NFC");
    refused(json, len, "\"type\": \"BPE\"", "\"type\": \"WordPiece\"", "model type WordPiece");
    refused(json, len, "\"dropout\": null", "\"dropout\": 0.1", "BPE dropout");
    refused(json, len, "\"byte_fallback\": false", "\"byte_fallback\": true", "byte_fallback");
    refused(json, len, "\"pre_tokenizer\": {\n    \"type\": \"ByteLevel\"",
            "\"pre_tokenizer\": {\n    \"type\": \"Whitespace\"", "pre-tokenizer (last step) Whitespace");
    refused(json, len, "\"decoder\": {\n    \"type\": \"ByteLevel\"",
            "\"decoder\": {\n    \"type\": \"WordPiece\"", "decoder WordPiece");
    refused(json, len, "\"lstrip\": false", "\"lstrip\": true", "lstrip: true");
    refused(json, len, "\"merges\": [", "\"merges\": [[\"Ġ\", \"zz\"],", "merge 0");
    free(json);
    json = slurp(DIR "llama3.json", &len);
    refused(json, len, "\"behavior\": \"Isolated\"", "\"behavior\": \"Removed\"", "Split behavior Removed");
    refused(json, len, "(?i:'s", "(?i:'s(", "missing closing parenthesis");
    free(json);
    return amp_test_failures ? 1 : 0;
}
