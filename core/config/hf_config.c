#include "hf_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/file.h"
#include "io/json_read.h"
#include "util/log.h"
#include "keys/settings_table.h"

typedef enum hf_kind {
    HK_META,    /* names, token ids, the init's range: no number of the model changes */
    HK_INT,     /* a positive integer: the [model] key `to` */
    HK_ACT,     /* activation_function -> [model] activation */
    HK_NUM,     /* a number that must be `num` (what the model computes) */
    HK_BOOL,    /* a boolean that must be `num` (0 or 1) */
    HK_INNER,   /* the MLP's width: null or 4 * n_embd */
    HK_DROPOUT, /* training-time dropout: amptrain trains without it */
    HK_DBL,     /* a number: the [model] key `to` */
    HK_TIE,     /* a boolean: the [model] key `to` (true/false) */
    HK_SILU,    /* hidden_act: "silu" only (SwiGLU's) */
    HK_NULL,    /* must be null (rope_scaling: no scaling implemented) */
    HK_ROPE,    /* rope_parameters {rope_type "default", rope_theta}: [model] rope_theta */
    HK_HEADDIM, /* null or hidden_size / num_attention_heads */
} hf_kind;

typedef struct hf_key {
    const char *name;
    hf_kind kind;
    const char *to;
    double num;
} hf_key;

/* metadata every transformers config writes: no number of the model changes */
static const hf_key common_keys[] = {
    {"architectures", HK_META, NULL, 0},
    {"transformers_version", HK_META, NULL, 0},
    {"torch_dtype", HK_META, NULL, 0},
    {"dtype", HK_META, NULL, 0},
    {"_name_or_path", HK_META, NULL, 0},
    {"bos_token_id", HK_META, NULL, 0},
    {"eos_token_id", HK_META, NULL, 0},
    {"pad_token_id", HK_META, NULL, 0},
    {"initializer_range", HK_META, NULL, 0},
    {"use_cache", HK_META, NULL, 0},
    {NULL, HK_META, NULL, 0}};

/* transformers' GPT2Config, every key it writes (with common_keys) */
static const hf_key gpt2_keys[] = {
    {"model_type", HK_META, NULL, 0},
    {"n_layer", HK_INT, "n_layer", 0},
    {"n_head", HK_INT, "n_head", 0},
    {"n_embd", HK_INT, "n_embd", 0},
    {"n_positions", HK_INT, "block_size", 0},
    {"n_ctx", HK_INT, "block_size", 0}, /* older files: the same number as n_positions */
    {"activation_function", HK_ACT, "activation", 0},
    {"layer_norm_epsilon", HK_NUM, NULL, 1e-5},
    {"tie_word_embeddings", HK_BOOL, NULL, 1},
    {"scale_attn_weights", HK_BOOL, NULL, 1},
    {"scale_attn_by_inverse_layer_idx", HK_BOOL, NULL, 0},
    {"reorder_and_upcast_attn", HK_BOOL, NULL, 0},
    {"add_cross_attention", HK_BOOL, NULL, 0},
    {"n_inner", HK_INNER, NULL, 0},
    {"resid_pdrop", HK_DROPOUT, NULL, 0},
    {"embd_pdrop", HK_DROPOUT, NULL, 0},
    {"attn_pdrop", HK_DROPOUT, NULL, 0},
    {"summary_first_dropout", HK_META, NULL, 0}, /* the double-heads model's head only */
    /* the vocabulary is the data's: transformer.wte.weight's shape checks it */
    {"vocab_size", HK_META, NULL, 0},
    {"summary_type", HK_META, NULL, 0},
    {"summary_use_proj", HK_META, NULL, 0},
    {"summary_activation", HK_META, NULL, 0},
    {"summary_proj_to_labels", HK_META, NULL, 0},
    {"task_specific_params", HK_META, NULL, 0},
    {"return_dict", HK_META, NULL, 0},
    {"output_hidden_states", HK_META, NULL, 0},
    {"output_attentions", HK_META, NULL, 0},
    {"id2label", HK_META, NULL, 0},
    {"label2id", HK_META, NULL, 0},
    {"tokenizer_class", HK_META, NULL, 0},
    {NULL, HK_META, NULL, 0}};

/* transformers' LlamaConfig (both the rope_theta/rope_scaling keys of
 * older files and v5's rope_parameters); block_size is
 * max_position_embeddings, the windows' length */
