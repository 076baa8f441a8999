/* `amptrain new-plugin scaler|precision NAME [DIR]`: writes a folder holding a
 * plugin that builds against the installed SDK (find_package(amptrain)) and
 * loads as it is, with every ABI entry filled and commented, an INI file that
 * trains with it, and a baseline INI to A/B it against. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "amptrain/plugin.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/new_plugin_templates.h"
#include "process/self_exe.h"

/* ------------------------------------------------------------ templates */
/* @NAME@ is the plugin name, @KIND@ scaler or precision. */

/* Every NAME.c's comment goes on with how to build and train it. */
static const char build_note[] =
    " *\n"
    " * Build (from this folder; see README.md):\n"
    " *   cmake -S . -B build\n"
    " *   cmake --build build\n"
    " * Train: amptrain train @NAME@.ini\n"
    " *\n";

static const char scaler_title[] = "/* amp_scaler_@NAME@: a loss-scaler strategy for amptrain.\n";
static const char scaler_c[] =
    " * The contract every function below follows is in amptrain/plugin.h and\n"
    " * docs/writing-a-scaler.md. What this starting point does (replace it):\n"
    " * skip a step whose gradients hold inf/NaN and halve the scale; double it\n"
    " * after `interval` clean steps in a row. */\n"
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "\n"
    "#include \"amptrain/plugin.h\"\n"
    "\n"
    "/* state_save's record: magic, format version, scale, interval, clean. */\n"
    "#define STATE_MAGIC \"scl1\"\n"
    "#define STATE_SIZE (4 + 8 + 8 + 8)\n"
    "\n"
    "typedef struct state {\n"
    "    const amp_host_api *host; /* valid until fini: for host->error */\n"
    "    double scale;             /* what get_scale returns */\n"
    "    int64_t interval;         /* clean steps before the scale doubles */\n"
    "    int64_t clean;            /* clean steps in a row so far */\n"
    "} state;\n"
    "\n"
    "/* Reads and checks every key of the INI's [scaler] section (except\n"
    " * `plugin`, the host's), then builds the state. A getter returns 1 when\n"
    " * the key is set, 0 when absent (the default stays), -1 when malformed\n"
    " * (the host has the error). Keys nobody asks for are reported to the\n"
    " * user, so read them all before failing. *self belongs to the plugin\n"
    " * until fini. Required. */\n"
    "static int plugin_init(const amp_host_api *host, void **self)\n"
    "{\n"
    "    double init_scale = 65536.0;\n"
    "    int64_t interval = 100;\n"
    "    int bad = host->get_double(host->ctx, \"init_scale\", &init_scale) < 0;\n"
    "    bad |= host->get_int(host->ctx, \"interval\", &interval) < 0;\n"
    "    if (bad)\n"
    "        return 1;\n"
    "    if (!isfinite(init_scale) || !(init_scale > 0.0)) {\n"
    "        host->key_error(host->ctx, \"init_scale\", \"got %g; must be finite and > 0\", init_scale);\n"
    "        return 1;\n"
    "    }\n"
    "    if (interval < 1) {\n"
    "        host->key_error(host->ctx, \"interval\", \"got %lld; must be >= 1\", (long long)interval);\n"
    "        return 1;\n"
    "    }\n"
    "    state *s = calloc(1, sizeof *s);\n"
    "    if (!s) {\n"
    "        host->error(host->ctx, \"@NAME@: out of memory\");\n"
    "        return 1;\n"
    "    }\n"
    "    s->host = host;\n"
    "    s->scale = init_scale;\n"
    "    s->interval = interval;\n"
    "    *self = s;\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* Frees what init built. Required. */\n"
    "static void plugin_fini(void *self) { free(self); }\n"
    "\n"
    "/* The scale the next backward multiplies the loss by. It must be finite\n"
    " * and > 0: the host stops the run otherwise. Required. */\n"
    "static double plugin_get_scale(void *self) { return ((state *)self)->scale; }\n"
    "\n"
    "/* Called once per optimizer step, after the gradients were unscaled and\n"
    " * checked. stats (valid during the call only) holds this step's scale,\n"
    " * found_inf, grad_norm and grad_max_abs of the UNSCALED gradients, the\n"
    " * 16-bit underflow/overflow counts and dtype_max. Set *skip to 1 to skip\n"
    " * the optimizer step (the host skips on found_inf whatever *skip says),\n"
    " * then move to the next scale. Required. */\n"
    "static int plugin_update(void *self, const amp_scaler_stats *stats, int *skip)\n"
    "{\n"
    "    state *s = self;\n"
    "    if (stats->found_inf) {\n"
    "        *skip = 1;\n"
    "        s->scale *= 0.5;\n"
    "        s->clean = 0;\n"
    "        return 0;\n"
    "    }\n"
    "    *skip = 0;\n"
    "    if (++s->clean >= s->interval && isfinite(s->scale * 2.0)) {\n"
    "        s->scale *= 2.0;\n"
    "        s->clean = 0;\n"
    "    }\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* Writes the state for a checkpoint: with buf NULL only *len (the size\n"
    " * needed), else at most cap bytes into buf. The format is the plugin's\n"
    " * own; keep a magic and a version in it. Optional (NULL: the run cannot\n"
    " * be checkpointed with this scaler's state). */\n"
    "static int plugin_state_save(void *self, void *buf, size_t cap, size_t *len)\n"
    "{\n"
    "    state *s = self;\n"
    "    *len = STATE_SIZE;\n"
    "    if (!buf)\n"
    "        return 0;\n"
    "    if (cap < STATE_SIZE) {\n"
    "        s->host->error(s->host->ctx, \"@NAME@: state needs %d bytes, got %zu\", STATE_SIZE, cap);\n"
    "        return 1;\n"
    "    }\n"
    "    unsigned char *p = buf;\n"
    "    memcpy(p, STATE_MAGIC, 4);\n"
    "    memcpy(p + 4, &s->scale, 8);\n"
    "    memcpy(p + 12, &s->interval, 8);\n"
    "    memcpy(p + 20, &s->clean, 8);\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* Restores a state written by plugin_state_save. buf is the host's and\n"
    " * valid during the call only. Reject a wrong size or content with\n"
    " * host->error and a non-zero return. Optional. */\n"
    "static int plugin_state_load(void *self, const void *buf, size_t len)\n"
    "{\n"
    "    state *s = self;\n"
    "    const unsigned char *p = buf;\n"
    "    double scale;\n"
    "    int64_t interval, clean;\n"
    "    if (len != STATE_SIZE || memcmp(p, STATE_MAGIC, 4) != 0) {\n"
    "        s->host->error(s->host->ctx, \"@NAME@: not a @NAME@ state (%zu bytes)\", len);\n"
    "        return 1;\n"
    "    }\n"
    "    memcpy(&scale, p + 4, 8);\n"
    "    memcpy(&interval, p + 12, 8);\n"
    "    memcpy(&clean, p + 20, 8);\n"
    "    if (!isfinite(scale) || !(scale > 0.0) || interval < 1 || clean < 0 || clean >= interval) {\n"
    "        s->host->error(s->host->ctx, \"@NAME@: state holds invalid values\");\n"
    "        return 1;\n"
    "    }\n"
    "    s->scale = scale;\n"
    "    s->interval = interval;\n"
    "    s->clean = clean;\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* struct_size first: the host reads only the functions this size covers,\n"
    " * so the vtable can grow in later ABI minors. */\n"
    "static const amp_scaler_vtable vtable = {\n"
    "    (uint32_t)sizeof(amp_scaler_vtable), plugin_init,       plugin_fini,      plugin_get_scale,\n"
    "    plugin_update,                       plugin_state_save, plugin_state_load};\n"
    "\n"
    "/* The one exported symbol: kind, the name INI files use (must match the\n"
    " * file name amp_scaler_@NAME@.so), version, description, the INI keys\n"
    " * with their defaults (shown by `amptrain plugins -v`), the vtable. */\n"
    "AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_SCALER, \"@NAME@\", \"0.1.0\",\n"
    "                            \"halve on inf/NaN, double after `interval` clean steps\",\n"
    "                            \"init_scale=65536 interval=100\", &vtable);\n";

