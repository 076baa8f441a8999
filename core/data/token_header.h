/* Token files' layouts, from their first bytes: nanoGPT's raw uint16 `.bin`
 * (no header), llm.c's shards (256 int32 header: magic 20240520 version 1
 * = uint16 tokens, magic 20240801 version 7 = uint32 tokens, [2] = the
 * token count; tokens from byte 1024) and NumPy's `.npy` (a 1-D `<u2`,
 * `<i4` or `<u4` array; the header's Python dict parsed). Pure functions of
 * the bytes: any input gives an error, never a crash
 * (fuzz/fuzz_token_header.c). See docs/datasets.md, "Token files". */
#ifndef AMP_TOKEN_HEADER_H
#define AMP_TOKEN_HEADER_H

#include <stddef.h>
#include <stdint.h>

/* [data] token_format, in its choices' order. */
typedef enum amp_token_format {
    AMP_TOKENS_AUTO = 0, AMP_TOKENS_BIN = 1, AMP_TOKENS_LLMC = 2, AMP_TOKENS_NPY = 3
} amp_token_format;
typedef enum amp_token_dtype { AMP_TOKEN_U16 = 0, AMP_TOKEN_I32 = 1, AMP_TOKEN_U32 = 2 } amp_token_dtype;

#define AMP_LLMC_MAGIC_U16 20240520
#define AMP_LLMC_MAGIC_U32 20240801
#define AMP_LLMC_HEADER_BYTES 1024
/* The most of a file the layout is read from: a .npy header longer than
 * this is refused (NumPy writes well under 1 KiB for a 1-D array). */
#define AMP_TOKEN_HEAD_MAX 65536

typedef struct amp_token_layout {
    amp_token_format format; /* as detected when AUTO was asked */
    amp_token_dtype dtype;
    int width;               /* bytes per token */
    uint64_t offset;         /* byte of the first token */
    int64_t n;               /* tokens */
} amp_token_layout;

/* The layout of a file of `size` bytes whose first bytes are head[0 ..
 * headlen) (headlen = min(size, AMP_TOKEN_HEAD_MAX)). format AUTO detects:
 * llm.c's magic, then .npy's, then a name ending in `.bin` is raw uint16;
 * anything else is an error asking for [data] token_format. 0, or -1 with
 * err naming path (and the byte where it applies). */
int amp_token_layout_parse(const unsigned char *head, size_t headlen, uint64_t size,
                           amp_token_format format, const char *path, amp_token_layout *out,
                           char *err, size_t errlen);

/* "raw uint16 .bin", "llm.c shard (uint16)", ".npy <i4", ... for messages. */
const char *amp_token_layout_name(const amp_token_layout *l);

#endif
