/* Token file splits (core/data/token_files.c): a glob of shards in sorted order,
 * one of them too short for a window, windows numbered shard after shard
 * and never crossing a shard's end, and every valid start reachable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"
#include "data/token_files.h"

static void put(const char *path, const void *a, size_t an, const void *b, size_t bn) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(a, 1, an, f) != an || (bn && fwrite(b, 1, bn, f) != bn) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

int main(void) {
    char dir[] = "/tmp/amp_token_files_XXXXXX", path[256], pattern[256];
    if (!mkdtemp(dir)) return 1;
    enum { T = 4 };
    /* shard a: raw uint16 0..9 (6 windows); b: 3 ids (none); c: llm.c
     * uint32 shard of 100..107 (4 windows) */
    uint16_t a[10], b[3] = {7, 7, 7};
    for (int i = 0; i < 10; i++) a[i] = (uint16_t)i;
    snprintf(path, sizeof path, "%s/s_a.bin", dir);
    put(path, a, sizeof a, NULL, 0);
    snprintf(path, sizeof path, "%s/s_b.bin", dir);
    put(path, b, sizeof b, NULL, 0);
    int32_t head[256] = {AMP_LLMC_MAGIC_U32, 7, 8};
    uint32_t c[8];
    for (int i = 0; i < 8; i++) c[i] = 100u + (uint32_t)i;
    snprintf(path, sizeof path, "%s/s_c.bin", dir);
    put(path, head, sizeof head, c, sizeof c);

    amp_token_split s;
    char err[1024] = "";
    snprintf(pattern, sizeof pattern, "%s/s_*.bin", dir);
    int rc = amp_token_split_open(&s, "[data] train_tokens", pattern, AMP_TOKENS_AUTO, 200, T, err,
                                  sizeof err);
    EXPECT(rc == 0, "open: %d %s", rc, err);
    if (rc != 0) return 1;
    EXPECT(s.nshards == 3 && s.n == 21 && s.starts == 10, "%d shards, %lld ids, %lld starts",
           s.nshards, (long long)s.n, (long long)s.starts);
    EXPECT(s.shards[2].layout.format == AMP_TOKENS_LLMC && s.shards[2].layout.dtype == AMP_TOKEN_U32,
           "s_c.bin read as %s", amp_token_layout_name(&s.shards[2].layout));
    for (int64_t g = 0; g < s.starts; g++) {
        int32_t x[T], y[T];
        amp_token_split_window(&s, g, T, x, y);
        /* starts 0..5 are a's, 6..9 are c's (b has none) */
        int32_t base = g < 6 ? (int32_t)g : 100 + (int32_t)(g - 6);
        int ok = 1;
        for (int i = 0; i < T; i++) ok &= x[i] == base + i && y[i] == base + i + 1;
        EXPECT(ok, "window %lld: x[0] %d y[%d] %d (expected %d..%d)", (long long)g, x[0], T - 1,
               y[T - 1], base, base + T);
    }
    amp_token_split_close(&s);

    /* an id at the vocabulary's edge: 107 < 108 is fine, 107 >= 107 is not */
    rc = amp_token_split_open(&s, "[data] train_tokens", pattern, AMP_TOKENS_AUTO, 108, T, err,
                              sizeof err);
    EXPECT(rc == 0, "vocab 108: %d %s", rc, err);
    amp_token_split_close(&s);
    rc = amp_token_split_open(&s, "[data] train_tokens", pattern, AMP_TOKENS_AUTO, 107, T, err,
                              sizeof err);
    EXPECT(rc == 2 && strstr(err, "s_c.bin: token 7 (byte 1052) is id 107"), "vocab 107: %d %s",
           rc, err);
    EXPECT(s.nshards == 0 && !s.shards, "a failed open left %d shards", s.nshards);

    const char *names[] = {"s_a.bin", "s_b.bin", "s_c.bin"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    if (amp_test_failures == 0) printf("ok  token splits: shards in order, windows inside each\n");
    return amp_test_failures ? 1 : 0;
}
