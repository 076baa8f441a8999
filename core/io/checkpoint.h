/* The checkpoint file format: encode a training state into one buffer and
 * parse (validate) a buffer back. No files, no session: the parser is what a
 * fuzzer feeds, so it trusts no length and reads nothing outside the buffer.
 *
 * Layout (every integer little-endian, fixed width):
 *   0   8  magic "AMPCKPT\0"
 *   8   4  format version (AMP_CKPT_FORMAT_VERSION)
 *   12  4  section count n (1..AMP_CKPT_MAX_SECTIONS)
 *   16  8  file size in bytes (catches truncation and appended junk)
 *   24  4  CRC32 of bytes 0..23 and the section table
 *   28  4  zero
 *   32  n x 24 section table: tag[4], CRC32 of the payload (4), offset (8),
 *          length (8); payloads follow the table, in table order.
 * Sections: META (counters, the model's name and parameter table, plugins), CONF (the resolved INI
 * text the run used), MAST (master weights, f32), OPTM (optimizer state,
 * f32, opt_buffers arrays of nparams), SCAL (the scaler plugin's own
 * state_save bytes), TOTL (per-layer rounding totals), LOSS (the last <= 100
 * step losses, f64, for summary.json), all required; then the optional MPOS
 * (u64 length and u32 CRC32 of the run's metrics.jsonl at this checkpoint,
 * u32 zero: the history stays in metrics.jsonl, and a resume cuts it back to
 * that length), METR (metrics lines that belong before this checkpoint
 * but are not in metrics.jsonl, e.g. after a failed write; in files from
 * before MPOS existed, every metrics line so far) and EXEC (where it ran:
 * backend, instruction-set path, threads).
 * Unknown tags are skipped, so later versions can add sections; DIST (u32:
 * the number of data-parallel ranks that wrote it) is one such, optional: a
 * checkpoint without it was written by one process. DATA (text: one line
 * per data file, "file <sha256> <bytes> <path>", or "generated ..." for
 * synthetic data) is another, optional too: a file from before it holds
 * no fingerprint, and a resume from it warns that the data is unchecked.
 *
 * Format 2 (this amptrain) describes the model by its parameter table
 * (name, owning layer, shape of every tensor, in flat order) and names the
 * model; format 1 (amptrain 0.1, MLP only) described MLP layers as in/out
 * pairs and is still read: its layers become the table fcK.weight [out, in],
 * fcK.bias [out] of model "mlp". */
#ifndef AMP_CHECKPOINT_H
#define AMP_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "amptrain/plugin.h"
#include "backend/backend.h"

#define AMP_CKPT_FORMAT_VERSION 2u
#define AMP_CKPT_MAX_SECTIONS 32u
#define AMP_CKPT_HEADER_SIZE 32u
#define AMP_CKPT_ENTRY_SIZE 24u
#define AMP_CKPT_MAX_LOSSES 100u
/* plugin names, versions, the model name (with NUL): the loader's limits,
 * so every plugin that loads fits a checkpoint and its name is never cut */
#define AMP_CKPT_NAME_MAX (AMP_PLUGIN_NAME_MAX + 1)
_Static_assert(AMP_PLUGIN_VERSION_MAX <= AMP_PLUGIN_NAME_MAX,
               "checkpoints store versions in name-sized fields");
#define AMP_CKPT_PARAM_NAME_MAX 96 /* parameter names (with NUL), as AMP_MODEL_NAME_MAX */
#define AMP_CKPT_MAX_DIMS 4
#define AMP_CKPT_MAX_LAYERS (1u << 20)
#define AMP_CKPT_MAX_TENSORS (1u << 20)

/* One tensor of the parameter table. */
typedef struct amp_ckpt_param {
    char name[AMP_CKPT_PARAM_NAME_MAX];
    uint32_t layer; /* < nlayers */
    uint32_t ndim;  /* 1..AMP_CKPT_MAX_DIMS */
    uint64_t shape[AMP_CKPT_MAX_DIMS];
} amp_ckpt_param;

/* A parsed checkpoint. Scalars are copied out; the byte arrays point into
 * the buffer that was parsed (which must outlive this struct) and are
 * little-endian. For encoding the same struct is filled by the caller. */
