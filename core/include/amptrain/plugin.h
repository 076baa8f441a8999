/*
 * amptrain plugin ABI.
 *
 * A plugin is a shared object that exports exactly one symbol, the const data
 * object `amp_plugin_entry` (type amp_plugin_info). Loading the file
 * (dlopen) runs its ELF constructors, if it has any, as any dlopen does; the
 * host then reads the entry before calling any function of the plugin. It
 * checks every pointer and size in it against the plugin's loaded image
 * (struct_size within the entry symbol, the vtable's struct_size bytes in
 * the plugin, strings NUL-terminated in it, at most 4096 bytes, no control
 * bytes; the name [a-z0-9_]+), then, in this order:
 *   abi_major == AMP_PLUGIN_ABI_MAJOR   (else the plugin is refused)
 *   struct_size >= the size of ABI <major>.0's fields (fields appended by a
 *     later minor are read only when struct_size covers them)
 *   kind is the kind the host asked for, required functions are non-NULL
 * then calls the vtable's `init`. A plugin built with a lower abi_minor
 * loads: the host treats the fields it lacks as NULL / absent.
 *
 * Versioning rules (bump in the same commit as the layout change):
 *   - structs here are append-only; a new field or function bumps ABI_MINOR;
 *   - removing, reordering or retyping anything bumps ABI_MAJOR;
 *   - every struct starts with struct_size so either side can tell which
 *     fields the other knows; a NULL function pointer means "not provided"
 *     and the host uses its documented default.
 *
 * Plugins never link the core. Everything they need from the host comes
 * through the amp_host_api table handed to `init`. Plugins never print and
 * never exit: they report through host->log / host->error and return status.
 *
 * Status convention: every function returning int returns 0 on success and
 * non-zero on failure; on failure it should first call host->error with a
 * message saying what was wrong and what to do.
 */
#ifndef AMPTRAIN_PLUGIN_H
#define AMPTRAIN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AMP_PLUGIN_ABI_MAJOR 1
/* 1.1: amp_plugin_info.keys appended.
 * 1.2: scaled GEMM operand formats (amp_layer_precision.operand), the
 *      precision vtable's scale_update hook and amp_host_api's
 *      layer_op_classes appended.
 * 1.3: the NVFP4 format and its two scalings (AMP_FORMAT_NVFP4,
 *      AMP_SCALING_NVFP4_1D / _2D) appended to their enums, and
 *      amp_layer_precision.operand_flags (AMP_OPERAND_*) appended.
 * 1.4: amp_host_api.base_policy and its amp_policy_base appended: a
 *      precision plugin builds on another (fp8, mxfp8, nvfp4, ...) and
 *      replaces only what it changes, its scale_update recipe say. */
#define AMP_PLUGIN_ABI_MINOR 4

/* The one exported symbol, by name. */
#define AMP_PLUGIN_ENTRY_SYMBOL "amp_plugin_entry"

/* Limits the host enforces on every plugin, everywhere a plugin is named
 * (the loader, checkpoints, `amptrain new-plugin`): a name is 1 to
 * AMP_PLUGIN_NAME_MAX characters of [a-z0-9_], a version 1 to
 * AMP_PLUGIN_VERSION_MAX printable ASCII characters, and a scaler's
 * state_save may ask for at most AMP_SCALER_STATE_MAX bytes. */
#define AMP_PLUGIN_NAME_MAX 63
#define AMP_PLUGIN_VERSION_MAX 63
#define AMP_SCALER_STATE_MAX (16u << 20)

#if defined(__GNUC__)
#define AMP_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define AMP_PLUGIN_EXPORT
#endif

/* The entry keeps its C name when a plugin is written in C++. */
#ifdef __cplusplus
#define AMP_PLUGIN_EXTERN_C extern "C"
#else
#define AMP_PLUGIN_EXTERN_C extern
#endif

typedef enum amp_plugin_kind {
    AMP_PLUGIN_KIND_PRECISION = 1,
    AMP_PLUGIN_KIND_SCALER = 2
} amp_plugin_kind;

/* Storage / compute number formats. Values are part of the ABI. */
typedef enum amp_dtype {
    AMP_DTYPE_F32 = 0,
    AMP_DTYPE_F16 = 1,
    AMP_DTYPE_BF16 = 2,
    AMP_DTYPE_COUNT
} amp_dtype;

