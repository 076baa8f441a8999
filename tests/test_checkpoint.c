/* Checkpoints: the format refuses every truncation and a flip of bits 0, 3, 6 in every byte;
 * a session stopped at step k, saved, parsed and restored into a fresh
 * session continues bit for bit like an uninterrupted one (SGD+momentum and
 * AdamW, FP32 and FP16+dynamic, with accumulation, cosine schedule and
 * skipped steps); and a checkpoint of another model, scaler or config is
 * refused with a message naming the difference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "train/session.h"

#include "expect.h"
#include "session_helpers.h"


/* Saves the session into an encoded buffer (as the CLI does). */
static uint8_t *save(amp_session *s, size_t *len) {
    amp_checkpoint ck;
    char err[1024];
    uint8_t *buf = NULL;
    if (amp_session_snapshot(s, &ck, err, sizeof err) != 0 ||
        amp_checkpoint_encode(&ck, &buf, len, err, sizeof err) != 0) {
        fprintf(stderr, "save: %s\n", err);
        exit(1);
    }
    amp_session_snapshot_free(&ck);
    return buf;
}

static int same_record(const amp_step_record *a, const amp_step_record *b) {
    return a->step == b->step && a->epoch == b->epoch &&
           memcmp(&a->loss, &b->loss, sizeof a->loss) == 0 && memcmp(&a->lr, &b->lr, sizeof a->lr) == 0 &&
           memcmp(&a->scale, &b->scale, sizeof a->scale) == 0 && a->skipped == b->skipped &&
           memcmp(&a->grad_norm, &b->grad_norm, sizeof a->grad_norm) == 0 &&
           a->underflow == b->underflow && a->overflow == b->overflow;
}

static int same_totals(const amp_checkpoint *a, const amp_checkpoint *b) {
    if (a->nlayers != b->nlayers) return 0;
    for (uint32_t i = 0; i < 2 * a->nlayers; i++) {
        amp_round_count x = amp_checkpoint_total(a, i), y = amp_checkpoint_total(b, i);
        if (memcmp(&x, &y, sizeof x) != 0) return 0;
    }
    return 1;
}

static float *weights(amp_session *s, const float *dev) {
    size_t n = s->model->desc.nparams;
    float *h = malloc(n * sizeof(float));
    if (!h || s->be->ops->download(s->be, h, dev, n * sizeof(float)) != 0) exit(1);
    return h;
}

static const char *const tiny[] = {"run.device=cpu", "data.dataset=tiny", "data.train_size=300",
                                   "data.test_size=64", "data.features=12", "data.batch_size=16", "model.hidden=20,14",
                                   "train.steps=40", NULL};

/* Runs `total` steps straight, and again as k steps + save + restore into a
 * new session + the rest; every record, the weights, the optimizer state,
 * the rounding totals and the scale must be bitwise equal. */
static void check_resume(const char *name, const char *const *extra, int64_t k) {
    amp_config *cfg_a = make_config2(tiny, extra);
    amp_session *a = open_or_die(cfg_a);
    int64_t total = a->total_steps;
    amp_step_record *ra = calloc((size_t)total, sizeof *ra);
    for (int64_t i = 0; i < total; i++) step_or_die(a, &ra[i]);

    amp_config *cfg_b = make_config2(tiny, extra);
    amp_session *b = open_or_die(cfg_b);
    amp_step_record r;
    for (int64_t i = 0; i < k; i++) step_or_die(b, &r);
    size_t len = 0;
    uint8_t *buf = save(b, &len);
    amp_session_close(b);
    amp_config_free(cfg_b);

    amp_config *cfg_c = make_config2(tiny, extra);
    amp_session *c = open_or_die(cfg_c);
    amp_checkpoint ck;
    char err[2048];
    int rc = amp_checkpoint_parse(buf, len, &ck, err, sizeof err);
    EXPECT(rc == 0, "%s: parse: %s", name, err);
    if (rc == 0) {
        rc = amp_session_restore(c, &ck, err, sizeof err);
        EXPECT(rc == 0, "%s: restore: %s", name, err);
    }
    int skipped = 0, diverged = 0;
    for (int64_t i = k; i < total && rc == 0; i++) {
        step_or_die(c, &r);
        skipped += r.skipped;
        if (!diverged && !same_record(&r, &ra[i])) {
            EXPECT(0, "%s: step %lld differs after resuming at %lld (loss %.17g vs %.17g, scale %g vs %g)",
                   name, (long long)r.step, (long long)k, r.loss, ra[i].loss, r.scale, ra[i].scale);
            diverged = 1;
        }
    }
    if (rc == 0) {
        size_t n = a->model->desc.nparams;
        float *wa = weights(a, a->model->master), *wc = weights(c, c->model->master);
        EXPECT(memcmp(wa, wc, n * 4) == 0, "%s: final master weights differ", name);
        free(wa);
        free(wc);
        for (int o = 0; o < 2; o++) {
            if (!a->model->opt[o]) continue;
            float *oa = weights(a, a->model->opt[o]), *oc = weights(c, c->model->opt[o]);
            EXPECT(memcmp(oa, oc, n * 4) == 0, "%s: optimizer state %d differs", name, o);
            free(oa);
            free(oc);
        }
        EXPECT(memcmp(a->totals, c->totals, 2 * (size_t)a->nlayers * sizeof *a->totals) == 0,
               "%s: rounding totals differ", name);
        EXPECT(a->applied == c->applied && a->skipped == c->skipped &&
                   a->batcher->epoch == c->batcher->epoch && a->batcher->cursor == c->batcher->cursor,
               "%s: counters differ", name);
        double sa = amp_plugin_scaler(&a->scaler)->get_scale(a->scaler.self);
        double sc = amp_plugin_scaler(&c->scaler)->get_scale(c->scaler.self);
        EXPECT(sa == sc, "%s: final scale %g vs %g", name, sa, sc);
    }
    printf("%s: resumed at %lld of %lld, %d skipped steps after the resume: %s\n", name,
           (long long)k, (long long)total, skipped, diverged ? "DIFFERS" : "bitwise equal");
    free(buf);
    free(ra);
    amp_session_close(a);
    amp_session_close(c);
    amp_config_free(cfg_a);
    amp_config_free(cfg_c);
}

