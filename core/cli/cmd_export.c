/* `amptrain export RUN_DIR --hf OUT_DIR`: a GPT run's weights as a Hugging
 * Face GPT-2 folder (config.json + model.safetensors, F32) that
 * transformers' GPT2LMHeadModel.from_pretrained loads, or a Llama folder
 * (LlamaForCausalLM) from a names = llama run. The architecture
 * comes from the run's config.ini, the weights from its weights.safetensors
 * through the gpt2 name map (io/name_map.c: the Conv1D weights transposed
 * back to [in, out]); the tied head is stored once, as transformers does.
 * Exit 0, 1 when writing failed, 2 on usage or a run it cannot export. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "io/config.h"
#include "io/json.h"
#include "io/name_map.h"
#include "util/out_file.h"
#include "io/safetensors.h"

#define MAX_TENSORS 1024

static const char export_usage[] =
    "usage: amptrain export RUN_DIR --hf OUT_DIR\n"
    "  --hf OUT_DIR   write the GPT run in RUN_DIR (its config.ini and weights) as a\n"
    "                 Hugging Face folder (config.json, model.safetensors): GPT-2, or\n"
    "                 Llama for a names = llama run (docs/models.md)\n";

typedef struct export_args {
    const char *run, *hf;
} export_args;

static int export_opt(void *user, int opt, const char *arg) {
    export_args *a = user;
    switch (opt) {
    case 'h':
        fputs(export_usage, stdout);
        return 1;
    case 'f':
        a->hf = arg;
        return 0;
    case 1:
        if (a->run) {
            fprintf(stderr, "amptrain export: one RUN_DIR only\n%s", export_usage);
            return -1;
        }
        a->run = arg;
        return 0;
    }
    return -1;
}

/* The GPT keys of the run's config.ini, each as it resolved. */
typedef struct gpt_arch {
    long n_layer, n_head, n_embd, block_size;
    const char *activation;
    int llama;                              /* names = llama: a Llama folder */
    char n_kv_head[32], intermediate[32], norm_eps[48], rope_theta[48], tie[16]; /* as resolved */
} gpt_arch;

static int is_true(const char *v) {
    return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 ||
                 strcmp(v, "on") == 0);
}

/* A names = llama run: the keys of a LlamaForCausalLM (rmsnorm, rope,
 * swiglu, no biases), or -1 with err naming the key that is not. */
static int read_llama(amp_config *cfg, const char *path, gpt_arch *a, char *err, size_t errlen) {
    static const char *const need[][2] = {
        {"norm", "rmsnorm"}, {"position", "rope"}, {"mlp", "swiglu"}, {"bias", "false"}};
    for (int i = 0; i < 4; i++) {
        const char *v = amp_config_lookup(cfg, "model", need[i][0], NULL);
        if (!v || (i == 3 ? is_true(v) : strcmp(v, need[i][1]) != 0)) {
            snprintf(err, errlen, "%s: [model] %s = %s; a Llama folder needs %s = %s", path,
                     need[i][0], v ? v : "(none)", need[i][0], need[i][1]);
            return -1;
        }
    }
    char *out[] = {a->n_kv_head, a->intermediate, a->norm_eps, a->rope_theta, a->tie};
    size_t cap[] = {sizeof a->n_kv_head, sizeof a->intermediate, sizeof a->norm_eps,
                    sizeof a->rope_theta, sizeof a->tie};
    const char *keys[] = {"n_kv_head", "intermediate", "norm_eps", "rope_theta", "tie_embeddings"};
    for (int i = 0; i < 5; i++) { /* copied: the config is freed before the folder is written */
        const char *v = amp_config_lookup(cfg, "model", keys[i], NULL);
        if (!v) {
            snprintf(err, errlen, "%s: no [model] %s", path, keys[i]);
            return -1;
        }
        snprintf(out[i], cap[i], "%s", v);
    }
    a->llama = 1;
    return 0;
}