/* Op classes as PyTorch autocast groups them. Values are part of the ABI. */
typedef enum amp_op_class {
    AMP_OP_GEMM = 0,      /* matmul / linear: inputs rounded to this dtype, FP32 accumulation */
    AMP_OP_CONV = 1,
    AMP_OP_ATTENTION = 2,
    AMP_OP_POINTWISE = 3, /* activations, bias add */
    AMP_OP_SOFTMAX = 4,
    AMP_OP_LOSS = 5,
    AMP_OP_NORM = 6,
    AMP_OP_REDUCE = 7,
    AMP_OP_COUNT
} amp_op_class;

enum amp_log_level { AMP_LOG_ERROR = 0, AMP_LOG_WARN = 1, AMP_LOG_INFO = 2, AMP_LOG_DEBUG = 3 };

struct amp_policy_base; /* since ABI 1.4; defined with the precision vtable */

/*
 * Services the host offers a plugin. Valid from `init` until `fini` returns;
 * `ctx` must be passed back as the first argument of every call.
 *
 * Config getters read keys of the plugin's own INI section ([precision] or
 * [scaler]; the `plugin` key is the host's). Each returns 1 when the key is
 * set and parsed, 0 when absent (*out untouched, so preset it to the
 * default), -1 when the value is malformed (the host has already recorded a
 * `file:line:` error; the plugin should return failure from init). Asking for
 * a key marks it as read: keys no plugin asked for are reported as errors.
 * The strings returned by get_string and each_key stay valid until `fini`.
 * A call with a NULL format, key, out pointer or callback, a log level
 * outside AMP_LOG_ERROR..AMP_LOG_DEBUG, or a ctx that is not `ctx` below does
 * nothing (getters return -1) and the host stops the run naming the plugin.
 */