typedef struct amp_checkpoint {
    /* META */
    char amptrain_version[AMP_CKPT_NAME_MAX];
    uint32_t abi_major, abi_minor;           /* the host's plugin ABI */
    int64_t step, applied, skipped, epoch, cursor, total_steps;
    uint64_t seed;
    int64_t train_examples;
    uint32_t optim;                          /* amp_optim_kind */
    uint32_t opt_buffers;                    /* 0, 1 or 2 arrays of nparams */
    char model[AMP_CKPT_NAME_MAX];           /* [model] name */
    uint32_t nlayers;                        /* telemetry layers (TOTL holds 2 per layer) */
    uint32_t nparam_tensors;
    /* The parameter table: for encoding the caller points `params` at
     * [nparam_tensors] entries; a parsed checkpoint leaves it NULL and keeps
     * the validated bytes in params_raw. Read either with
     * amp_checkpoint_param(). */
    const amp_ckpt_param *params;
    const uint8_t *params_raw; size_t params_raw_len;
    uint32_t format;                         /* the version the file was written in */
    uint64_t nparams;
    char precision[AMP_CKPT_NAME_MAX], precision_version[AMP_CKPT_NAME_MAX];
    char scaler[AMP_CKPT_NAME_MAX], scaler_version[AMP_CKPT_NAME_MAX];
    double wall_seconds;                     /* training time before this checkpoint */
    uint64_t device_peak;
    uint32_t world_size;                     /* DIST: ranks of the run (1 when absent) */
    /* TOTL: [2 * nlayers] (underflow, overflow, nonzero); for encoding
     * the caller points `totals` at them, a parsed checkpoint keeps the
     * bytes in totals_raw. Read either with amp_checkpoint_total(). */
    const amp_round_count *totals;
    const uint8_t *totals_raw;
    /* byte sections */
    const char *config;   size_t config_len;    /* CONF */
    const uint8_t *master; size_t master_len;   /* MAST: nparams x f32 */
    const uint8_t *optim_state; size_t optim_len; /* OPTM: opt_buffers x nparams x f32 */
    const uint8_t *scaler_state; size_t scaler_len; /* SCAL */
    /* SCLD (optional; NULL, 0 when the run had no scaled GEMM operands):
     * the bytes of amp_scaled_state_save */
    const uint8_t *scaled_state; size_t scaled_len;
    const uint8_t *losses; size_t nlosses;      /* LOSS: nlosses x f64 */
    const char *metrics;  size_t metrics_len;   /* METR (NULL, 0 when absent) */
    /* MPOS: has_metrics_pos 0 when absent (an older file) */
    int has_metrics_pos;
    uint64_t metrics_pos;                       /* metrics.jsonl's length in bytes */
    uint32_t metrics_crc;                       /* CRC32 of those bytes */
    /* EXEC (optional; absent in older files: NULL, 0): where the run
     * executed, "key=value" lines (backend, isa, threads), so a resume on
     * another instruction-set path or thread count can say that its bits
     * will differ */
    const char *exec;     size_t exec_len;
    /* DATA (optional; absent in older files: NULL, 0): the fingerprint of
     * the data the run trained on (see data_id.h), so a resume on other
     * data is refused */
    const char *data_id;  size_t data_id_len;
} amp_checkpoint;

/* Validates and parses buf[0..len). 0, or -1 with the reason in err (e.g.
 * "truncated: 1234 of 5678 bytes", "section MAST: CRC mismatch"). Never
 * reads outside the buffer, whatever it holds. */
int amp_checkpoint_parse(const uint8_t *buf, size_t len, amp_checkpoint *out, char *err,
                         size_t errlen);

/* Checks the first n bytes of a checkpoint file of file_size bytes (n <=
 * file_size; n must cover the section table, AMP_CKPT_HEAD_MAX bytes always
 * do): magic, version, section count, the size the header records against
 * file_size, the header CRC. amp_checkpoint_parse starts with it; a reader
 * calls it before reading a file whole, so a huge file whose header is bad
 * or disagrees with its size costs one short read. 0, or -1 with err. */
#define AMP_CKPT_HEAD_MAX (AMP_CKPT_HEADER_SIZE + AMP_CKPT_MAX_SECTIONS * AMP_CKPT_ENTRY_SIZE)
int amp_checkpoint_check_head(const uint8_t *head, size_t n, uint64_t file_size, char *err,
                              size_t errlen);

/* Serialises ck into a new malloc'd buffer (*out, *len; the caller frees).
 * 0, or -1 with err (out of memory, or a field that does not fit). */
int amp_checkpoint_encode(const amp_checkpoint *ck, uint8_t **out, size_t *len, char *err,
                          size_t errlen);

/* Tensor i (< nparam_tensors) of the parameter table; 0, or -1 when i is
 * out of range. Decodes a parsed table in place (O(i)). */
int amp_checkpoint_param(const amp_checkpoint *ck, uint32_t i, amp_ckpt_param *out);
/* Rounding totals slot i (< 2 * nlayers). */
amp_round_count amp_checkpoint_total(const amp_checkpoint *ck, uint32_t i);

/* Little-endian helpers for the byte arrays. */
float amp_ckpt_f32(const uint8_t *p, size_t index);
double amp_ckpt_f64(const uint8_t *p, size_t index);
void amp_ckpt_put_f32(uint8_t *p, size_t index, float v);
void amp_ckpt_put_f64(uint8_t *p, size_t index, double v);

#endif