static const char precision_title[] = "/* amp_precision_@NAME@: a precision policy for amptrain.\n";
static const char precision_c[] =
    " * The contract every function below follows is in amptrain/plugin.h.\n"
    " * What this starting point does (replace it): PyTorch autocast in `dtype`\n"
    " * (f16 by default, or bf16): GEMM, conv, attention and pointwise ops,\n"
    " * activations and working weights in that dtype; softmax, loss, norms and\n"
    " * reductions in FP32. */\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "\n"
    "#include \"amptrain/plugin.h\"\n"
    "\n"
    "typedef struct policy {\n"
    "    amp_dtype low; /* the 16-bit dtype */\n"
    "} policy;\n"
    "\n"
    "/* Reads and checks every key of the INI's [precision] section (except\n"
    " * `plugin`, the host's), then builds the state. A getter returns 1 when\n"
    " * the key is set, 0 when absent, -1 when malformed (the host has the\n"
    " * error). host->layer_count/layer_name give the model's layers, to check\n"
    " * per-layer keys. *self belongs to the plugin until fini. Required. */\n"
    "static int plugin_init(const amp_host_api *host, void **self)\n"
    "{\n"
    "    const char *dtype = \"f16\";\n"
    "    if (host->get_string(host->ctx, \"dtype\", &dtype) < 0)\n"
    "        return 1;\n"
    "    amp_dtype low;\n"
    "    if (strcmp(dtype, \"f16\") == 0)\n"
    "        low = AMP_DTYPE_F16;\n"
    "    else if (strcmp(dtype, \"bf16\") == 0)\n"
    "        low = AMP_DTYPE_BF16;\n"
    "    else {\n"
    "        host->key_error(host->ctx, \"dtype\", \"got '%s'; must be f16 or bf16\", dtype);\n"
    "        return 1;\n"
    "    }\n"
    "    policy *p = calloc(1, sizeof *p);\n"
    "    if (!p) {\n"
    "        host->error(host->ctx, \"@NAME@: out of memory\");\n"
    "        return 1;\n"
    "    }\n"
    "    p->low = low;\n"
    "    *self = p;\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* Frees what init built. Required. */\n"
    "static void plugin_fini(void *self) { free(self); }\n"
    "\n"
    "/* Decides one layer's precision. `layer` is a name from host->layer_name\n"
    " * (\"fc1\", \"fc2\", ...) or \"loss\" for the softmax/loss. The host has set\n"
    " * every field of *out to FP32. Softmax and loss must stay FP32. Required. */\n"
    "static int plugin_resolve(void *self, const char *layer, amp_layer_precision *out)\n"
    "{\n"
    "    const policy *p = self;\n"
    "    if (strcmp(layer, \"loss\") == 0)\n"
    "        return 0; /* all FP32 */\n"
    "    out->compute[AMP_OP_GEMM] = p->low;\n"
    "    out->compute[AMP_OP_CONV] = p->low;\n"
    "    out->compute[AMP_OP_ATTENTION] = p->low;\n"
    "    out->compute[AMP_OP_POINTWISE] = p->low;\n"
    "    out->activation = p->low;\n"
    "    out->param = p->low;\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* 1 when the policy needs a loss scaler (FP16's narrow range), 0 if not.\n"
    " * The host then defaults [scaler] plugin to dynamic. Optional (NULL: 0). */\n"
    "static int plugin_requires_scaler(void *self)\n"
    "{\n"
    "    return ((const policy *)self)->low == AMP_DTYPE_F16;\n"
    "}\n"
    "\n"
    "/* 1 to let FP32 GEMMs use TF32 tensor cores on the GPU. Optional (NULL: 0). */\n"
    "static int plugin_allow_tf32(void *self)\n"
    "{\n"
    "    (void)self;\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* struct_size first: the host reads only the functions this size covers,\n"
    " * so the vtable can grow in later ABI minors. */\n"
    "static const amp_precision_vtable vtable = {(uint32_t)sizeof(amp_precision_vtable), plugin_init,\n"
    "                                            plugin_fini, plugin_resolve,\n"
    "                                            plugin_requires_scaler, plugin_allow_tf32, NULL};\n"
    "\n"
    "/* The one exported symbol: kind, the name INI files use (must match the\n"
    " * file name amp_precision_@NAME@.so), version, description, the INI keys\n"
    " * with their defaults (shown by `amptrain plugins -v`), the vtable. */\n"
    "AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_PRECISION, \"@NAME@\", \"0.1.0\",\n"
    "                            \"autocast in f16 or bf16, FP32 softmax/loss/norm/reduce\",\n"
    "                            \"dtype=f16\", &vtable);\n";