typedef struct amp_host_api {
    uint32_t struct_size;
    void *ctx;
    /* printf-style log line; the host adds the plugin name and a newline. */
    void (*log)(void *ctx, int level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    /* Records the error message a failing call returns with. */
    void (*error)(void *ctx, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /* Like error, but prefixes the file:line of `key` in the config. */
    void (*key_error)(void *ctx, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    int (*get_double)(void *ctx, const char *key, double *out);
    int (*get_int)(void *ctx, const char *key, int64_t *out);
    int (*get_string)(void *ctx, const char *key, const char **out);
    /* Calls fn for every key of the section starting with `prefix` (e.g.
     * "layer."), marking each as read. Stops and returns fn's value when fn
     * returns non-zero; returns 0 otherwise. */
    int (*each_key)(void *ctx, const char *prefix,
                    int (*fn)(void *user, const char *key, const char *value), void *user);
    /* The model's layer names, in order ("fc1", "fc2", ...). Pointers live
     * until fini. Used to validate per-layer overrides. */
    int (*layer_count)(void *ctx);
    const char *(*layer_name)(void *ctx, int index);
    /* Since ABI 1.2 (read it only when struct_size covers it): the op
     * classes layer `index` runs, bit (1u << AMP_OP_GEMM) ..., 0 for an
     * index out of range. A policy puts scaled GEMM operand formats only on
     * layers that run GEMM or CONV. */
    unsigned (*layer_op_classes)(void *ctx, int index);
    /* Since ABI 1.4 (read it only when struct_size covers it, e.g.
     * host->struct_size >= AMP_HOST_API_SIZE_1_4): for a precision plugin,
     * from its init and at most once. Loads the precision plugin `name`,
     * found as `[precision] plugin = name` finds it (a name, not a path:
     * "fp8", "mxfp8", "nvfp4", "bf16", ...), and runs its init with this
     * same host table: it reads its keys from this plugin's section (fp8's
     * format, margin, layer.<glob>, ...; they mean what they mean for it)
     * and reports through it. The calling plugin then calls the base's
     * functions for what it keeps and its own for what it replaces.
     * Returns the base, owned by the host and valid until the calling
     * plugin's fini returns (the host then finalises and unloads it); NULL
     * on failure, the reason recorded (return failure from init). A base
     * cannot take a base of its own. */
    const struct amp_policy_base *(*base_policy)(void *ctx, const char *name);
} amp_host_api;

/* The size of amp_host_api in ABI 1.4, which appended base_policy. */
#define AMP_HOST_API_SIZE_1_4 \
    (offsetof(amp_host_api, base_policy) + sizeof(((amp_host_api *)0)->base_policy))

/* ---------------------------------------------------------------- precision */

/* Since ABI 1.2: the scaled number formats a GEMM operand may be quantized
 * into (values are part of the ABI). AMP_FORMAT_DTYPE means "no scaled
 * format": the operand is rounded to compute[AMP_OP_GEMM] (or CONV) as
 * before. docs/fp8-formats.md defines each format bit for bit. */
typedef enum amp_format {
    AMP_FORMAT_DTYPE = 0,
    AMP_FORMAT_F8_E4M3 = 1, /* OCP E4M3FN: max 448, no inf */
    AMP_FORMAT_F8_E5M2 = 2, /* OCP E5M2: max 57344 */
    /* Since 1.3: NVFP4, FP4 E2M1 elements (max 6) in blocks of 16 with an
     * E4M3 block scale, and one FP32 scale per tensor from its own amax
     * (docs/nvfp4-formats.md); scaling NVFP4_1D or NVFP4_2D */
    AMP_FORMAT_NVFP4 = 3,
    AMP_FORMAT_COUNT
} amp_format;

/* How a scaled operand's scale is chosen (values are part of the ABI). */
typedef enum amp_scaling {
    /* one FP32 scale per tensor, from the amax history of the steps
     * before this one (Transformer Engine's DelayedScaling) */
    AMP_SCALING_DELAYED = 0,
    /* one FP32 scale per tensor, from this tensor's own amax, found
     * before it is quantized (Float8CurrentScaling) */
    AMP_SCALING_CURRENT = 1,
    /* one E8M0 scale per block of 32 values along the GEMM's reduction
     * dimension (OCP MX v1.0, MXFP8); no history, no scale_update */
    AMP_SCALING_MX32 = 2,
    /* Since 1.3, AMP_FORMAT_NVFP4 only: blocks of 1x16 along each GEMM's
     * reduction dimension (the operand is re-blocked for each GEMM it
     * feeds); no history, no scale_update */
    AMP_SCALING_NVFP4_1D = 3,
    /* Since 1.3, AMP_FORMAT_NVFP4 on the WEIGHT role only: 16x16 tiles, so
     * W and W^T quantize to the same values (one copy serves the forward
     * and the data gradient) */
    AMP_SCALING_NVFP4_2D = 4,
    AMP_SCALING_COUNT
} amp_scaling;

/* The operands of a layer's GEMMs, by role (values are part of the ABI).
 * The forward reads INPUT and WEIGHT; the backward's data GEMM reads
 * GRAD_OUTPUT and WEIGHT, its weight GEMM GRAD_OUTPUT and INPUT. */
typedef enum amp_gemm_role {
    AMP_ROLE_INPUT = 0,       /* the input activation X */
    AMP_ROLE_WEIGHT = 1,      /* the weight W (its working copy) */
    AMP_ROLE_GRAD_OUTPUT = 2, /* the gradient dY of the output */
    AMP_ROLE_COUNT
} amp_gemm_role;

/* The most amax values a delayed-scaling history may keep. */
#define AMP_AMAX_HISTORY_MAX 65536u

/* Since ABI 1.3: the bits of amp_layer_precision.operand_flags
 * (AMP_FORMAT_NVFP4 only; 0 for every other format). */
enum amp_operand_flag {
    /* the elements are rounded stochastically (unbiased: up with the
     * probability of the distance to the lower code), from a counter-based
     * generator keyed by (run seed, step, tensor, element) */
    AMP_OPERAND_STOCHASTIC = 1u << 0,
    /* INPUT and GRAD_OUTPUT, both or neither: the weight-gradient GEMM's
     * two operands go through the 16-point random Hadamard transform
     * (random signs from the run seed and the step) along its reduction
     * dimension before they are quantized; the GEMM's result is unchanged
     * up to the quantization */
    AMP_OPERAND_HADAMARD = 1u << 1
};

/* Since ABI 1.2: how one GEMM operand of a layer is quantized. */
typedef struct amp_operand_format {
    uint32_t format;      /* amp_format */
    uint32_t scaling;     /* amp_scaling (ignored for AMP_FORMAT_DTYPE) */
    uint32_t history_len; /* AMP_SCALING_DELAYED: amax values kept, 1..AMP_AMAX_HISTORY_MAX */
    uint32_t reserved;    /* 0 */
} amp_operand_format;

/* What a policy decides for one layer. The host sets struct_size and fills
 * every field with FP32 (and, since 1.2, every operand with
 * AMP_FORMAT_DTYPE) before calling `resolve`. A policy built against an
 * older minor writes only the fields its struct has. */
typedef struct amp_layer_precision {
    uint32_t struct_size;
    amp_dtype compute[AMP_OP_COUNT]; /* dtype each op class computes in       */
    amp_dtype activation;            /* dtype activations are stored in        */
    amp_dtype param;                 /* dtype of the working copy of weights  */
    /* Since ABI 1.2: the scaled format of each operand of the layer's GEMM
     * (and CONV) ops; write these only when struct_size covers them.
     * With a scaled format the GEMM accumulates in FP32, writes its output
     * in `activation`, and the weight's working copy is the format's codes
     * (1 byte per value) plus its scales; `param` stays the dtype of the
     * bias and of the rounding point of the weight's gradient. */
    amp_operand_format operand[AMP_ROLE_COUNT];
    /* Since ABI 1.3 (write them only when struct_size covers them; the
     * host presets 0): each operand's amp_operand_flag bits. */
    uint32_t operand_flags[AMP_ROLE_COUNT];
} amp_layer_precision;

/* The size of amp_layer_precision in ABI 1.0/1.1, and in 1.2. */
#define AMP_LAYER_PRECISION_SIZE_1_0 offsetof(amp_layer_precision, operand)
#define AMP_LAYER_PRECISION_SIZE_1_2 offsetof(amp_layer_precision, operand_flags)

/* Since ABI 1.2: what the host measured for one per-tensor scaled operand,
 * handed to scale_update. Delayed scaling: called once per optimizer step,
 * after the step (this step's amax already reduced across data-parallel
 * ranks, max) and before the next forward; the scale returned quantizes
 * the next step. Current scaling: called each time the tensor is
 * quantized, with `amax` that tensor's own, and the scale returned
 * quantizes it. */
typedef struct amp_scale_stats {
    uint32_t struct_size;
    const char *layer;        /* a name from host->layer_name */
    uint32_t role;            /* amp_gemm_role */
    uint32_t format;          /* amp_format */
    uint32_t scaling;         /* amp_scaling: DELAYED or CURRENT */
    int64_t step;             /* optimizer step index, 0-based */
    double format_max;        /* largest finite value of format (448, 57344) */
    double scale;             /* the scale in use: the one this step quantized with */
    double amax;              /* max |x| of this step (DELAYED) or of this tensor (CURRENT) */
    int64_t saturated;        /* values clamped to +-format_max this step */
    int64_t flushed;          /* nonzero values that became 0 this step */
    /* DELAYED: the amax history, newest first (history[0] == amax), of
     * history_count <= history_len values. CURRENT: amax only, count 1. */
    const double *history;
    uint32_t history_count;
    uint32_t history_len;
} amp_scale_stats;

typedef struct amp_precision_vtable {
    uint32_t struct_size;
    /* Reads the plugin's config section and builds its state. *self is owned
     * by the plugin and freed by fini. Required. */
    int (*init)(const amp_host_api *host, void **self);
    /* Frees self. Required. */
    void (*fini)(void *self);
    /* Decides the precision of one layer. `layer` is a name from
     * host->layer_name, or "loss" for the model-wide softmax/loss. Required. */
    int (*resolve)(void *self, const char *layer, amp_layer_precision *out);
    /* 1 when this policy needs a loss scaler (fp16), 0 otherwise.
     * NULL means 0. */
    int (*requires_scaler)(void *self);
    /* 1 to let FP32 GEMMs use TF32 tensor cores on the GPU. NULL means 0. */
    int (*allow_tf32)(void *self);
    /* Since ABI 1.2. The next per-tensor scale of a DELAYED or CURRENT
     * operand from the host's statistics. Must set a finite *scale > 0;
     * the host stops the run (exit 1, the plugin named) otherwise. NULL
     * means the host's default: scale = format_max / amax over the whole
     * history (DELAYED) or of the tensor (CURRENT), the previous scale
     * kept when that amax is 0 or not finite (a step's first scale is 1). */
    int (*scale_update)(void *self, const amp_scale_stats *stats, double *scale);
} amp_precision_vtable;

/* Since ABI 1.4: a precision policy another precision plugin builds on,
 * from host->base_policy. Host-owned, valid until the calling plugin's
 * fini returns; a later minor may append fields (check struct_size). */
typedef struct amp_policy_base {
    uint32_t struct_size;
    const char *name;    /* the base's entry name ("fp8") */
    const char *version; /* its entry version */
    /* The base's functions, each called with `self` below. init and fini
     * are NULL: the host calls them. Every other entry is set: where the
     * base leaves one out, the host's default stands in (requires_scaler
     * and allow_tf32 return 0; scale_update is the host's rule,
     * format_max / the amax history's max). So a plugin keeps an entry
     * with a one-line call and replaces it with its own function, and may
     * call the base's in its own (the base's scale, then changed). */
    const amp_precision_vtable *vtable;
    void *self;
} amp_policy_base;

/* -------------------------------------------------------------- loss scaler */

/* What the host measured this optimizer step, handed to `update`. Values are
 * of the unscaled gradients unless said otherwise. */
typedef struct amp_scaler_stats {
    uint32_t struct_size;
    int64_t step;            /* optimizer step index, 0-based, skipped steps included */
    double scale;            /* the scale this step's backward used */
    int32_t found_inf;       /* 1 when any gradient element is inf or NaN */
    int64_t nonfinite;       /* how many gradient elements were inf or NaN */
    int64_t grad_count;      /* gradient elements checked */
    double grad_norm;        /* global L2 norm (inf/NaN when found_inf) */
    double grad_max_abs;     /* max |g| over the finite elements */
    int64_t underflow;       /* nonzero values flushed to zero by 16-bit rounding this step */
    int64_t overflow;        /* finite values turned into inf by 16-bit rounding this step */
    int64_t rounded;         /* nonzero values rounded into 16 bits this step */
    double dtype_max;        /* largest finite value of the narrowest gradient dtype (65504 for fp16) */
} amp_scaler_stats;

typedef struct amp_scaler_vtable {
    uint32_t struct_size;
    /* Reads the plugin's config section (validating every value) and builds
     * its state. Required. */
    int (*init)(const amp_host_api *host, void **self);
    void (*fini)(void *self); /* Required. */
    /* The scale the next backward multiplies the loss by. Must be finite and
     * > 0; the host stops the run otherwise. Required. */
    double (*get_scale)(void *self);
    /* Called once per optimizer step, after unscale + non-finite check.
     * Sets *skip to 1 when the optimizer step must be skipped (the host
     * always skips when stats->found_inf, whatever *skip says) and moves to
     * the next scale. Required. */
    int (*update)(void *self, const amp_scaler_stats *stats, int *skip);
    /* Serialises the state into buf (cap bytes) and sets *len. With buf NULL
     * only *len is set (the size needed, at most AMP_SCALER_STATE_MAX). The
     * host then calls it with cap = that size, and *len must come back the
     * same (the host refuses any other length). The bytes are the plugin's
     * own format; the host stores them beside the plugin's name and version. */
    int (*state_save)(void *self, void *buf, size_t cap, size_t *len);
    /* Restores a state written by state_save of the same plugin. Must reject
     * (host->error + non-zero) a buffer of the wrong size or content. */
    int (*state_load)(void *self, const void *buf, size_t len);
} amp_scaler_vtable;

/* ---------------------------------------------------------------- the entry */

typedef struct amp_plugin_info {
    uint32_t abi_major;    /* AMP_PLUGIN_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;    /* AMP_PLUGIN_ABI_MINOR the plugin was built with */
    uint32_t struct_size;  /* sizeof(amp_plugin_info) the plugin was built with */
    uint32_t kind;         /* amp_plugin_kind */
    const char *name;      /* short name used in INI files: [a-z0-9_]{1,AMP_PLUGIN_NAME_MAX} */
    const char *version;   /* the plugin's own version, e.g. "1.0.0" (printable ASCII,
                              at most AMP_PLUGIN_VERSION_MAX characters) */
    const char *description;
    /* amp_precision_vtable for PRECISION, amp_scaler_vtable for SCALER;
     * static storage, never freed. */
    const void *vtable;
    /* Since ABI 1.1. The INI keys the plugin reads with their defaults, one
     * line, e.g. "init_scale=65536 headroom=4"; `amptrain plugins -v` shows
     * it. NULL when the plugin has no keys. Static storage. */
    const char *keys;
} amp_plugin_info;

/* The size of amp_plugin_info in ABI 1.0: the least struct_size a plugin of
 * this major may report. */
#define AMP_PLUGIN_INFO_SIZE_1_0 (offsetof(amp_plugin_info, vtable) + sizeof(const void *))

/* Declares the entry in a plugin source file:
 *   AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "dynamic", "1.0.0", "...", &vt);
 *   AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_SCALER, "mine", "0.1.0", "...",
 *                               "init_scale=65536", &vt);
 */
#define AMP_PLUGIN_DEFINE_WITH_KEYS(kind_, name_, version_, desc_, keys_, vtable_) \
    AMP_PLUGIN_EXTERN_C AMP_PLUGIN_EXPORT const amp_plugin_info amp_plugin_entry;  \
    const amp_plugin_info amp_plugin_entry = {AMP_PLUGIN_ABI_MAJOR,                \
                                               AMP_PLUGIN_ABI_MINOR,                \
                                               (uint32_t)sizeof(amp_plugin_info),   \
                                               (uint32_t)(kind_), (name_), (version_), \
                                               (desc_), (vtable_), (keys_)}
#define AMP_PLUGIN_DEFINE(kind_, name_, version_, desc_, vtable_) \
    AMP_PLUGIN_DEFINE_WITH_KEYS(kind_, name_, version_, desc_, NULL, vtable_)

#ifdef __cplusplus
}
#endif
#endif
