#include "settings.h"

#include "plugins/loader.h"
#include "model.h"
#include "keys/text_defaults.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define AT(field) AMP_SETTING_AT(amp_settings, field)
#define BIG (INT64_MAX / 2) /* no bound a run can reach */

/* [run] name becomes the folder runs/<name> and the arm's label in ab: a
 * plain file name, never "..", a path or a hidden name. */
static int check_name(const void *dst, amp_config *cfg, char *err, size_t errlen) {
    const char *name = ((const amp_settings *)dst)->name;
    size_t n = strlen(name);
    int ok = n >= 1 && n <= 64 && name[0] != '.';
    for (size_t i = 0; ok && i < n; i++) {
        char c = name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-' || c == '+';
    }
    if (ok) return 0;
    const char *where = NULL;
    amp_config_lookup(cfg, "run", "name", &where);
    snprintf(err, errlen,
             "%s: [run] name = '%s': use 1 to 64 letters, digits and . _ - + not starting with '.' "
             "(it names the output folder runs/<name>)",
             where ? where : amp_config_path(cfg), name);
    return -1;
}

/* The cosine decays from lr down to min_lr. */
static int check_min_lr(const void *dst, amp_config *cfg, char *err, size_t errlen) {
    const amp_settings *s = dst;
    if (s->min_lr <= s->lr) return 0;
    const char *where = NULL;
    amp_config_lookup(cfg, "optim", "min_lr", &where);
    snprintf(err, errlen, "%s: [optim] min_lr = %g is above lr = %g; the cosine decays "
             "from lr down to min_lr", where ? where : amp_config_path(cfg), s->min_lr, s->lr);
    return -1;
}

static const char *const devices[] = {"auto", "cpu", "cuda", NULL};
static const char *const optims[] = {"sgd", "adamw", NULL};
static const char *const schedules[] = {"constant", "cosine", NULL};
static const char *const grad_dtypes[] = {"f32", "bf16", NULL};
static const char *const shard_kinds[] = {"none", "optimizer", "gradients", NULL};
static const char *const token_formats[] = {"auto", "bin", "llmc", "npy", NULL}; /* amp_token_format */

/* Every core key, in the order a run reads them (and config.ini lists them).
 * [model] name's choices are the registry's (filled in by the reader). */