static const char cmakelists[] =
    "# Builds amp_@KIND@_@NAME@.so against the installed amptrain SDK.\n"
    "#   cmake -S . -B build [-DCMAKE_PREFIX_PATH=<amptrain install prefix>]\n"
    "#   cmake --build build\n"
    "cmake_minimum_required(VERSION 3.16)\n"
    "project(amp_@KIND@_@NAME@ LANGUAGES C)\n"
    "\n"
    "find_package(amptrain 0.1 REQUIRED)\n"
    "\n"
    "# amp_@KIND@_@NAME@.so in the build folder: no lib prefix, only the entry\n"
    "# symbol exported, never linked to amptrain.\n"
    "amptrain_add_plugin(@KIND@ @NAME@ @NAME@.c)\n"
    "target_compile_options(amp_@KIND@_@NAME@ PRIVATE -Wall -Wextra)\n";

/* The tiny FP16 task of configs/tiny_fp16_dynamic.ini: its gradients flush
 * to zero in FP16 without a loss scaler. */
static const char tiny_task[] =
    "[data]\n"
    "dataset = tiny\n"
    "train_size = 4096\n"
    "test_size = 1024\n"
    "features = 32\n"
    "classes = 10\n"
    "batch_size = 128\n"
    "\n"
    "[model]\n"
    "hidden = 64\n"
    "activation = relu\n"
    "\n"
    "[optim]\n"
    "name = adamw\n"
    "lr = 0.003\n"
    "weight_decay = 0\n"
    "eps = 1e-20\n"
    "\n"
    "[train]\n"
    "steps = 150\n"
    "loss_weight = 0.00000095367431640625\n"
    "log_every = 10\n"
    "\n";