static int read_arch(amp_config *cfg, const char *path, gpt_arch *a, char *err, size_t errlen) {
    const char *name = amp_config_lookup(cfg, "model", "name", NULL);
    const char *bias = amp_config_lookup(cfg, "model", "bias", NULL);
    const char *act = amp_config_lookup(cfg, "model", "activation", NULL);
    const char *keys[] = {"n_layer", "n_head", "n_embd", "block_size"};
    long *out[] = {&a->n_layer, &a->n_head, &a->n_embd, &a->block_size};
    const char *names = amp_config_lookup(cfg, "model", "names", NULL);
    if (!name || strcmp(name, "gpt") != 0) {
        snprintf(err, errlen, "%s: a [model] name = %s run; --hf writes GPT-2 folders, of gpt runs",
                 path, name ? name : "(none)");
        return -1;
    }
    a->llama = 0;
    if (names && strcmp(names, "llama") == 0) {
        if (read_llama(cfg, path, a, err, errlen) != 0) return -1;
    } else if (!is_true(bias)) {
        snprintf(err, errlen, "%s: [model] bias = %s; GPT-2 has biases in every Linear and "
                 "LayerNorm, so only a bias = true run exports", path, bias ? bias : "(none)");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        const char *v = amp_config_lookup(cfg, "model", keys[i], NULL);
        if (!v) {
            snprintf(err, errlen, "%s: no [model] %s", path, keys[i]);
            return -1;
        }
        *out[i] = strtol(v, NULL, 10);
    }
    /* a run from before the key ran the tanh form (core/config/implied_keys.c) */
    a->activation = !act || strcmp(act, "gelu_tanh") == 0 ? "gelu_new" : "gelu";
    return 0;
}

/* LlamaConfig's keys, every one amptrain computes with. */
static void write_llama(FILE *f, const gpt_arch *a, int64_t vocab) {
    long kv = strtol(a->n_kv_head, NULL, 10), inter = strtol(a->intermediate, NULL, 10); /* 0: defaults */
    fprintf(f, "{\n  \"model_type\": \"llama\",\n  \"architectures\": [\"LlamaForCausalLM\"],\n");
    fprintf(f, "  \"num_hidden_layers\": %ld,\n  \"num_attention_heads\": %ld,\n"
               "  \"num_key_value_heads\": %ld,\n  \"hidden_size\": %ld,\n"
               "  \"intermediate_size\": %ld,\n  \"max_position_embeddings\": %ld,\n"
               "  \"vocab_size\": %lld,\n  \"rms_norm_eps\": %s,\n  \"rope_theta\": %s,\n"
               "  \"rope_scaling\": null,\n  \"tie_word_embeddings\": %s,\n"
               "  \"hidden_act\": \"silu\",\n  \"attention_bias\": false,\n  \"mlp_bias\": false,\n"
               "  \"attention_dropout\": 0.0,\n  \"pretraining_tp\": 1,\n"
               "  \"bos_token_id\": null,\n  \"eos_token_id\": null\n}\n",
            a->n_layer, a->n_head, kv ? kv : a->n_head, a->n_embd, inter ? inter : 4 * a->n_embd,
            a->block_size, (long long)vocab, a->norm_eps, a->rope_theta,
            is_true(a->tie) ? "true" : "false");
}

static int write_config(const char *dir, const gpt_arch *a, int64_t vocab, char *err,
                        size_t errlen) {
    amp_out_file o;
    if (amp_out_open(&o, dir, "config.json", err, errlen) != 0) return -1;
    FILE *f = o.f;
    if (a->llama) {
        write_llama(f, a, vocab);
        return amp_out_commit(&o, err, errlen);
    }
    fprintf(f, "{\n  \"model_type\": \"gpt2\",\n  \"architectures\": [\"GPT2LMHeadModel\"],\n");
    fprintf(f, "  \"n_layer\": %ld,\n  \"n_head\": %ld,\n  \"n_embd\": %ld,\n", a->n_layer,
            a->n_head, a->n_embd);
    fprintf(f, "  \"n_positions\": %ld,\n  \"vocab_size\": %lld,\n", a->block_size,
            (long long)vocab);
    fprintf(f, "  \"activation_function\": ");
    amp_json_str(f, a->activation);
    fprintf(f, ",\n  \"layer_norm_epsilon\": 1e-05,\n  \"n_inner\": null,\n"
               "  \"tie_word_embeddings\": true,\n  \"scale_attn_weights\": true,\n"
               "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
               /* the text data's vocabulary has no such tokens (GPT2Config's default
                * is GPT-2's 50256, outside a small vocabulary) */
               "  \"bos_token_id\": null,\n  \"eos_token_id\": null\n}\n");
    return amp_out_commit(&o, err, errlen);
}

/* Every tensor of the run's weights under its gpt2 name, transposed where
 * the map says; 0, or -1 with err. */