/* Restoring a checkpoint of `base` into a session built with `other` must
 * return `code` and a message containing `needle`. */
static void check_refused(const char *const *other, int code, const char *needle) {
    amp_config *cfg_b = make_config2(tiny, (const char *const[]){"scaler.plugin=dynamic", "precision.plugin=fp16", NULL});
    amp_session *b = open_or_die(cfg_b);
    amp_step_record r;
    for (int i = 0; i < 5; i++) step_or_die(b, &r);
    size_t len = 0;
    uint8_t *buf = save(b, &len);
    amp_session_close(b);
    amp_config_free(cfg_b);

    amp_config *cfg = make_config2(tiny, other);
    amp_session *c = open_or_die(cfg);
    amp_checkpoint ck;
    char err[2048] = "";
    int rc = amp_checkpoint_parse(buf, len, &ck, err, sizeof err);
    EXPECT(rc == 0, "parse: %s", err);
    if (rc == 0) rc = amp_session_restore(c, &ck, err, sizeof err);
    EXPECT(rc == code && (!needle || strstr(err, needle)), "restore with %s: rc %d (want %d), '%s' (want '%s')",
           other[0], rc, code, err, needle ? needle : "");
    if (code == 0) EXPECT(rc == 0 && c->step == 5, "restore did not land on step 5");
    free(buf);
    amp_session_close(c);
    amp_config_free(cfg);
}

/* Every prefix and every single-byte change of a valid checkpoint is
 * refused; the intact buffer parses to the values it was built from. */
static void test_format_rejects_damage(void) {
    amp_config *cfg = make_config2(tiny, (const char *const[]){"precision.plugin=fp16", "optim.name=adamw", NULL});
    amp_session *s = open_or_die(cfg);
    amp_step_record r;
    for (int i = 0; i < 7; i++) step_or_die(s, &r);
    amp_checkpoint in;
    char err[1024];
    EXPECT(amp_session_snapshot(s, &in, err, sizeof err) == 0, "snapshot: %s", err);
    uint8_t loss_bytes[16];
    amp_ckpt_put_f64(loss_bytes, 0, 0.25);
    amp_ckpt_put_f64(loss_bytes, 1, -1.5);
    in.losses = loss_bytes;
    in.nlosses = 2;
    in.metrics = "{\"step\":1}\n";
    in.metrics_len = strlen(in.metrics);
    in.wall_seconds = 1.5;
    uint8_t *buf = NULL;
    size_t len = 0;
    EXPECT(amp_checkpoint_encode(&in, &buf, &len, err, sizeof err) == 0, "encode: %s", err);
    amp_checkpoint out;
    EXPECT(amp_checkpoint_parse(buf, len, &out, err, sizeof err) == 0, "parse: %s", err);
    EXPECT(out.step == 7 && out.applied + out.skipped == 7 && out.nparams == s->model->desc.nparams &&
               out.opt_buffers == 2 && out.nlayers == 3 && strcmp(out.scaler, "dynamic") == 0 &&
               strcmp(out.precision, "fp16") == 0 && out.nlosses == 2 &&
               amp_ckpt_f64(out.losses, 1) == -1.5 && out.wall_seconds == 1.5 &&
               out.metrics_len == in.metrics_len && memcmp(out.master, in.master, in.master_len) == 0 &&
               memcmp(out.optim_state, in.optim_state, in.optim_len) == 0 &&
               same_totals(&out, &in),
           "parsed values differ from the encoded ones");
    size_t accepted = 0, flips = 0;
    for (size_t cut = 0; cut < len; cut++)
        accepted += amp_checkpoint_parse(buf, cut, &out, err, sizeof err) == 0;
    EXPECT(accepted == 0, "%zu truncated prefixes were accepted", accepted);
    uint8_t *copy = malloc(len + 1);
    memcpy(copy, buf, len);
    copy[len] = 0;
    EXPECT(amp_checkpoint_parse(copy, len + 1, &out, err, sizeof err) != 0, "a trailing byte was accepted");
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            copy[i] ^= (uint8_t)(1u << bit);
            flips++;
            if (amp_checkpoint_parse(copy, len, &out, err, sizeof err) == 0) accepted++;
            copy[i] ^= (uint8_t)(1u << bit);
        }
    }
    EXPECT(accepted == 0, "%zu of %zu bit flips were accepted", accepted, flips);
    printf("format: %zu bytes; all %zu truncations and %zu bit flips refused\n", len, len, flips);
    free(copy);
    free(buf);
    amp_session_snapshot_free(&in);
    amp_session_close(s);
    amp_config_free(cfg);
}

