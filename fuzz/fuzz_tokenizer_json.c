/* libFuzzer target: a tokenizer.json (core/tokenizer/tokenizer_json.c).
 *
 * Input: any bytes, read as tokenizer.json. The reader must end with a
 * tokenizer or a message, never a crash. A tokenizer read encodes a fixed
 * hostile text (with invalid UTF-8 and a special-token look-alike) and
 * decodes the ids back: every id is below its vocabulary size. A split
 * pattern may fail to match (PCRE2's backtracking limit): a message then. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char text[] = "Hello, world! it's 1234  \t\n\xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x98\x80 <|endoftext|> x";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[2048] = "";
    amp_tokenizer *t = amp_tokenizer_from_json("fuzz/tokenizer.json", (const char *)data, size, err,
                                               sizeof err);
    if (!t) {
        if (!err[0]) abort(); /* every failure says why */
        return 0;
    }
    amp_encode_out o = {0};
    if (amp_tokenizer_encode(t, text, sizeof text - 1, &o, err, sizeof err) != 0) {
        if (!err[0]) abort();
        goto done;
    }
    int64_t vocab = amp_tokenizer_vocab_size(t);
    for (size_t i = 0; i < o.n; i++)
        if ((int64_t)o.ids[i] >= vocab) abort();
    char *back;
    size_t len;
    if (amp_tokenizer_decode(t, o.ids, o.n, 0, &back, &len) != 0) abort();
    free(back);
    /* an invalid sequence encodes too, and decodes without failing */
    static const char bad[] = "a\xc3 \xe2\x82\xff\xf0\x9f";
    o.n = 0;
    if (amp_tokenizer_encode(t, bad, sizeof bad - 1, &o, err, sizeof err) != 0) {
        if (!err[0]) abort();
        goto done;
    }
    if (amp_tokenizer_decode_bytes(t, o.ids, o.n, 1, &back, &len) != 0) abort();
    free(back);
done:
    free(o.ids);
    amp_tokenizer_free(t);
    return 0;
}
