/* The config of a run being resumed (resume_config.h). */
#include "resume_config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint_store.h"

amp_conf_entry *amp_conf_parse(char *text, size_t *n) {
    size_t cap = 64;
    amp_conf_entry *v = malloc(cap * sizeof *v);
    *n = 0;
    if (!v) return NULL;
    const char *section = "";
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (line[0] == '[') {
            char *close = strchr(line, ']');
            if (close) *close = '\0';
            section = line + 1;
        } else if (line[0] != ';' && line[0] != '\0') {
            char *eq = strstr(line, " = ");
            if (eq) {
                *eq = '\0';
                char *value = eq + 3, *origin = NULL;
                for (char *p = strstr(value, "  ; "); p; p = strstr(p + 1, "  ; ")) origin = p;
                if (origin) {
                    *origin = '\0';
                    origin += 4;
                }
                if (*n == cap) {
                    amp_conf_entry *q = realloc(v, 2 * cap * sizeof *v);
                    if (!q) {
                        free(v);
                        return NULL;
                    }
                    v = q;
                    cap *= 2;
                }
                v[(*n)++] = (amp_conf_entry){section, line, value, origin ? origin : ""};
            }
        }
        line = next;
    }
    return v;
}

/* The file the run's config came from, as the stored config's first line
 * names it ("; amptrain resolved configuration (defaults included) from
 * PATH"), so messages and the new config.ini say the same. */
static void stored_label(const char *text, const char *fallback, char *out, size_t outlen) {
    static const char head[] = "; amptrain resolved configuration (defaults included) from ";
    snprintf(out, outlen, "%s", fallback);
    if (strncmp(text, head, sizeof head - 1) != 0) return;
    const char *p = text + sizeof head - 1, *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0 && len < outlen) snprintf(out, outlen, "%.*s", (int)len, p);
}

/* The config from a checkpoint's stored text: every entry but the defaults
 * (they resolve again), set with its origin. */
static amp_config *config_from_text(const char *stored, size_t stored_len, const char *ckpath,
                                    char *err, size_t errlen) {
    char *text = malloc(stored_len + 1);
    if (!text) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    memcpy(text, stored, stored_len);
    text[stored_len] = '\0';
    char label[PATH_MAX + 64];
    stored_label(text, ckpath, label, sizeof label);
    size_t n = 0;
    amp_conf_entry *v = amp_conf_parse(text, &n);
    amp_config *cfg = v ? amp_config_new_empty(label) : NULL;
    if (!cfg) snprintf(err, errlen, "out of host memory");
    for (size_t i = 0; cfg && i < n; i++) {
        if (strcmp(v[i].origin, "default") == 0) continue;
        size_t need = strlen(v[i].section) + strlen(v[i].key) + strlen(v[i].value) + 3;
        char *as = malloc(need);
        char why[512] = "";
        int bad = !as || snprintf(as, need, "%s.%s=%s", v[i].section, v[i].key, v[i].value) < 0 ||
                  amp_config_set_from(cfg, as, v[i].origin[0] ? v[i].origin : ckpath, why,
                                      sizeof why) != 0;
        free(as);
        if (bad) {
            snprintf(err, errlen, "%s: its stored config does not read back ([%s] %s): %s", ckpath,
                     v[i].section, v[i].key, why[0] ? why : "out of host memory");
            amp_config_free(cfg);
            cfg = NULL;
        }
    }
    free(v);
    free(text);
    return cfg;
}