/* A checkpoint written under another plugin ABI is refused, naming both. */
static void test_other_abi_refused(void) {
    amp_config *cfg = make_config2(tiny, NULL);
    amp_session *s = open_or_die(cfg);
    amp_step_record r;
    step_or_die(s, &r);
    size_t len = 0;
    uint8_t *buf = save(s, &len);
    amp_checkpoint ck;
    char err[2048] = "";
    EXPECT(amp_checkpoint_parse(buf, len, &ck, err, sizeof err) == 0, "parse: %s", err);
    ck.abi_major += 1;
    int rc = amp_session_restore(s, &ck, err, sizeof err);
    EXPECT(rc == 2 && strstr(err, "plugin ABI") && strstr(err, "this amptrain has ABI"),
           "another ABI: rc %d, '%s'", rc, err);
    free(buf);
    amp_session_close(s);
    amp_config_free(cfg);
}

/* The world size travels in the DIST section; a checkpoint of another
 * number of ranks is refused with the command that resumes it. */
static void test_world_size_recorded(void) {
    amp_config *cfg = make_config2(tiny, NULL);
    amp_session *s = open_or_die(cfg);
    amp_step_record r;
    step_or_die(s, &r);
    amp_checkpoint in, out;
    char err[2048] = "";
    uint8_t *buf = NULL;
    size_t len = 0;
    EXPECT(amp_session_snapshot(s, &in, err, sizeof err) == 0, "snapshot: %s", err);
    EXPECT(in.world_size == 1, "one process wrote world size %u", (unsigned)in.world_size);
    in.world_size = 3;
    EXPECT(amp_checkpoint_encode(&in, &buf, &len, err, sizeof err) == 0, "encode: %s", err);
    EXPECT(buf && amp_checkpoint_parse(buf, len, &out, err, sizeof err) == 0, "parse: %s", err);
    EXPECT(out.world_size == 3, "world size read back as %u", (unsigned)out.world_size);
    int rc = amp_session_restore(s, &out, err, sizeof err);
    EXPECT(rc == 2 && strstr(err, "written by a run on 3 ranks, and this run has 1") &&
               strstr(err, "Resume it with mpirun -np 3"),
           "3 ranks into 1: rc %d, '%s'", rc, err);
    free(buf);
    amp_session_snapshot_free(&in);
    amp_session_close(s);
    amp_config_free(cfg);
}

/* A format-1 file (amptrain 0.1, MLP layers as in/out pairs) still reads:
 * its layers become the fcK.weight/fcK.bias table of model "mlp", and it
 * re-encodes as format 2 with the same table, weights and totals. */
