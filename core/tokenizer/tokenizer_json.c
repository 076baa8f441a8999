/* Reading a Hugging Face tokenizer.json: model BPE with its vocab and merges
 * (strings "a b" or pairs), the added tokens, a ByteLevel pre-tokenizer
 * alone or after Split patterns (Llama 3's shape), the ByteLevel decoder.
 * Anything that would change the ids and that amptrain does not implement
 * (a normalizer, another model or pre-tokenizer, dropout, byte fallback,
 * truncation) is refused by name rather than ignored. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "tokenizer/tokenizer_internal.h"


static const char *type_of(json_t *o) {
    const char *s = json_string_value(json_object_get(o, "type"));
    return s ? s : "(no type)";
}

static int refuse(const char *name, char *err, size_t errlen, const char *what, const char *value) {
    amp_set_err(err, errlen, "%s: %s %s is not supported (amptrain reads byte-level BPE: model BPE, "
                "no normalizer, pre-tokenizer ByteLevel or Sequence[Split..., ByteLevel], decoder "
                "ByteLevel)", name, what, value);
    return -1;
}

static int oom(const char *name, char *err, size_t errlen) {
    amp_set_err(err, errlen, "%s: out of memory", name);
    return -1;
}

static int is_true(json_t *o, const char *key) { return json_is_true(json_object_get(o, key)); }

static int add_step(amp_tokenizer *t, const char *name, const char *pattern, int prefix,
                    char *err, size_t errlen) {
    if (t->nsteps == (int)(sizeof t->steps / sizeof t->steps[0]))
        return refuse(name, err, errlen, "a pre-tokenizer Sequence of", "more than 8 steps");
    amp_pretok_step *st = &t->steps[t->nsteps];
    st->add_prefix_space = prefix;
    st->code = NULL;
    if (pattern) {
        char why[512];
        st->code = amp_split_compile(pattern, why, sizeof why);
        if (!st->code) {
            amp_set_err(err, errlen, "%s: %s", name, why);
            return -1;
        }
    }
    t->nsteps++;
    return 0;
}

static int pre_tokenizer(amp_tokenizer *t, const char *name, json_t *pre, char *err, size_t errlen) {
    if (!json_is_object(pre)) return refuse(name, err, errlen, "pre_tokenizer", "null");
    json_t *list = json_object_get(pre, "pretokenizers");
    size_t n = strcmp(type_of(pre), "Sequence") == 0 ? json_array_size(list) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *p = strcmp(type_of(pre), "Sequence") == 0 ? json_array_get(list, i) : pre;
        const char *type = type_of(p);
        int last = i + 1 == n;
        if (strcmp(type, "ByteLevel") == 0 && last) {
            json_t *re = json_object_get(p, "use_regex");
            if (add_step(t, name, re && !json_is_true(re) ? NULL : amp_gpt2_split_pattern,
                         is_true(p, "add_prefix_space"), err, errlen))
                return -1;
        } else if (strcmp(type, "Split") == 0 && !last) {
            const char *re = json_string_value(json_object_get(json_object_get(p, "pattern"), "Regex"));
            const char *behavior = json_string_value(json_object_get(p, "behavior"));
            if (!re) return refuse(name, err, errlen, "a Split pattern", "other than {\"Regex\": ...}");
            if (!behavior || strcmp(behavior, "Isolated") != 0)
                return refuse(name, err, errlen, "Split behavior", behavior ? behavior : "(none)");
            if (is_true(p, "invert")) return refuse(name, err, errlen, "Split", "invert: true");
            if (add_step(t, name, re, 0, err, errlen)) return -1;
        } else {
            return refuse(name, err, errlen, last ? "pre-tokenizer (last step)" : "pre-tokenizer",
                          type);
        }
    }
    if (n == 0) return refuse(name, err, errlen, "pre_tokenizer", "an empty Sequence");
    return 0;
}

static int added_tokens(amp_tokenizer *t, const char *name, json_t *list, char *err, size_t errlen) {
    size_t n = json_array_size(list);
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!t->added) return oom(name, err, errlen);
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(list, i);
        const char *s = json_string_value(json_object_get(a, "content"));
        json_t *id = json_object_get(a, "id");
        if (!s || !*s || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= AMP_TOKENIZER_MAX_ID) {
            amp_set_err(err, errlen, "%s: added_tokens[%zu] needs a non-empty \"content\" and an "
                        "\"id\" in [0, 2^24)", name, i);
            return -1;
        }
        static const char *const flags[] = {"single_word", "lstrip", "rstrip"};
        for (int f = 0; f < 3; f++)
            if (is_true(a, flags[f])) {
                amp_set_err(err, errlen, "%s: added_tokens[%zu] (\"%s\"): %s: true is not "
                            "supported", name, i, s, flags[f]);
                return -1;
            }
        amp_added_token *d = &t->added[t->nadded++];
        d->content = strdup(s);
        d->len = strlen(s);
        d->id = (uint32_t)json_integer_value(id);
        d->special = is_true(a, "special");
        d->normalized = is_true(a, "normalized");
        t->added_first[(unsigned char)s[0]] = 1;
        if (!d->content) return oom(name, err, errlen);
    }
    return 0;
}

static int model(amp_tokenizer *t, const char *name, json_t *m, char *err, size_t errlen) {
    if (!json_is_object(m) || strcmp(type_of(m), "BPE") != 0)
        return refuse(name, err, errlen, "model type", json_is_object(m) ? type_of(m) : "(none)");
    json_t *drop = json_object_get(m, "dropout");
    if (drop && !json_is_null(drop) && json_number_value(drop) != 0)
        return refuse(name, err, errlen, "BPE", "dropout");
    if (is_true(m, "byte_fallback")) return refuse(name, err, errlen, "BPE", "byte_fallback: true");
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const char *s = json_string_value(json_object_get(m, affixes[i]));
        if (s && *s) return refuse(name, err, errlen, "BPE", affixes[i]);
    }
    t->ignore_merges = is_true(m, "ignore_merges");
    json_t *vocab = json_object_get(m, "vocab"), *v;
    const char *key;
    if (!json_is_object(vocab)) {
        amp_set_err(err, errlen, "%s: model.vocab is not an object", name);
        return -1;
    }
    json_object_foreach(vocab, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id >= AMP_TOKENIZER_MAX_ID) {
            amp_set_err(err, errlen, "%s: model.vocab[\"%s\"] is not an id in [0, 2^24)", name, key);
            return -1;
        }
        if (amp_tokenizer_add_vocab(t, key, strlen(key), (uint32_t)id) != 0)
            return oom(name, err, errlen);
    }
    json_t *merges = json_object_get(m, "merges");
    if (!json_is_array(merges)) {
        amp_set_err(err, errlen, "%s: model.merges is not an array", name);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(merges); i++) {
        json_t *e = json_array_get(merges, i);
        const char *a = NULL, *b = NULL;
        size_t alen = 0, blen = 0;
        if (json_is_string(e)) { /* "a b": the older form */
            a = json_string_value(e);
            const char *sp = strchr(a, ' ');
            if (sp && !strchr(sp + 1, ' ')) {
                alen = (size_t)(sp - a);
                b = sp + 1;
                blen = strlen(b);
            }
        } else if (json_array_size(e) == 2 && json_is_string(json_array_get(e, 0)) &&
                   json_is_string(json_array_get(e, 1))) {
            a = json_string_value(json_array_get(e, 0));
            b = json_string_value(json_array_get(e, 1));
            alen = strlen(a);
            blen = strlen(b);
        }
        if (!b || !alen || !blen) {
            amp_set_err(err, errlen, "%s: model.merges[%zu] is not a pair of tokens", name, i);
            return -1;
        }
        if (amp_tokenizer_add_merge(t, name, a, alen, b, blen, (uint32_t)i, err, errlen)) return -1;
    }
    return 0;
}