amp_config *amp_resume_config_load(const char *dir, int *code, char *err, size_t errlen) {
    char ckdir[PATH_MAX + 16], path[PATH_MAX + 32];
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", dir);
    int64_t *steps = NULL;
    size_t n = 0;
    *code = 1;
    if (amp_ckpt_store_list(ckdir, &steps, &n, err, errlen) != 0) return NULL;
    amp_config *cfg = NULL;
    char why[512] = "";
    size_t tried = 0;
    for (size_t i = 0; i < n && !cfg; i++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        amp_checkpoint ck;
        amp_ckpt_store_path(path, sizeof path, ckdir, steps[i]);
        int lr = amp_ckpt_store_load(path, steps[i], &buf, &len, &ck, why, sizeof why);
        if (lr == AMP_CKPT_GONE) continue;
        tried++;
        if (lr != 0) continue; /* damaged: the resume warns about it; an older one's config */
        if (ck.config_len == 0) {
            snprintf(why, sizeof why, "%s holds no config", path);
        } else {
            cfg = config_from_text(ck.config, ck.config_len, path, err, errlen);
            if (!cfg) {
                free(buf);
                free(steps);
                return NULL;
            }
        }
        free(buf);
    }
    free(steps);
    if (cfg) return cfg;
    if (tried == 0) {
        *code = 2;
        snprintf(err, errlen,
                 "--resume %s: no checkpoint in %s (ckpt-<step>.amp) to take the run's config "
                 "from; give the output folder of a run that was stopped or had [train] "
                 "checkpoint_every set",
                 dir, ckdir);
    } else {
        snprintf(err, errlen, "--resume %s: no checkpoint in %s loads (%zu tried; the last: %s)",
                 dir, ckdir, tried, why);
    }
    return NULL;
}

int amp_resume_key_free(const char *section, const char *key) {
    static const char *const keys[][2] = {{"run", "name"},        {"run", "device"},
                                          {"run", "tensorboard"},
                                          {"train", "log_every"}, {"train", "eval_every"},
                                          {"train", "checkpoint_every"}, {"train", "checkpoint_minutes"},
                                          {"train", "keep"},
                                          {"dist", "check_every"}, {"dist", "timeout"},
                                          {"dist", "shard"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(section, keys[i][0]) == 0 && strcmp(key, keys[i][1]) == 0) return 1;
    return 0;
}

int amp_resume_set_allowed(amp_config *stored, const char *assignment, char *err, size_t errlen) {
    const char *dot = strchr(assignment, '.'), *eq = strchr(assignment, '=');
    if (!dot || !eq || dot > eq) return 0; /* malformed: amp_config_set says how */
    char section[128], key[256];
    snprintf(section, sizeof section, "%.*s", (int)(dot - assignment), assignment);
    snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
    /* steps: to run longer; the batch split: checked against the global
     * batch when the number of ranks changes (session_ckpt.c) */
    if (amp_resume_key_free(section, key) || (strcmp(section, "train") == 0 &&
        (strcmp(key, "steps") == 0 || strcmp(key, "accumulate") == 0)) ||
        (strcmp(section, "data") == 0 && strcmp(key, "batch_size") == 0))
        return 0;
    /* the value the run has: no change (a default the run took is absent) */
    const char *was = amp_config_lookup(stored, section, key, NULL);
    if (was && strcmp(was, eq + 1) == 0) return 0;
    snprintf(err, errlen,
             "--set %s: cannot change [%s] %s on a resume: the run trained with %s%s%s and "
             "continues with it; a resume may change [train] steps, log_every, eval_every, "
             "checkpoint_every, checkpoint_minutes, keep, [run] name, device, tensorboard and [dist] "
             "check_every, timeout, shard (start a new run to change anything else)",
             assignment, section, key, was ? "'" : "its default", was ? was : "", was ? "'" : "");
    return -1;
}

/* s as one shell word: as it is when every byte is plain, else in single
 * quotes (a quote inside as '\''). */
static size_t shell_word(char *out, size_t outlen, const char *s) {
    int plain = s[0] != '\0';
    for (const char *p = s; *p; p++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+=:,@%", *p))
            plain = 0;
    if (plain) return (size_t)snprintf(out, outlen, "%s", s);
    size_t k = 0;
    if (k + 1 < outlen) out[k++] = '\'';
    for (const char *p = s; *p && k + 5 < outlen; p++) {
        if (*p == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *p;
        }
    }
    if (k + 1 < outlen) out[k++] = '\'';
    out[k < outlen ? k : outlen - 1] = '\0';
    return k;
}

void amp_resume_command(char *out, size_t outlen, int world, const char *dir) {
    char word[3 * PATH_MAX];
    shell_word(word, sizeof word, dir);
    if (world > 1)
        snprintf(out, outlen, "mpirun -np %d amptrain train --resume %s", world, word);
    else
        snprintf(out, outlen, "amptrain train --resume %s", word);
}