static void test_format1_still_read(void) {
    const char *path = AMP_TEST_SOURCE_DIR "/fuzz/corpus/checkpoint/fp16_static_3hidden.amp";
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL, "cannot open %s", path);
    if (!f) return;
    uint8_t buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    amp_checkpoint ck, again;
    char err[512];
    EXPECT(amp_checkpoint_parse(buf, len, &ck, err, sizeof err) == 0, "format 1: %s", err);
    EXPECT(ck.world_size == 1, "a file without DIST read as %u ranks", (unsigned)ck.world_size);
    EXPECT(ck.format == 1 && strcmp(ck.model, "mlp") == 0 && ck.nparam_tensors == 2 * ck.nlayers,
           "format 1 read as format %u, model '%s', %u tensors for %u layers", (unsigned)ck.format,
           ck.model, (unsigned)ck.nparam_tensors, (unsigned)ck.nlayers);
    amp_ckpt_param w, b;
    EXPECT(amp_checkpoint_param(&ck, 2, &w) == 0 && amp_checkpoint_param(&ck, 3, &b) == 0 &&
               strcmp(w.name, "fc2.weight") == 0 && strcmp(b.name, "fc2.bias") == 0 && w.ndim == 2 &&
               b.ndim == 1 && w.shape[0] == b.shape[0] && w.layer == 1 && b.layer == 1,
           "format 1 table: %s [%llu, %llu], %s", w.name, (unsigned long long)w.shape[0],
           (unsigned long long)w.shape[1], b.name);
    uint8_t *out = NULL;
    size_t out_len = 0;
    EXPECT(amp_checkpoint_encode(&ck, &out, &out_len, err, sizeof err) == 0, "re-encode: %s", err);
    EXPECT(out && amp_checkpoint_parse(out, out_len, &again, err, sizeof err) == 0, "format 2: %s", err);
    if (out && again.format == 2) {
        int same = again.nparam_tensors == ck.nparam_tensors && same_totals(&again, &ck) &&
                   again.master_len == ck.master_len &&
                   memcmp(again.master, ck.master, ck.master_len) == 0;
        for (uint32_t i = 0; same && i < ck.nparam_tensors; i++) {
            amp_ckpt_param p, q;
            amp_checkpoint_param(&ck, i, &p);
            amp_checkpoint_param(&again, i, &q);
            same = memcmp(&p, &q, sizeof p) == 0;
        }
        EXPECT(same, "format 1 -> 2 changed the table, the weights or the totals");
    }
    free(out);
}

int main(void) {
    test_format1_still_read();
    test_other_abi_refused();
    test_format_rejects_damage();
    test_world_size_recorded();
    check_resume("sgd+momentum fp32", (const char *const[]){"optim.name=sgd", "optim.momentum=0.9", NULL}, 13);
    check_resume("sgd+momentum fp32 accumulate 3 cosine warmup",
                 (const char *const[]){"optim.name=sgd", "optim.weight_decay=0.01", "train.accumulate=3",
                                       "optim.schedule=cosine", "optim.warmup_steps=5", NULL},
                 17);
    check_resume("adamw fp32", (const char *const[]){"optim.name=adamw", NULL}, 9);
    /* loss_weight 2^-20 and a short growth interval: the scale grows and
     * backs off, so steps are skipped on both sides of the resume. */
    const char *const fp16[] = {"optim.name=adamw", "precision.plugin=fp16", "scaler.plugin=dynamic",
                                "scaler.init_scale=1e9", "scaler.growth_interval=3",
                                "train.loss_weight=0.00000095367431640625", NULL};
    check_resume("adamw fp16+dynamic", fp16, 21);
    check_resume("sgd fp16+dynamic accumulate 2",
                 (const char *const[]){"optim.name=sgd", "precision.plugin=fp16", "scaler.plugin=dynamic",
                                       "scaler.init_scale=1e9", "scaler.growth_interval=4",
                                       "train.accumulate=2", "train.steps=60", NULL},
                 19);
    check_resume("adamw bf16+hysteresis accumulate 2",
                 (const char *const[]){"optim.name=adamw", "precision.plugin=bf16",
                                       "scaler.plugin=hysteresis", "scaler.growth_interval=2",
                                       "train.accumulate=2", "train.steps=50", NULL},
                 11);

    const char *const base[] = {"scaler.plugin=dynamic", "precision.plugin=fp16"};
    check_refused((const char *const[]){base[0], base[1], "model.hidden=20,15", NULL}, 2,
                  "model shape differs");
    check_refused((const char *const[]){"scaler.plugin=static", base[1], NULL}, 2,
                  "scaler plugin 'dynamic'");
    check_refused((const char *const[]){base[0], "precision.plugin=bf16", NULL}, 2,
                  "precision plugin 'fp16'");
    check_refused((const char *const[]){base[0], base[1], "optim.lr=0.01", NULL}, 2, "[optim] lr");
    check_refused((const char *const[]){base[0], base[1], "scaler.growth_interval=7", NULL}, 2,
                  "[scaler] growth_interval");
    check_refused((const char *const[]){base[0], base[1], "optim.name=adamw", NULL}, 2, "optimizer differs");
    check_refused((const char *const[]){base[0], base[1], "dist.grad_dtype=bf16", NULL}, 2,
                  "[dist] grad_dtype");
    /* the replica check's period and the timeout may change */
    check_refused((const char *const[]){base[0], base[1], "dist.check_every=5", "dist.timeout=60", NULL},
                  0, NULL);
    /* printing-only keys may change */
    check_refused((const char *const[]){base[0], base[1], "train.log_every=3", "run.name=other",
                                        "train.checkpoint_every=2", NULL},
                  0, NULL);
    return amp_test_failures ? 1 : 0;
}