static int write_weights(const char *dir, amp_safetensors *st, int llama, int64_t *vocab,
                         char *err, size_t errlen) {
    const amp_name_map *map = amp_name_map_find(llama ? "llama" : "gpt2");
    int n = amp_safetensors_count(st), rc = 0;
    if (n > MAX_TENSORS) {
        snprintf(err, errlen, "more than %d tensors", MAX_TENSORS);
        return -1;
    }
    amp_st_tensor *t = calloc((size_t)n + 1, sizeof *t);
    char(*names)[160] = calloc((size_t)n + 1, sizeof *names);
    if (!t || !names) rc = -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        const char *dtype;
        const int64_t *shape;
        int ndim, tr = 0;
        amp_safetensors_info(st, i, &dtype, &ndim, &shape);
        amp_name_map_to_file(map, amp_safetensors_name(st, i), names[i], sizeof names[i], &tr);
        size_t numel = 1;
        for (int k = 0; k < ndim; k++) numel *= (size_t)shape[k];
        float *src = malloc(numel * sizeof *src), *dst = tr ? malloc(numel * sizeof *dst) : src;
        t[i] = (amp_st_tensor){names[i], dst, ndim, {0}};
        for (int k = 0; k < ndim && k < 4; k++) t[i].shape[k] = shape[k];
        if (!src || !dst || ndim > 4 ||
            amp_safetensors_get_f32(st, amp_safetensors_name(st, i), ndim, shape, src, err,
                                    errlen) != 0) {
            if (!err[0]) snprintf(err, errlen, "out of host memory");
            if (dst != src) free(src);
            rc = -1;
            break;
        }
        if (tr && ndim == 2) { /* [out, in] -> [in, out] */
            for (int64_t r = 0; r < shape[0]; r++)
                for (int64_t c = 0; c < shape[1]; c++) dst[c * shape[0] + r] = src[r * shape[1] + c];
            t[i].shape[0] = shape[1];
            t[i].shape[1] = shape[0];
            free(src);
        }
        if (strcmp(names[i], llama ? "model.embed_tokens.weight" : "transformer.wte.weight") == 0)
            *vocab = shape[0];
    }
    static const char *const meta[] = {"format", "pt", NULL};
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (rc == 0) rc = amp_safetensors_write(path, t, n, meta, err, errlen);
    for (int i = 0; t && i < n; i++) free((void *)t[i].data);
    free(t);
    free(names);
    return rc;
}

int amp_cmd_export(int argc, char **argv) {
    static const struct option opts[] = {{"hf", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    export_args a = {NULL, NULL};
    int rc = amp_cli_parse("export", argc, argv, "h", opts, export_opt, &a, export_usage);
    if (rc == 0 && (!a.run || !a.hf)) {
        fprintf(stderr, "amptrain export: %s\n%s", a.run ? "--hf OUT_DIR is required" : "no RUN_DIR",
                export_usage);
        rc = -1;
    }
    if (rc != 0) return rc > 0 ? 0 : 2;
    char path[PATH_MAX + 32], err[1024] = "";
    snprintf(path, sizeof path, "%s/config.ini", a.run);
    amp_config *cfg = amp_config_load(path, err, sizeof err);
    gpt_arch arch;
    if (!cfg || read_arch(cfg, path, &arch, err, sizeof err) != 0) {
        fprintf(stderr, "amptrain export: %s\n", err);
        amp_config_free(cfg);
        return 2;
    }
    amp_config_free(cfg);
    snprintf(path, sizeof path, "%s/weights.safetensors", a.run);
    amp_safetensors *st = NULL;
    if (amp_safetensors_open(&st, path, err, sizeof err) != 0) {
        fprintf(stderr, "amptrain export: %s\n", err);
        return 2;
    }
    int64_t vocab = 0;
    rc = amp_mkdir_p(a.hf, err, sizeof err) != 0 || write_weights(a.hf, st, arch.llama, &vocab, err, sizeof err) != 0 ||
         write_config(a.hf, &arch, vocab, err, sizeof err) != 0;
    amp_safetensors_close(st);
    if (rc) {
        fprintf(stderr, "amptrain export: %s\n", err);
        return 1;
    }
    printf("amptrain export: %s -> %s (config.json, model.safetensors: %s, %ld layers, %ld "
           "wide, vocabulary %lld)\n", a.run, a.hf, arch.llama ? "Llama" : "GPT-2", arch.n_layer,
           arch.n_embd, (long long)vocab);
    return 0;
}