static const char scaler_ini_head[] =
    "; amp_scaler_@NAME@ on the tiny FP16 task (gradients underflow without a\n"
    "; loss scaler). The plugin path is relative to this file.\n"
    "[run]\n"
    "name = @NAME@\n"
    "seed = 3\n"
    "\n";
static const char scaler_ini_tail[] =
    "[precision]\n"
    "plugin = fp16\n"
    "\n"
    "[scaler]\n"
    "plugin = build/amp_scaler_@NAME@.so\n"
    "init_scale = 65536\n"
    "interval = 25\n";

static const char precision_ini_head[] =
    "; amp_precision_@NAME@ on the tiny task. The plugin path is relative to\n"
    "; this file.\n"
    "[run]\n"
    "name = @NAME@\n"
    "seed = 3\n"
    "\n";
static const char precision_ini_tail[] =
    "[precision]\n"
    "plugin = build/amp_precision_@NAME@.so\n"
    "\n"
    "[scaler]\n"
    "plugin = dynamic\n"
    "growth_interval = 25\n";

static const char baseline_ini_head[] =
    "; The same task with the built-in fp16 policy and dynamic scaler, to A/B\n"
    "; @NAME@.ini against: amptrain ab baseline.ini @NAME@.ini --seeds 3\n"
    "[run]\n"
    "name = baseline\n"
    "seed = 3\n"
    "\n";
static const char baseline_ini_tail[] =
    "[precision]\n"
    "plugin = fp16\n"
    "\n"
    "[scaler]\n"
    "plugin = dynamic\n"
    "growth_interval = 25\n";

static const char readme[] =
    "# amp_@KIND@_@NAME@\n"
    "\n"
    "An amptrain @KIND@ plugin, written by `amptrain new-plugin @KIND@ @NAME@`.\n"
    "\n"
    "Build it (two commands):\n"
    "\n"
    "```sh\n"
    "cmake -S . -B build@PREFIX_ARG@\n"
    "cmake --build build\n"
    "```\n"
    "\n"
    "Train with it, then A/B it against baseline.ini (a built-in policy on the\n"
    "same task):\n"
    "\n"
    "```sh\n"
    "amptrain train @NAME@.ini --out runs/@NAME@\n"
    "amptrain ab baseline.ini @NAME@.ini --seeds 3 --out runs/ab\n"
    "```\n"
    "\n"
    "`@NAME@.ini` names the plugin by path (`plugin = build/amp_@KIND@_@NAME@.so`,\n"
    "relative to the INI file). To use it by name instead, put the build folder on\n"
    "`AMPTRAIN_PLUGIN_PATH` and write `plugin = @NAME@`. The file and its folder\n"
    "must not be writable by group or others (`chmod go-w`); the build sees to it.\n"
    "\n"
    "The ABI contract: `amptrain/plugin.h` and docs/writing-a-scaler.md in the\n"
    "amptrain sources.\n";