static const amp_setting core_settings[] = {
    {"run", "name", AMP_SETTING_STRING, "run", AT(name), .flags = AMP_SETTING_AB_FREE,
     .check = check_name,
     .doc = "run label; also the default output folder `runs/<name>`: 1 to 64 letters, digits and "
            "`. _ - +`, not starting with `.`"},
    {"run", "seed", AMP_SETTING_INT, "0", 0, INT64_MAX, AT(seed), .flags = AMP_SETTING_AB_FREE,
     .doc = "seeds init, data order and synthetic data"},
    {"run", "device", AMP_SETTING_CHOICE, "auto", .choices = devices, AT(device),
     .doc = "`auto` (CUDA when built with it and a GPU is visible, else CPU), `cpu`, `cuda` (an error "
            "without a GPU, which says why: `cudaGetDeviceCount`'s error and the driver's and "
            "runtime's CUDA versions)"},
    {"run", "deterministic", AMP_SETTING_BOOL, "false", AT(deterministic),
     .doc = "`true`: only algorithms cuDNN reports as deterministic for the convolutions (the same "
            "run gives the same bits on the GPU); `false`: cuDNN's first (fastest) choice. The CPU is "
            "deterministic either way"},
    {"run", "gemm_path", AMP_SETTING_CHOICE, "auto", .choices = amp_gemm_path_names, AT(gemm_path),
     AMP_SETTING_GIVEN(amp_settings, gemm_path_given),
     .doc = "CPU GEMMs with 16-bit operands: `auto` (16-bit operands where the CPU has a native "
            "16-bit GEMM kernel; each GEMM shape runs on the fastest candidate, measured once and "
            "cached), `widened` (FP32 arrays of the rounded values into FP32 GEMMs), `native` "
            "(native 16-bit kernels only; an error on a CPU without one). Wins over "
            "`AMPTRAIN_GEMM_PATH`; see docs/performance.md"},
    {"run", "tensorboard", AMP_SETTING_BOOL, "false", AT(tensorboard), .flags = AMP_SETTING_AB_FREE,
     .doc = "`true`: also write the metrics as TensorBoard event files in `<out>/tensorboard/` "
            "(scalars `train/*`, `eval/*`, per scaled operand `underflow/<layer>/<role>` and "
            "`saturation/<layer>/<role>`); may be turned on or off on a resume; see "
            "docs/outputs.md"},

    {"data", "dataset", AMP_SETTING_CHOICE, "fashion_mnist", .choices_of = amp_data_kind_names,
     AT(dataset),
     .doc = "`fashion_mnist`, `tiny` (synthetic), `text` (characters of a text file, for the GPT) or "
            "`tokens` (token id files: nanoGPT `.bin`, llm.c shards, `.npy`; see docs/datasets.md)"},
    {"data", "batch_size", AMP_SETTING_INT, "128", 1, 65536, AT(batch_size),
     .doc = "rows per micro-batch, on each rank: a step takes `batch_size × accumulate × ranks` "
            "rows, the global batch (docs/data-parallel.md)"},
    {"data", "shuffle", AMP_SETTING_BOOL, "true", AT(shuffle),
     .doc = "reshuffle each epoch (deterministic from the seed)"},
    {"data", "path", AMP_SETTING_STRING, "/usr/share/datasets/fashion-mnist", AT(path),
     .when = "dataset=fashion_mnist|text", .alt_when = "dataset=text",
     .alt_def = "data/" AMP_TEXT_DEFAULT_FILE, .path = AMP_SETTING_PATH,
     AMP_SETTING_GIVEN(amp_settings, path_given),
     .doc = "IDX `.gz` files (Debian `dataset-fashion-mnist`); for `text` a regular file of at most "
            "1 GiB (the default is the copy shipped with amptrain, see "
            "docs/gpt-shakespeare.md)"},
    {"data", "train_limit", AMP_SETTING_INT, "0", 0, INT64_MAX, AT(train_limit),
     .when = "dataset=fashion_mnist", .doc = "use the first N training examples (`0`: all)"},
    {"data", "test_limit", AMP_SETTING_INT, "0", 0, INT64_MAX, AT(test_limit),
     .when = "dataset=fashion_mnist", .doc = "use the first N test examples (`0`: all)"},
    {"data", "eval_iters", AMP_SETTING_INT, "200", 1, 1 << 20, AT(eval_iters),
     .when = "dataset=text|tokens", .doc = "validation batches per evaluation (a fixed set of windows)"},
    {"data", "train_tokens", AMP_SETTING_STRING, "", AT(train_tokens), .when = "dataset=tokens",
     .path = AMP_SETTING_PATH, .shown_default = "none: required",
     .doc = "the training token ids: a file, or a glob of shards (sorted by name)"},
    {"data", "val_tokens", AMP_SETTING_STRING, "", AT(val_tokens), .when = "dataset=tokens",
     .path = AMP_SETTING_PATH, .shown_default = "none: required",
     .doc = "the validation token ids: a file, or a glob of shards"},
    {"data", "token_format", AMP_SETTING_CHOICE, "auto", .choices = token_formats, AT(token_format),
     .when = "dataset=tokens",
     .doc = "`auto` (llm.c's or NumPy's magic, else a name ending in `.bin` is raw uint16), `bin` "
            "(nanoGPT's raw uint16), `llmc` (llm.c shards) or `npy`"},
    {"data", "tokenizer", AMP_SETTING_STRING, "none", AT(tokenizer), .when = "dataset=text|tokens",
     .path = AMP_SETTING_PATH_UNLESS_DEFAULT,
     .doc = "a byte-level BPE tokenizer (`tokenizer.json`, GPT-2's `vocab.json`, or a folder; see "
            "`amptrain tokenize`): for tokens, the one the ids come from; for text, the corpus is "
            "encoded with it instead of one id per character (the last tenth of the ids "
            "validate). `vocab_size` defaults to its vocabulary, and `sample` encodes `--prompt` "
            "and decodes with it. `none`: no tokenizer"},
    {"data", "vocab_size", AMP_SETTING_INT, "0", 0, INT32_MAX, AT(vocab_size),
     .when = "dataset=text|tokens", .shown_default = "none: required for tokens without a tokenizer",
     .doc = "token ids are below it (every id is checked before training); the model's vocabulary. "
            "`0`: the tokenizer's vocabulary (tokens: an error without one; text without one: the "
            "corpus's distinct bytes, and only `0`); with a tokenizer it may be larger (padded, "
            "as llm.c pads 50257 to 50304), not smaller"},
    /* the model's context is the data's window (nanoGPT's block_size) */
    {"model", "block_size", AMP_SETTING_INT, AMP_SETTING_TEXT(AMP_TEXT_DEFAULT_BLOCK), 1, 1 << 16, AT(block_size),
     .when = "data.dataset=text|tokens",
     .doc = "the length of the text or token windows; the same key is the GPT's context (below)"},
    {"data", "train_size", AMP_SETTING_INT, "8192", 1, 1 << 24, AT(tiny_train), .when = "dataset=tiny",
     .doc = "training examples"},
    {"data", "test_size", AMP_SETTING_INT, "2048", 1, 1 << 24, AT(tiny_test), .when = "dataset=tiny",
     .doc = "test examples"},
    {"data", "features", AMP_SETTING_INT, "64", 1, 1 << 16, AT(tiny_features), .when = "dataset=tiny",
     .doc = "inputs per example"},
    {"data", "classes", AMP_SETTING_INT, "10", 2, 1024, AT(tiny_classes), .when = "dataset=tiny",
     .doc = "labels"},
    {"data", "input_scale", AMP_SETTING_DOUBLE, "1", .dmin = 1e-30, .dmax = 1e30, AT(input_scale),
     .when = "dataset=tiny", .doc = "multiplies every input"},

    {"model", "name", AMP_SETTING_CHOICE, NULL, .choices_of = amp_model_names, AT(model_index),
     .doc = "the model (the registry's first is the default; see docs/models.md); "
            "its other `[model]` keys are its own, below"},
    {"model", "init", AMP_SETTING_STRING, "default", AT(init), .path = AMP_SETTING_PATH_UNLESS_DEFAULT,
     .doc = "`default` (the model's PyTorch-style init from the seed; gpt: GPT-2's N(0, 0.02)), a "
            "`.safetensors` path holding exactly the model's parameter table (PyTorch names and "
            "shapes, F32, BF16 or F16; a missing or extra tensor is an error naming it; nanoGPT's "
            "`transformer.h.0.attn.c_attn.weight` is `[3C, C]`; gpt: the tied head under "
            "`transformer.wte.weight`, `lm_head.weight` or both when equal; a torch.compile "
            "`_orig_mod.` prefix is stripped and the `attn.bias` mask buffers are skipped), or a "
            "Hugging Face model folder (`config.json` with `model_type` gpt2, which sets the "
            "[model] keys, and `model.safetensors` or a sharded `model.safetensors.index.json`; "
            "see [models.md](models.md#bring-your-checkpoint))"},

    {"optim", "name", AMP_SETTING_CHOICE, "sgd", .choices = optims, AT(optim),
     .doc = "`sgd` (torch.optim.SGD) or `adamw` (torch.optim.AdamW)"},
    {"optim", "lr", AMP_SETTING_DOUBLE, "0.05", .dmin = 1e-12, .dmax = 1e6, AT(lr),
     .alt_when = "name=adamw", .alt_def = "0.001", .doc = "learning rate"},
    {"optim", "weight_decay", AMP_SETTING_DOUBLE, "0", .dmin = 0.0, .dmax = 1.0, AT(weight_decay),
     .alt_when = "name=adamw", .alt_def = "0.01", .doc = "L2 for sgd, decoupled for adamw"},
    {"optim", "grad_clip", AMP_SETTING_DOUBLE, "0", .dmin = 0.0, .dmax = 1e12, AT(grad_clip),
     .doc = "max global L2 norm of the unscaled gradients (`0`: off)"},
    {"optim", "momentum", AMP_SETTING_DOUBLE, "0.9", .dmin = 0.0, .dmax = 0.999999, AT(momentum),
     .when = "name=sgd", .doc = "SGD momentum"},
    {"optim", "beta1", AMP_SETTING_DOUBLE, "0.9", .dmin = 0.0, .dmax = 0.999999, AT(beta1),
     .when = "name=adamw", .doc = "AdamW's first-moment decay"},
    {"optim", "beta2", AMP_SETTING_DOUBLE, "0.999", .dmin = 0.0, .dmax = 0.999999999, AT(beta2),
     .when = "name=adamw", .doc = "AdamW's second-moment decay"},
    {"optim", "eps", AMP_SETTING_DOUBLE, "1e-8", .dmin = 1e-30, .dmax = 1.0, AT(eps),
     .when = "name=adamw", .doc = "AdamW's epsilon"},
    {"optim", "schedule", AMP_SETTING_CHOICE, "constant", .choices = schedules, AT(schedule),
     .doc = "`constant` or `cosine`: nanoGPT's `get_lr`, from `lr` after the warm-up to `min_lr` at "
            "the run's last step (its `lr_decay_iters` is the run's steps: `train.steps`, else epochs "
            "× steps per epoch)"},
    {"optim", "warmup_steps", AMP_SETTING_INT, "0", 0, BIG, AT(warmup_steps),
     .doc = "linear warm-up as nanoGPT's `get_lr`: `lr·(it+1)/(warmup_steps+1)` for applied step `it` "
            "< `warmup_steps` (a skipped step does not advance `it`)"},
    {"optim", "min_lr", AMP_SETTING_DOUBLE, "0", .dmin = 0.0, .dmax = 1e6, AT(min_lr),
     .when = "schedule=cosine", .check = check_min_lr,
     .doc = "the LR the cosine ends at (nanoGPT's `min_lr`); at most `lr`"},

    {"train", "epochs", AMP_SETTING_INT, "1", 1, 100000, AT(epochs),
     .doc = "epochs, used when `steps` is 0"},
    {"train", "steps", AMP_SETTING_INT, "0", 0, BIG, AT(steps),
     .doc = "optimizer steps; overrides `epochs` when set"},
    {"train", "accumulate", AMP_SETTING_INT, "1", 1, 4096, AT(accumulate),
     .doc = "micro-batches per optimizer step"},
    {"train", "log_every", AMP_SETTING_INT, "50", 1, BIG, AT(log_every), .flags = AMP_SETTING_AB_FREE,
     .doc = "a metrics line every N steps (`1` = every step)"},
    {"train", "loss_weight", AMP_SETTING_DOUBLE, "1", .dmin = 1e-30, .dmax = 1e30, AT(loss_weight),
     .doc = "multiplies the loss before backward (the tiny task uses 2^-20)"},
    {"train", "eval_every", AMP_SETTING_INT, "0", 0, BIG, AT(eval_every),
     .doc = "evaluate every N steps; `0` = at the end of every epoch"},
    {"train", "checkpoint_every", AMP_SETTING_INT, "0", 0, BIG, AT(checkpoint_every),
     .doc = "write a checkpoint every N steps (`0`: off; a signal writes one anyway)"},
    {"train", "checkpoint_minutes", AMP_SETTING_DOUBLE, "10", .dmin = 0.0, .dmax = 1e7,
     AT(checkpoint_minutes),
     .doc = "also write a checkpoint once this many minutes passed since the last one (or the "
            "start), so a crash or `kill -9` loses at most that much; `0`: off. Rank 0's clock "
            "decides for every rank"},
    {"train", "keep", AMP_SETTING_INT, "3", 1, 1000000, AT(keep),
     .doc = "checkpoints kept; older ones are deleted"},

    {"precision", "plugin", AMP_SETTING_STRING, "fp32", AT(precision_plugin),
     .path = AMP_SETTING_PLUGIN_SPEC, .flags = AMP_SETTING_AB_FREE_SECTION,
     .doc = "a precision plugin's name or a path to a `.so` (relative to the INI file's folder, "
            "or with `--set` to the working directory); the "
            "section's other keys are the plugin's"},
    /* empty is the default written back into a run's config.ini: no choice made */
    {"scaler", "plugin", AMP_SETTING_STRING, "", AT(scaler_plugin), .path = AMP_SETTING_PLUGIN_SPEC,
     .flags = AMP_SETTING_AB_FREE_SECTION,
     .shown_default = "`dynamic` for policies that need a scaler, else `none`",
     .doc = "a scaler plugin's name or path; the section's other keys are the plugin's"},

    {"dist", "grad_dtype", AMP_SETTING_CHOICE, "f32", .choices = grad_dtypes, AT(dist_grad_bf16),
     .doc = "what the gradients travel as between ranks (`bf16` is counted as a rounding point)"},
    {"dist", "shard", AMP_SETTING_CHOICE, "none", .choices = shard_kinds, AT(dist_shard),
     .doc = "`optimizer` (ZeRO-1): each rank keeps 1/N of the FP32 master weights and "
            "optimizer moments, receives its 1/N of the summed gradients and gathers the "
            "updated weights in their working dtype; `gradients` (ZeRO-2): also keeps only its "
            "1/N of the gradients, each bucket's in a buffer it holds only until the bucket is "
            "summed (`grad_dtype = f32` or `bf16`, over MPI or NCCL; with `accumulate` > 1 "
            "the whole local gradients until the last micro-batch; see docs/data-parallel.md)"},
    {"dist", "bucket_kb", AMP_SETTING_INT, "1024", 1, 1 << 21, AT(dist_bucket_kb),
     .doc = "target size of a gradient bucket (KiB of f32 gradients)"},
    {"dist", "check_every", AMP_SETTING_INT, "0", 0, BIG, AT(dist_check_every),
     .doc = "compare weight, optimizer and scaler checksums across ranks every N steps (`0`: off; "
            "every 10 under `AMPTRAIN_LOG=debug`)"},
    {"dist", "timeout", AMP_SETTING_DOUBLE, "300", .dmin = 1.0, .dmax = 1e7, AT(dist_timeout),
     .doc = "seconds a rank waits for the others (at the start too: in `MPI_Init` and for the "
            "slowest rank to set up) before it stops them all"},
    {"dist", "sync_batchnorm", AMP_SETTING_BOOL, "true", AT(dist_sync_batchnorm),
     .doc = "batch norm's statistics over the global batch, summed across the ranks in forward "
            "and backward (as PyTorch's `SyncBatchNorm`), so N ranks x B rows train as one "
            "process x N·B; `false`: each rank's own rows (as DDP without SyncBatchNorm)"},
    {.key = NULL}};