static int check_rest(json_t *root, const char *name, char *err, size_t errlen) {
    json_t *norm = json_object_get(root, "normalizer");
    if (norm && !json_is_null(norm)) return refuse(name, err, errlen, "normalizer", type_of(norm));
    json_t *dec = json_object_get(root, "decoder");
    if (!json_is_object(dec) || strcmp(type_of(dec), "ByteLevel") != 0)
        return refuse(name, err, errlen, "decoder", json_is_object(dec) ? type_of(dec) : "null");
    /* A post-processor only adds tokens when asked to (amptrain encodes as
     * add_special_tokens=False) or moves offsets. */
    json_t *post = json_object_get(root, "post_processor");
    if (post && !json_is_null(post) && strcmp(type_of(post), "ByteLevel") != 0 &&
        strcmp(type_of(post), "TemplateProcessing") != 0)
        return refuse(name, err, errlen, "post_processor", type_of(post));
    static const char *const batch[] = {"truncation", "padding"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(root, batch[i]);
        if (v && !json_is_null(v)) return refuse(name, err, errlen, batch[i], "(not null)");
    }
    return 0;
}

amp_tokenizer *amp_tokenizer_from_json(const char *name, const char *json, size_t len, char *err,
                                       size_t errlen) {
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        if (root)
            amp_set_err(err, errlen, "%s: not a tokenizer.json (the top level is not an object)", name);
        else
            amp_set_err(err, errlen, "%s:%d:%d: %s", name, je.line, je.column, je.text);
        json_decref(root);
        return NULL;
    }
    amp_tokenizer *t = amp_tokenizer_new();
    int bad = !t;
    if (bad) amp_set_err(err, errlen, "%s: out of memory", name);
    bad = bad || check_rest(root, name, err, errlen) ||
          model(t, name, json_object_get(root, "model"), err, errlen) ||
          added_tokens(t, name, json_object_get(root, "added_tokens"), err, errlen) ||
          pre_tokenizer(t, name, json_object_get(root, "pre_tokenizer"), err, errlen) ||
          amp_tokenizer_finish(t, name, err, errlen);
    json_decref(root);
    if (bad) {
        amp_tokenizer_free(t);
        return NULL;
    }
    return t;
}