/* ------------------------------------------------------------- writing */

static int valid_name(const char *s) {
    if (!s[0] || strlen(s) > AMP_PLUGIN_NAME_MAX) return 0; /* the loader's limit */
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

/* Writes the parts into DIR/file, each with @NAME@, @KIND@ and @PREFIX_ARG@
 * replaced. 0 or -1 with a message on stderr. */
static int write_file(const char *dir, const char *file, const char *const *parts, int nparts,
                      const char *name, const char *kind, const char *prefix_arg) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "amptrain new-plugin: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    static const char *const keys[] = {"@NAME@", "@KIND@", "@PREFIX_ARG@"};
    const char *vals[] = {name, kind, prefix_arg};
    for (int i = 0; i < nparts; i++) {
        for (const char *p = parts[i]; *p;) {
            int hit = 0;
            for (int k = 0; k < 3 && !hit; k++) {
                size_t n = strlen(keys[k]);
                if (strncmp(p, keys[k], n) == 0) {
                    fputs(vals[k], f);
                    p += n;
                    hit = 1;
                }
            }
            if (!hit) fputc(*p++, f);
        }
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "amptrain new-plugin: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* 1 when dir exists and holds anything, 0 when absent or empty, -1 when it
 * is not a folder. */
static int dir_state(const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) return -1;
    DIR *d = opendir(dir);
    if (!d) return 1;
    int used = 0;
    struct dirent *e;
    while (!used && (e = readdir(d)) != NULL)
        used = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return used;
}

/* "-DCMAKE_PREFIX_PATH=<prefix>" when this amptrain runs from an install
 * whose CMake package is there, so the printed commands work as they are. */
static void prefix_hint(char *out, size_t outlen) {
    out[0] = '\0';
    char exe[PATH_MAX];
    if (amp_self_exe_dir(exe, sizeof exe) != 0) return;
    char cand[PATH_MAX + 128], prefix[PATH_MAX];
    snprintf(cand, sizeof cand, "%s/..", exe);
    if (!realpath(cand, prefix)) return;
    snprintf(cand, sizeof cand, "%s/%s/amptrainConfig.cmake", prefix, AMP_CMAKE_INSTALL_SUBDIR);
    if (access(cand, R_OK) == 0) snprintf(out, outlen, " -DCMAKE_PREFIX_PATH=%s", prefix);
}

static const char usage_text[] =
    "usage: amptrain new-plugin scaler|precision NAME [DIR] [--template autocast|fp8]\n"
    "  writes DIR (default ./NAME): NAME.c, CMakeLists.txt, NAME.ini, baseline.ini,\n"
    "  README.md. NAME is [a-z0-9_]+; DIR must not exist or be empty.\n"
    "  --template (precision only): autocast (default), a 16-bit autocast policy;\n"
    "            fp8, an FP8 recipe: the built-in fp8 policy (its formats and keys,\n"
    "            layer.<glob> included) with a scale_update of its own, on a tiny\n"
    "            GPT, against a bf16 baseline.ini\n";

static void usage(FILE *f) { fputs(usage_text, f); }

typedef struct new_plugin_args {
    const char *pos[3]; /* KIND NAME [DIR] */
    int n;
    const char *template_name; /* --template, or NULL */
} new_plugin_args;

static int new_plugin_opt(void *user, int opt, const char *arg) {
    new_plugin_args *a = user;
    switch (opt) {
    case 'h':
        usage(stdout);
        return 1;
    case 't':
        a->template_name = arg;
        return 0;
    case 1:
        if (a->n == 3 || !arg[0]) {
            fprintf(stderr, "amptrain new-plugin: %s\n",
                    a->n == 3 ? "too many arguments" : "an empty argument");
            usage(stderr);
            return -1;
        }
        a->pos[a->n++] = arg;
        return 0;
    }
    return -1;
}

int amp_cmd_new_plugin(int argc, char **argv) {
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                         {"template", required_argument, NULL, 't'},
                                         {NULL, 0, NULL, 0}};
    new_plugin_args a = {{NULL, NULL, NULL}, 0, NULL};
    int rc = amp_cli_parse("new-plugin", argc, argv, "h", opts, new_plugin_opt, &a, usage_text);
    if (rc == 0 && a.n < 2) {
        usage(stderr);
        rc = -1;
    }
    if (rc != 0) return rc > 0 ? 0 : 2;
    const char *kind = a.pos[0], *name = a.pos[1];
    int is_scaler = strcmp(kind, "scaler") == 0;
    if (!is_scaler && strcmp(kind, "precision") != 0) {
        fprintf(stderr, "amptrain new-plugin: unknown kind '%s'; use scaler or precision\n", kind);
        usage(stderr);
        return 2;
    }
    const char *tpl = a.template_name ? a.template_name : is_scaler ? "scaler" : "autocast";
    int fp8 = strcmp(tpl, "fp8") == 0;
    if (is_scaler ? a.template_name != NULL : !fp8 && strcmp(tpl, "autocast") != 0) {
        fprintf(stderr, "amptrain new-plugin: --template %s: %s\n", tpl,
                is_scaler ? "templates are for precision plugins; a scaler has one"
                          : "unknown template; use autocast or fp8");
        return 2;
    }
    if (!valid_name(name)) {
        fprintf(stderr,
                "amptrain new-plugin: invalid name '%s': use 1 to %d of a-z, 0-9 and _ (it is the "
                "name INI files use and part of the file name amp_%s_NAME.so)\n",
                name, AMP_PLUGIN_NAME_MAX, kind);
        return 2;
    }
    const char *dir = a.n == 3 ? a.pos[2] : name;
    if (!dir[0]) {
        fprintf(stderr, "amptrain new-plugin: the folder is an empty string; give a folder name\n");
        return 2;
    }
    int st = dir_state(dir);
    if (st != 0) {
        fprintf(stderr,
                "amptrain new-plugin: %s %s; give a new or empty folder (nothing was written)\n",
                dir, st < 0 ? "exists and is not a folder" : "exists and is not empty");
        return 2;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "amptrain new-plugin: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char hint[PATH_MAX + 32];
    prefix_hint(hint, sizeof hint);
    char cfile[128], ini[128];
    snprintf(cfile, sizeof cfile, "%s.c", name);
    snprintf(ini, sizeof ini, "%s.ini", name);
    const char *source[] = {is_scaler ? scaler_title : fp8 ? amp_new_plugin_fp8_title : precision_title,
                            build_note, is_scaler ? scaler_c : fp8 ? amp_new_plugin_fp8_c : precision_c};
    const char *cm[] = {cmakelists};
    const char *rd[] = {readme};
    const char *task = fp8 ? amp_new_plugin_fp8_task : tiny_task;
    const char *own[] = {is_scaler ? scaler_ini_head : fp8 ? amp_new_plugin_fp8_ini_head : precision_ini_head,
                         task, is_scaler ? scaler_ini_tail : fp8 ? amp_new_plugin_fp8_ini_tail : precision_ini_tail};
    const char *base[] = {fp8 ? amp_new_plugin_fp8_baseline_head : baseline_ini_head, task,
                          fp8 ? amp_new_plugin_fp8_baseline_tail : baseline_ini_tail};
    if (write_file(dir, cfile, source, 3, name, kind, hint) || write_file(dir, "CMakeLists.txt", cm, 1, name, kind, hint) ||
        write_file(dir, ini, own, 3, name, kind, hint) || write_file(dir, "baseline.ini", base, 3, name, kind, hint) ||
        write_file(dir, "README.md", rd, 1, name, kind, hint))
        return 1;
    printf("wrote %s/: %s CMakeLists.txt %s baseline.ini README.md\n"
           "next:\n"
           "  cd %s\n"
           "  cmake -S . -B build%s\n"
           "  cmake --build build\n"
           "  amptrain train %s --out runs/%s\n"
           "  amptrain ab baseline.ini %s --seeds 3 --out runs/ab\n",
           dir, cfile, ini, dir, hint, ini, name, ini);
    if (!hint[0])
        printf("(this amptrain is not an install: install it first, e.g. `cmake --install build "
               "--prefix ~/.local`, and pass -DCMAKE_PREFIX_PATH=<that prefix> to cmake)\n");
    return 0;
}