/* The other models' own [model] keys (amp_model_ops.settings). */
static void explain_other_models(amp_config *cfg, const char *chosen) {
    char because[128];
    snprintf(because, sizeof because, "name=%s", chosen);
    for (const char *const *n = amp_model_names(); *n; n++) {
        const amp_model_ops *ops = amp_model_find(*n);
        if (ops && strcmp(*n, chosen) != 0 && ops->settings)
            amp_settings_table_explain(ops->settings, cfg, because, *n);
    }
}

const amp_setting *amp_settings_core_table(void) { return core_settings; }

int amp_settings_read(amp_settings *s, amp_config *cfg, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    if (amp_settings_table_read(core_settings, s, cfg, err, errlen) != 0) return -1;
    s->model = amp_model_names()[s->model_index];
    explain_other_models(cfg, s->model);
    if (!s->scaler_plugin[0]) s->scaler_plugin = NULL; /* no choice made */
    return 0;
}

/* May the arms of an A/B study differ in (section, key)? */
int amp_settings_ab_free(const char *section, const char *key) {
    for (const amp_setting *r = core_settings; r->key; r++)
        if (strcmp(r->section, section) == 0 &&
            ((r->flags & AMP_SETTING_AB_FREE_SECTION) ||
             ((r->flags & AMP_SETTING_AB_FREE) && strcmp(r->key, key) == 0)))
            return 1;
    return 0;
}