static const hf_key llama_keys[] = {
    {"model_type", HK_META, NULL, 0},
    {"hidden_size", HK_INT, "n_embd", 0},
    {"intermediate_size", HK_INT, "intermediate", 0},
    {"num_attention_heads", HK_INT, "n_head", 0},
    {"num_key_value_heads", HK_INT, "n_kv_head", 0},
    {"num_hidden_layers", HK_INT, "n_layer", 0},
    {"max_position_embeddings", HK_INT, "block_size", 0},
    {"rms_norm_eps", HK_DBL, "norm_eps", 0},
    {"rope_theta", HK_DBL, "rope_theta", 0},
    {"rope_parameters", HK_ROPE, "rope_theta", 0},
    {"rope_scaling", HK_NULL, NULL, 0},
    {"tie_word_embeddings", HK_TIE, "tie_embeddings", 0},
    {"hidden_act", HK_SILU, NULL, 0},
    {"attention_bias", HK_BOOL, NULL, 0},
    {"mlp_bias", HK_BOOL, NULL, 0},
    {"pretraining_tp", HK_NUM, NULL, 1},
    {"head_dim", HK_HEADDIM, NULL, 0},
    {"attention_dropout", HK_DROPOUT, NULL, 0},
    {"vocab_size", HK_META, NULL, 0},
    {NULL, HK_META, NULL, 0}};

typedef struct hf_family {
    const char *model_type;
    const hf_key *keys;
    const char *model; /* the [model] name */
    const char *fixed; /* [model] keys the family always has, "key=value;..." */
} hf_family;

static const hf_family families[] = {
    {"gpt2", gpt2_keys, "gpt", "bias=true"},
    {"llama", llama_keys, "gpt", "names=llama;norm=rmsnorm;position=rope;mlp=swiglu;bias=false"},
};

static const hf_family *family_of(const char *model_type) {
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (strcmp(families[i].model_type, model_type) == 0) return &families[i];
    return NULL;
}

static int add(amp_hf_keys *o, const char *key, const char *value, const char *from) {
    if (o->n == AMP_HF_MAX_KEYS) return -1;
    snprintf(o->key[o->n], sizeof o->key[0], "%s", key);
    snprintf(o->value[o->n], sizeof o->value[0], "%s", value);
    snprintf(o->from[o->n], sizeof o->from[0], "%s", from);
    o->n++;
    return 0;
}

/* An activation_function amptrain computes: its [model] activation. */
static const char *activation_of(const char *f) {
    if (strcmp(f, "gelu_new") == 0 || strcmp(f, "gelu_pytorch_tanh") == 0) return "gelu_tanh";
    return strcmp(f, "gelu") == 0 ? "gelu" : NULL;
}

