#include "tb_event.h"

#include <string.h>

static void varint(amp_bytes *b, uint64_t v) {
    uint8_t buf[10];
    int n = 0;
    do {
        buf[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) buf[n] |= 0x80;
        n++;
    } while (v);
    amp_bytes_put(b, buf, (size_t)n);
}

/* field number and wire type: 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit */
static void key(amp_bytes *b, unsigned field, unsigned wire) { varint(b, (uint64_t)(field << 3 | wire)); }

static void bytes_field(amp_bytes *b, unsigned field, const void *data, size_t n) {
    key(b, field, 2);
    varint(b, n);
    amp_bytes_put(b, data, n);
}

static void fixed(amp_bytes *b, uint64_t bits, int nbytes) {
    uint8_t buf[8];
    for (int i = 0; i < nbytes; i++) buf[i] = (uint8_t)(bits >> (8 * i));
    amp_bytes_put(b, buf, (size_t)nbytes);
}

static void wall_step(amp_bytes *ev, double wall_time, int64_t step) {
    uint64_t bits;
    memcpy(&bits, &wall_time, 8);
    key(ev, 1, 1);
    fixed(ev, bits, 8);
    if (step != 0) { /* proto3: a zero is left out */
        key(ev, 2, 0);
        varint(ev, (uint64_t)step); /* int64: two's complement as a varint */
    }
}

void amp_tb_value(amp_bytes *summary, const char *tag, float value) {
    amp_bytes v = {0};
    bytes_field(&v, 1, tag, strlen(tag));
    uint32_t bits;
    memcpy(&bits, &value, 4);
    key(&v, 2, 5);
    fixed(&v, bits, 4);
    if (v.oom) summary->oom = 1;
    bytes_field(summary, 1, v.p, v.n);
    amp_bytes_free(&v);
}

static void frame(amp_bytes *out, amp_bytes *ev) {
    if (ev->oom)
        out->oom = 1;
    else
        amp_tfrecord_append(out, ev->p, ev->n);
    amp_bytes_free(ev);
}

void amp_tb_event(amp_bytes *out, double wall_time, int64_t step, const amp_bytes *summary) {
    amp_bytes ev = {0};
    wall_step(&ev, wall_time, step);
    bytes_field(&ev, 5, summary->p, summary->n);
    if (summary->oom) ev.oom = 1;
    frame(out, &ev);
}

void amp_tb_version(amp_bytes *out, double wall_time) {
    amp_bytes ev = {0};
    wall_step(&ev, wall_time, 0);
    static const char version[] = "brain.Event:2";
    bytes_field(&ev, 3, version, sizeof version - 1);
    frame(out, &ev);
}
