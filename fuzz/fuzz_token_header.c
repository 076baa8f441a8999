/* libFuzzer target: token file layouts (core/data/token_header.c): llm.c shard
 * headers, .npy headers and the raw .bin rule, as amp_token_layout_parse
 * sees a file's first bytes.
 *
 * Input: one byte, then the file. Bits 0-1 of the byte: [data]
 * token_format (auto, bin, llmc, npy); bit 2: the file is named x.bin (else
 * x.npy), which auto detection reads. The file's bytes are handed over as
 * they would be from its mapping: its first min(size, AMP_TOKEN_HEAD_MAX). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/token_header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    amp_token_format format = (amp_token_format)(data[0] & 3);
    const char *name = data[0] & 4 ? "x.bin" : "x.npy";
    data++;
    size--;
    /* a private copy, exactly as long as the file: reads past it are ASan's */
    uint8_t *file = malloc(size ? size : 1);
    if (!file)
        abort();
    memcpy(file, data, size);
    size_t head = size < AMP_TOKEN_HEAD_MAX ? size : AMP_TOKEN_HEAD_MAX;
    amp_token_layout l;
    char err[1024] = "";
    if (amp_token_layout_parse(file, head, size, format, name, &l, err, sizeof err) != 0) {
        if (!err[0] || !strstr(err, name))
            abort(); /* a failure names the file */
    } else {
        /* a layout is the whole file: header, then n tokens of width bytes */
        int width = l.dtype == AMP_TOKEN_U16 ? 2 : 4;
        if (l.n < 0 || l.width != width || l.offset > size ||
            (size - l.offset) != (uint64_t)l.n * (uint64_t)width)
            abort();
        if (format != AMP_TOKENS_AUTO && l.format != format)
            abort();
        if (!amp_token_layout_name(&l)[0])
            abort();
    }
    free(file);
    return 0;
}