static int one_key(const hf_key *k, const amp_jval *v, const amp_jval *root, const char *label,
                   amp_hf_keys *o, char *err, size_t errlen) {
    char buf[64];
    switch (k->kind) {
    case HK_META:
        return 0;
    case HK_INT:
        if (v->type != AMP_JNUM || v->num != floor(v->num) || v->num < 1 || v->num > 1 << 20) {
            amp_set_err(err, errlen, "%s: '%s' must be a positive integer", label, k->name);
            return -1;
        }
        snprintf(buf, sizeof buf, "%.0f", v->num);
        return add(o, k->to, buf, k->name);
    case HK_ACT: {
        const char *a = v->type == AMP_JSTR ? activation_of(v->str) : NULL;
        if (!a) {
            amp_set_err(err, errlen, "%s: activation_function %s%s%s is not one amptrain computes "
                        "(gelu_new, gelu_pytorch_tanh: the tanh form; gelu: the erf form)", label,
                        v->type == AMP_JSTR ? "'" : "", v->type == AMP_JSTR ? v->str : "(not a string)",
                        v->type == AMP_JSTR ? "'" : "");
            return -1;
        }
        return add(o, k->to, a, k->name);
    }
    case HK_NUM:
        if (v->type != AMP_JNUM || v->num != k->num) {
            amp_set_err(err, errlen, "%s: %s = %s%.9g: amptrain's %s computes with %g only", label,
                        k->name, v->type == AMP_JNUM ? "" : "(not a number) ",
                        v->type == AMP_JNUM ? v->num : 0.0, "gpt", k->num);
            return -1;
        }
        return 0;
    case HK_BOOL:
        if (v->type != AMP_JBOOL || v->b != (int)k->num) {
            amp_set_err(err, errlen, "%s: %s must be %s: amptrain's model has no other form", label,
                        k->name, k->num ? "true" : "false");
            return -1;
        }
        return 0;
    case HK_INNER: {
        const amp_jval *c = amp_json_get_type(root, "n_embd", AMP_JNUM);
        if (v->type == AMP_JNULL || (v->type == AMP_JNUM && c && v->num == 4 * c->num)) return 0;
        amp_set_err(err, errlen, "%s: n_inner must be null or 4 * n_embd: amptrain's MLP is 4 times "
                    "as wide as the model", label);
        return -1;
    }
    case HK_DBL:
        if (v->type != AMP_JNUM) {
            amp_set_err(err, errlen, "%s: '%s' must be a number", label, k->name);
            return -1;
        }
        snprintf(buf, sizeof buf, "%.17g", v->num);
        return add(o, k->to, buf, k->name);
    case HK_TIE:
        if (v->type != AMP_JBOOL) {
            amp_set_err(err, errlen, "%s: '%s' must be true or false", label, k->name);
            return -1;
        }
        return add(o, k->to, v->b ? "true" : "false", k->name);
    case HK_SILU:
        if (v->type != AMP_JSTR || strcmp(v->str, "silu") != 0) {
            amp_set_err(err, errlen, "%s: %s must be \"silu\": amptrain's SwiGLU computes no other",
                        label, k->name);
            return -1;
        }
        return 0;
    case HK_NULL:
        if (v->type != AMP_JNULL) {
            amp_set_err(err, errlen, "%s: %s is not null: amptrain implements no %s", label, k->name,
                        k->name);
            return -1;
        }
        return 0;
    case HK_ROPE: {
        const amp_jval *t = amp_json_get_type(v, "rope_type", AMP_JSTR);
        const amp_jval *th = amp_json_get_type(v, "rope_theta", AMP_JNUM);
        if (v->type != AMP_JOBJ || !t || strcmp(t->str, "default") != 0 || !th || v->n != 2) {
            amp_set_err(err, errlen, "%s: %s must be {\"rope_type\": \"default\", \"rope_theta\": "
                        "N}%s%s%s: amptrain implements no rope scaling", label, k->name,
                        t ? " (rope_type '" : "", t ? t->str : "", t ? "')" : "");
            return -1;
        }
        snprintf(buf, sizeof buf, "%.17g", th->num);
        return add(o, k->to, buf, "rope_parameters.rope_theta");
    }
    case HK_HEADDIM: {
        const amp_jval *c = amp_json_get_type(root, "hidden_size", AMP_JNUM);
        const amp_jval *h = amp_json_get_type(root, "num_attention_heads", AMP_JNUM);
        if (v->type == AMP_JNULL || (v->type == AMP_JNUM && c && h && v->num * h->num == c->num))
            return 0;
        amp_set_err(err, errlen, "%s: head_dim must be null or hidden_size / num_attention_heads",
                    label);
        return -1;
    }
    case HK_DROPOUT:
        if (v->type != AMP_JNUM && v->type != AMP_JNULL) {
            amp_set_err(err, errlen, "%s: '%s' must be a number", label, k->name);
            return -1;
        }
        if (v->type == AMP_JNUM && v->num != 0 && !o->dropout[0])
            snprintf(o->dropout, sizeof o->dropout, "%s", k->name);
        return 0;
    }
    return 0;
}

int amp_hf_config_parse(const char *text, size_t len, const char *label, amp_hf_keys *out,
                        char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (errlen) err[0] = '\0';
    amp_jval *root = amp_json_parse(text, len, label, 1, err, errlen);
    if (!root) return -1;
    int rc = -1;
    const amp_jval *mt = amp_json_get_type(root, "model_type", AMP_JSTR);
    const hf_family *fam = mt ? family_of(mt->str) : NULL;
    if (root->type != AMP_JOBJ) {
        amp_set_err(err, errlen, "%s: must be a JSON object", label);
    } else if (!mt) {
        amp_set_err(err, errlen, "%s: no \"model_type\" string; amptrain reads model_type %s",
                    label, amp_name_map_types());
    } else if (!fam || !amp_name_map_find(mt->str)) {
        amp_set_err(err, errlen, "%s: model_type '%s' is not one amptrain builds (it builds %s)",
                    label, mt->str, amp_name_map_types());
    } else {
        out->map = amp_name_map_find(mt->str);
        rc = 0;
        /* every key must be one of the family's: none is ignored unread */
        for (size_t i = 0; rc == 0 && i < root->n; i++) {
            const hf_key *k = fam->keys;
            while (k->name && strcmp(k->name, root->keys[i]) != 0) k++;
            if (!k->name)
                for (k = common_keys; k->name && strcmp(k->name, root->keys[i]) != 0;) k++;
            if (!k->name) {
                amp_set_err(err, errlen, "%s: key '%s' is not one amptrain's %s (model_type %s) can "
                            "express; remove it if it changes nothing", label, root->keys[i],
                            fam->model, fam->model_type);
                rc = -1;
            } else {
                rc = one_key(k, &root->items[i], root, label, out, err, errlen);
            }
        }
        char fixed[128];
        snprintf(fixed, sizeof fixed, "%s", fam->fixed);
        for (char *save = NULL, *kv = strtok_r(fixed, ";", &save); rc == 0 && kv;
             kv = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(kv, '=');
            *eq = '\0';
            rc = add(out, kv, eq + 1, "model_type");
        }
        if (rc == 0) rc = add(out, "name", fam->model, "model_type");
        if (rc != 0 && !err[0]) amp_set_err(err, errlen, "%s: too many keys", label);
    }
    amp_json_free(root);
    return rc;
}

