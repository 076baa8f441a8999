/* libFuzzer target: the checkpoint reader (core/io/checkpoint.c).
 *
 * Input: a whole checkpoint file. It is parsed as given; then a copy whose
 * header and section CRCs are recomputed is parsed too, so that mutations
 * reach the section contents instead of stopping at the CRC check. A parse
 * that succeeds must give arrays that lie inside the buffer with the sizes
 * the header promises, and re-encoding the result must parse again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const uint8_t *p) { return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }
static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Rewrites the CRCs of every table entry that fits, then the header's. */
static void fix_crcs(uint8_t *buf, size_t len) {
    if (len < AMP_CKPT_HEADER_SIZE) return;
    uint32_t count = get_u32(buf + 12);
    if (count > AMP_CKPT_MAX_SECTIONS) count = AMP_CKPT_MAX_SECTIONS;
    size_t table_end = AMP_CKPT_HEADER_SIZE + (size_t)count * AMP_CKPT_ENTRY_SIZE;
    if (table_end > len) return;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *e = buf + AMP_CKPT_HEADER_SIZE + (size_t)i * AMP_CKPT_ENTRY_SIZE;
        uint64_t off = get_u64(e + 8), n = get_u64(e + 16);
        if (off <= len && n <= len - off)
            put_u32(e + 4, (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf + off, (uInt)n));
    }
    uLong c = crc32(0L, buf, 24);
    c = crc32(c, buf + AMP_CKPT_HEADER_SIZE, (uInt)(table_end - AMP_CKPT_HEADER_SIZE));
    put_u32(buf + 24, (uint32_t)c);
}

static int inside(const uint8_t *buf, size_t len, const void *p, size_t n) {
    const uint8_t *q = p;
    return n == 0 || (q && q >= buf && n <= len && (size_t)(q - buf) <= len - n);
}

static void check(const uint8_t *buf, size_t len) {
    amp_checkpoint ck;
    char err[512];
    err[0] = '\0';
    if (amp_checkpoint_parse(buf, len, &ck, err, sizeof err) != 0) {
        if (!err[0]) abort(); /* a refusal always says why */
        return;
    }
    if (!inside(buf, len, ck.config, ck.config_len) || !inside(buf, len, ck.master, ck.master_len) ||
        !inside(buf, len, ck.optim_state, ck.optim_len) ||
        !inside(buf, len, ck.scaler_state, ck.scaler_len) ||
        !inside(buf, len, ck.losses, ck.nlosses * 8) || !inside(buf, len, ck.metrics, ck.metrics_len))
        abort();
    if (ck.master_len != ck.nparams * 4 || ck.optim_len != ck.nparams * 4 * ck.opt_buffers ||
        ck.nlayers < 1 || ck.nlayers > AMP_CKPT_MAX_LAYERS || ck.nparam_tensors < 1 ||
        !inside(buf, len, ck.params_raw, ck.params_raw_len) ||
        !inside(buf, len, ck.totals_raw, 2 * (size_t)ck.nlayers * 24) || ck.nlosses > AMP_CKPT_MAX_LOSSES ||
        ck.step > ck.total_steps || ck.applied + ck.skipped != ck.step)
        abort();
    /* Touch what a restore reads. */
    volatile float sink = 0.0f;
    for (size_t i = 0; i < ck.nparams; i += 97) sink += amp_ckpt_f32(ck.master, i);
    for (size_t i = 0; i < ck.nlosses; i++) sink += (float)amp_ckpt_f64(ck.losses, i);
    amp_ckpt_param P;
    for (uint32_t i = 0; i < ck.nparam_tensors && i < 64; i++)
        if (amp_checkpoint_param(&ck, i, &P) != 0) abort();
    for (uint32_t i = 0; i < 2 * ck.nlayers; i += 7) sink += (float)amp_checkpoint_total(&ck, i).nonzero;
    (void)sink;
    uint8_t *again = NULL;
    size_t again_len = 0;
    amp_checkpoint ck2;
    if (amp_checkpoint_encode(&ck, &again, &again_len, err, sizeof err) != 0 ||
        amp_checkpoint_parse(again, again_len, &ck2, err, sizeof err) != 0 || ck2.step != ck.step ||
        ck2.nparams != ck.nparams || ck2.metrics_len != ck.metrics_len)
        abort();
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    fix_crcs(copy, size);
    check(copy, size);
    free(copy);
    return 0;
}