/* [model] init as an absolute path when it names a folder; 0, 1 when it
 * names none, -1 with err. */
static int init_folder(amp_config *cfg, char *out, size_t cap, char *err, size_t errlen) {
    const char *where = NULL;
    const char *init = amp_config_lookup(cfg, "model", "init", &where);
    struct stat sb;
    if (!init || strcmp(init, "default") == 0) return 1;
    if (amp_settings_absolute_path(cfg, where, init, out, cap) != 0) {
        amp_set_err(err, errlen, "%s: [model] init = '%s': path too long", where, init);
        return -1;
    }
    if (stat(out, &sb) != 0) { /* said here: the model's keys would be read from nothing */
        amp_set_err(err, errlen, "%s: cannot read: %s", out, strerror(errno));
        return -1;
    }
    return S_ISDIR(sb.st_mode) ? 0 : 1;
}

static int read_folder(const char *folder, amp_hf_keys *k, char *label, size_t cap, char *err,
                       size_t errlen) {
    snprintf(label, cap, "%s/config.json", folder);
    struct stat sb;
    if (stat(label, &sb) != 0) {
        amp_set_err(err, errlen, "%s: no config.json: [model] init takes a .safetensors file or a "
                    "Hugging Face model folder (config.json and model.safetensors)", folder);
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    if (amp_file_read_all(label, AMP_JSON_FILE_MAX, &text, &len, err, errlen) != 0) return -1;
    int rc = amp_hf_config_parse(text, len, label, k, err, errlen);
    free(text);
    return rc;
}

int amp_hf_folder_map(const char *folder, const amp_name_map **map, char *err, size_t errlen) {
    amp_hf_keys k;
    char label[4200];
    if (read_folder(folder, &k, label, sizeof label, err, errlen) != 0) return -1;
    *map = k.map;
    return 0;
}

/* Two values of one INI key: the same when equal as integers, booleans or text. */
static int same_value(const char *a, const char *b) {
    static const char *const yes[] = {"true", "yes", "on", "1", NULL}, *const no[] = {"false", "no", "off", "0", NULL};
    char *ea, *eb;
    long long ia = strtoll(a, &ea, 10), ib = strtoll(b, &eb, 10);
    if (*a && *b && !*ea && !*eb) return ia == ib;
    double da = strtod(a, &ea), db = strtod(b, &eb); /* 1e-5 and 1e-05 */
    if (*a && *b && !*ea && !*eb) return da == db;
    int ta = -1, tb = -1;
    for (int i = 0; yes[i]; i++) {
        if (strcasecmp(a, yes[i]) == 0) ta = 1;
        if (strcasecmp(a, no[i]) == 0) ta = 0;
        if (strcasecmp(b, yes[i]) == 0) tb = 1;
        if (strcasecmp(b, no[i]) == 0) tb = 0;
    }
    if (ta >= 0 && tb >= 0) return ta == tb;
    return strcmp(a, b) == 0;
}

int amp_hf_config_apply(amp_config *cfg, char *err, size_t errlen) {
    char folder[4096], label[4200];
    int r = init_folder(cfg, folder, sizeof folder, err, errlen);
    if (r != 0) return r < 0 ? -1 : 0;
    amp_hf_keys k;
    if (read_folder(folder, &k, label, sizeof label, err, errlen) != 0) return -1;
    for (int i = 0; i < k.n; i++) {
        const char *where = NULL, *have = amp_config_lookup(cfg, "model", k.key[i], &where);
        char origin[4300], set[128];
        snprintf(origin, sizeof origin, "%s: %s", label, k.from[i]);
        if (have) {
            if (same_value(have, k.value[i])) continue;
            amp_set_err(err, errlen, "%s: [model] %s = %s disagrees with %s = %s%s", where,
                        k.key[i], have, origin,
                        k.value[i], strcmp(k.from[i], "model_type") == 0 ? " (its model)" : "");
            return -1;
        }
        snprintf(set, sizeof set, "model.%s=%s", k.key[i], k.value[i]);
        if (amp_config_set_from(cfg, set, origin, err, errlen) != 0) return -1;
    }
    if (k.dropout[0])
        amp_log(AMP_LOG_INFO, "%s: %s is not 0: amptrain trains without dropout", label, k.dropout);
    return 0;
}
