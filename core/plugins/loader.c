#include "loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <grp.h>
#include <link.h>
#include <pwd.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base_policy.h"
#include "io/file.h"
#include "util/log.h"
#include "process/self_exe.h"

const char *amp_plugin_kind_name(amp_plugin_kind kind) {
    return kind == AMP_PLUGIN_KIND_PRECISION ? "precision"
           : kind == AMP_PLUGIN_KIND_SCALER  ? "scaler"
                                             : "unknown";
}

void amp_plugin_file_name(char *out, size_t outlen, amp_plugin_kind kind, const char *name) {
    snprintf(out, outlen, "amp_%s_%s.so", amp_plugin_kind_name(kind), name);
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Appends dir's real path unless it is no folder or already listed; -1
 * when out of memory. No limit on the count: an entry is never dropped. */
static int add_dir(amp_plugin_dirs *d, const char *dir) {
    if (!dir[0] || !is_dir(dir)) return 0;
    char real[PATH_MAX];
    if (!realpath(dir, real)) return 0;
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->dir[i], real) == 0) return 0;
    char **grown = realloc(d->dir, ((size_t)d->n + 1) * sizeof *grown);
    if (!grown) return -1;
    d->dir = grown;
    if (!(d->dir[d->n] = strdup(real))) return -1;
    d->n++;
    return 0;
}

int amp_plugin_search_dirs(amp_plugin_dirs *d) {
    d->dir = NULL;
    d->n = 0;
    int bad = 0;
    const char *env = getenv("AMPTRAIN_PLUGIN_PATH");
    if (env) {
        char *copy = strdup(env), *save = NULL;
        bad = !copy;
        for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && !bad;
             tok = strtok_r(NULL, ":", &save))
            bad = add_dir(d, tok) != 0;
        free(copy);
    }
    /* Beside the executable: the build tree keeps plugins in <build>/plugins,
     * tests and benchmarks sit one level down, an install uses its libdir. */
    char exe[PATH_MAX];
    if (!bad && amp_self_exe_dir(exe, sizeof exe) == 0) {
        char cand[PATH_MAX + 64];
        static const char installed[] = "../" AMP_PLUGIN_INSTALL_SUBDIR;
        static const char *const rel[] = {"plugins", "../plugins", installed};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0] && !bad; i++) {
            snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
            if (strlen(cand) < PATH_MAX) bad = add_dir(d, cand) != 0;
        }
    }
    if (!bad) return 0;
    amp_plugin_dirs_free(d);
    return -1;
}

void amp_plugin_dirs_free(amp_plugin_dirs *d) {
    for (int i = 0; i < d->n; i++) free(d->dir[i]);
    free(d->dir);
    d->dir = NULL;
    d->n = 0;
}

/* ------------------------------------------------------------- trust */

/* A plugin runs with the user's rights, so whoever can change the file, or
 * rename anything on the way to it, decides what code runs. The rules are
 * sshd's (StrictModes) for its key files:
 *   - the file and every folder from it up to / belong to root or to us;
 *   - the file is writable by nobody else (no group or other write bit);
 *   - the folder holding it likewise: in a writable folder anyone could put
 *     their file under the plugin's name (sticky or not: a sticky shared
 *     folder such as /tmp is no place for code either);
 *   - a folder above it may be group/world-writable only when sticky (/tmp):
 *     others can then not rename our folder inside it. Group-writable is
 *     fine too when the group holds no one but the folder's owner (a user
 *     private group, what umask 002 makes on Debian: Debian's sshd allows
 *     it the same way), so a source tree under such folders still works.
 * No other user can then swap the file between these checks and dlopen. */
static const char *const role_names[] = {"plugin file", "folder holding the plugin",
                                         "folder above the plugin"};

static const char *writers(mode_t w) {
    return w == (S_IWGRP | S_IWOTH) ? "group and others" : w == S_IWGRP ? "group" : "others";
}

int amp_plugin_trust_judge(const char *path, const struct stat *st, amp_trust_role role,
                           uid_t me, int group_private, char *err, size_t errlen) {
    const char *what = role_names[role];
    if (st->st_uid != 0 && st->st_uid != me) {
        amp_set_err(err, errlen,
                    "%s: refused: the %s belongs to uid %u, not to you (uid %u) or root, so that "
                    "user could replace the plugin; %s",
                    path, what, (unsigned)st->st_uid, (unsigned)me,
                    role == AMP_TRUST_FILE ? "copy the plugin into a folder of your own"
                                           : "move the plugin into a folder of your own");
        return -1;
    }
    mode_t w = st->st_mode & (S_IWGRP | S_IWOTH);
    if (role == AMP_TRUST_ANCESTOR && group_private) w &= (mode_t)~S_IWGRP;
    if (!w) return 0;
    int sticky = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);
    if (role == AMP_TRUST_ANCESTOR && sticky) return 0;
    unsigned mode = (unsigned)(st->st_mode & 07777);
    if (sticky) /* the holding folder: /tmp and the like; chmod is no fix */
        amp_set_err(err, errlen,
                    "%s: refused: the %s is a shared folder (writable by %s, sticky, mode %04o) "
                    "where anyone can create files, so it is no place for code that runs as you; "
                    "move the plugin into a folder only you can write (e.g. `mkdir -m 755 "
                    "~/amptrain-plugins`); do not change the mode of %s",
                    path, what, writers(w), mode, path);
    else if (st->st_uid == me)
        amp_set_err(err, errlen,
                    "%s: refused: the %s is writable by %s (mode %03o), so another user could "
                    "%s; run `chmod go-w %s`",
                    path, what, writers(w), mode & 0777,
                    role == AMP_TRUST_ANCESTOR
                        ? "rename what it holds and put other code in the plugin's place"
                        : "replace the plugin",
                    path);
    else
        amp_set_err(err, errlen,
                    "%s: refused: the %s is writable by %s (mode %03o) and belongs to root, so "
                    "another user could replace the plugin; move the plugin into a folder only "
                    "you can write",
                    path, what, writers(w), mode & 0777);
    return -1;
}

int amp_group_only_owner(gid_t gid, uid_t owner) {
    const struct group *gr = getgrgid(gid);
    if (!gr) return 0;
    gid_t g = gr->gr_gid;
    int members = 0;
    /* Supplementary members: none, or the owner alone. */
    const struct passwd *opw = getpwuid(owner);
    if (gr->gr_mem && gr->gr_mem[0]) {
        if (!opw || strcmp(gr->gr_mem[0], opw->pw_name) != 0 || gr->gr_mem[1]) return 0;
        members++;
    }
    /* Primary members: no one but the owner. */
    const struct passwd *pw;
    setpwent();
    while ((pw = getpwent()) != NULL) {
        if (pw->pw_gid != g) continue;
        if (pw->pw_uid != owner) {
            endpwent();
            return 0;
        }
        members++;
    }
    endpwent();
    return members > 0;
}

/* Stats path and judges it. */
static int trust_one(const char *path, amp_trust_role role, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0) {
        amp_set_err(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        return -1;
    }
    int group_private = role == AMP_TRUST_ANCESTOR && (st.st_mode & S_IWGRP) &&
                        amp_group_only_owner(st.st_gid, st.st_uid);
    return amp_plugin_trust_judge(path, &st, role, geteuid(), group_private, err, errlen);
}

/* dir (a resolved path) as the folder holding the plugin, then every folder
 * above it up to /. */
static int trust_folders(const char *dir, char *err, size_t errlen) {
    char cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s", dir);
    amp_trust_role role = AMP_TRUST_FOLDER;
    for (;;) {
        if (trust_one(cur, role, err, errlen) != 0) return -1;
        role = AMP_TRUST_ANCESTOR;
        char *slash = strrchr(cur, '/');
        if (!slash || (slash == cur && !cur[1])) return 0; /* "/" done */
        if (slash == cur)
            cur[1] = '\0';
        else
            *slash = '\0';
    }
}

static void dir_of(char *out, size_t cap, const char *file) {
    snprintf(out, cap, "%s", file);
    char *slash = strrchr(out, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == out)
        out[1] = '\0';
    else
        *slash = '\0';
}

int amp_plugin_check_trust(const char *path, char *err, size_t errlen) {
    char real[PATH_MAX], dir[PATH_MAX], rdir[PATH_MAX];
    if (!realpath(path, real)) {
        amp_set_err(err, errlen, "%s: cannot resolve: %s", path, strerror(errno));
        return -1;
    }
    if (trust_one(real, AMP_TRUST_FILE, err, errlen) != 0) return -1;
    /* The folders of the name given (it may be a symlink: whoever can
     * replace the link picks the code) and of its target. */
    dir_of(dir, sizeof dir, path);
    if (!realpath(dir, rdir)) {
        amp_set_err(err, errlen, "%s: cannot resolve: %s", dir, strerror(errno));
        return -1;
    }
    if (trust_folders(rdir, err, errlen) != 0) return -1;
    dir_of(dir, sizeof dir, real);
    return strcmp(dir, rdir) == 0 ? 0 : trust_folders(dir, err, errlen);
}

/* A regular file (a FIFO would hang the reads and dlopen, a device never
 * end) that starts with the ELF magic, so a text file named .so gets a plain
 * answer. */
static int check_elf(const char *path, char *err, size_t errlen) {
    int fd = amp_file_open_read(path, NULL, err, errlen);
    if (fd < 0) return -1;
    unsigned char magic[4] = {0};
    int bad = amp_file_pread_full(fd, magic, 4, 0) != 0 || memcmp(magic, "\177ELF", 4) != 0;
    close(fd);
    if (bad) {
        amp_set_err(err, errlen,
                    "%s: not a shared object (no ELF header); remove it or rebuild the plugin", path);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- the entry */

/* The readable PT_LOAD segments of the loaded plugin: every pointer in its
 * entry must lie inside one, so a garbage pointer or size is refused
 * instead of followed. */
typedef struct plugin_image {
    uintptr_t base;
    const char *name;
    struct {
        uintptr_t lo, hi;
    } seg[16];
    int nseg;
} plugin_image;

static int find_image(struct dl_phdr_info *info, size_t size, void *user) {
    (void)size;
    plugin_image *im = user;
    if (info->dlpi_addr != im->base || !info->dlpi_name || strcmp(info->dlpi_name, im->name) != 0)
        return 0;
    for (int i = 0; i < info->dlpi_phnum && im->nseg < 16; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R)) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        im->seg[im->nseg].lo = lo;
        im->seg[im->nseg].hi = lo + ph->p_memsz;
        im->nseg++;
    }
    return 1;
}

static int image_of(void *handle, plugin_image *im) {
    struct link_map *lm = NULL;
    memset(im, 0, sizeof *im);
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm) return -1;
    im->base = (uintptr_t)lm->l_addr;
    im->name = lm->l_name;
    dl_iterate_phdr(find_image, im);
    return im->nseg ? 0 : -1;
}

/* Whether [p, p + n) lies inside one readable segment. */
static int in_image(const plugin_image *im, const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < im->nseg; i++)
        if (a >= im->seg[i].lo && a <= im->seg[i].hi && n <= im->seg[i].hi - a) return 1;
    return 0;
}

/* A NUL-terminated string of at most AMP_PLUGIN_TEXT_MAX bytes inside the
 * image; its length in *len. */
static int string_in_image(const plugin_image *im, const char *s, size_t *len) {
    uintptr_t a = (uintptr_t)s;
    for (int i = 0; i < im->nseg; i++) {
        if (a < im->seg[i].lo || a >= im->seg[i].hi) continue;
        size_t room = im->seg[i].hi - a;
        size_t n = strnlen(s, room < AMP_PLUGIN_TEXT_MAX + 1 ? room : AMP_PLUGIN_TEXT_MAX + 1);
        if (n == room || n > AMP_PLUGIN_TEXT_MAX) return 0;
        *len = n;
        return 1;
    }
    return 0;
}

/* The entry's strings: inside the plugin, bounded, and without control
 * bytes (they are shown on terminals and written into files). */
static int check_text(const plugin_image *im, const char *s, const char *field, int required,
                      const char *path, char *err, size_t errlen) {
    size_t n = 0;
    if (!s) {
        if (!required) return 0;
        amp_set_err(err, errlen, "%s: entry lacks a %s", path, field);
        return -1;
    }
    if (!string_in_image(im, s, &n)) {
        amp_set_err(err, errlen,
                    "%s: entry's %s does not point to a string of at most %d bytes inside the "
                    "plugin; rebuild it with AMP_PLUGIN_DEFINE",
                    path, field, AMP_PLUGIN_TEXT_MAX);
        return -1;
    }
    if (required && n == 0) {
        amp_set_err(err, errlen, "%s: entry's %s is empty", path, field);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            amp_set_err(err, errlen, "%s: entry's %s holds the control byte 0x%02x", path, field,
                        c);
            return -1;
        }
    }
    return 0;
}

/* The pointers and sizes of the entry dlsym found, against the plugin's own
 * image, before check_entry reads anything else: the entry symbol's size
 * bounds struct_size (0xFFFFFFFF made `amptrain plugins -v` read past it and
 * crash), the vtable's struct_size bytes lie inside the plugin, and every
 * string is a bounded C string in it. */
static int check_bounds(void *handle, const amp_plugin_info *e, const char *path, char *err,
                        size_t errlen) {
    plugin_image im;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (image_of(handle, &im) != 0) {
        amp_set_err(err, errlen, "%s: cannot find the plugin's loaded segments", path);
        return -1;
    }
    if (!dladdr1(e, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        !info.dli_fname || strcmp(info.dli_fname, im.name) != 0 ||
        !in_image(&im, e, 3 * sizeof(uint32_t))) {
        amp_set_err(err, errlen,
                    "%s: its '%s' symbol is not defined in the plugin itself (does a library it "
                    "links define it?)",
                    path, AMP_PLUGIN_ENTRY_SYMBOL);
        return -1;
    }
    size_t symsize = (size_t)sym->st_size;
    if (e->struct_size > symsize || !in_image(&im, e, e->struct_size)) {
        amp_set_err(err, errlen,
                    "%s: entry struct_size %u is larger than the %zu bytes of its '%s' symbol; "
                    "rebuild it with AMP_PLUGIN_DEFINE",
                    path, e->struct_size, symsize, AMP_PLUGIN_ENTRY_SYMBOL);
        return -1;
    }
    if (e->abi_major != AMP_PLUGIN_ABI_MAJOR || e->struct_size < AMP_PLUGIN_INFO_SIZE_1_0)
        return 0; /* check_entry refuses it, reading no pointer */
    if (check_text(&im, e->name, "name", 1, path, err, errlen) ||
        check_text(&im, e->version, "version", 1, path, err, errlen) ||
        check_text(&im, e->description, "description", 0, path, err, errlen) ||
        check_text(&im, amp_plugin_keys(e), "keys", 0, path, err, errlen))
        return -1;
    for (const char *c = e->name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_')) {
            amp_set_err(err, errlen,
                        "%s: entry's name '%s' has a '%c': plugin names use a-z, 0-9 and _", path,
                        e->name, *c);
            return -1;
        }
    if (!e->vtable) return 0; /* check_entry says so */
    uint32_t vsize = 0;
    if (!in_image(&im, e->vtable, sizeof vsize)) {
        amp_set_err(err, errlen, "%s: entry's vtable does not point inside the plugin", path);
        return -1;
    }
    memcpy(&vsize, e->vtable, sizeof vsize);
    if (vsize > AMP_PLUGIN_STRUCT_MAX || !in_image(&im, e->vtable, vsize)) {
        amp_set_err(err, errlen,
                    "%s: vtable struct_size %u runs past the plugin's data (at most %d bytes are "
                    "believed); rebuild it against amptrain/plugin.h",
                    path, vsize, AMP_PLUGIN_STRUCT_MAX);
        return -1;
    }
    return 0;
}

/* Validates the entry (data only; check_bounds has vouched for every
 * pointer and size it reads). */
static int check_entry(const amp_plugin_info *e, const char *path, char *err, size_t errlen) {
    if (e->abi_major != AMP_PLUGIN_ABI_MAJOR) {
        snprintf(err, errlen,
                 "%s: built for plugin ABI %u.%u but this amptrain speaks ABI %d.%d; rebuild the "
                 "plugin against this amptrain's amptrain/plugin.h",
                 path, e->abi_major, e->abi_minor, AMP_PLUGIN_ABI_MAJOR, AMP_PLUGIN_ABI_MINOR);
        return -1;
    }
    /* A lower minor has a shorter entry: ABI <major>.0's fields must be there. */
    if (e->struct_size < AMP_PLUGIN_INFO_SIZE_1_0) {
        snprintf(err, errlen, "%s: entry struct_size %u is smaller than ABI %d.0's %zu bytes", path,
                 e->struct_size, AMP_PLUGIN_ABI_MAJOR, (size_t)AMP_PLUGIN_INFO_SIZE_1_0);
        return -1;
    }
    if (!e->name || !e->name[0] || !e->version || !e->vtable) {
        snprintf(err, errlen, "%s: entry lacks a name, version or vtable", path);
        return -1;
    }
    /* One limit everywhere (plugin.h): a longer name would be cut in a
     * checkpoint and never match on resume. strnlen: never read far. */
    size_t nlen = strnlen(e->name, AMP_PLUGIN_NAME_MAX + 1);
    int name_ok = nlen <= AMP_PLUGIN_NAME_MAX;
    for (size_t i = 0; name_ok && i < nlen; i++) {
        char c = e->name[i];
        name_ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    }
    if (!name_ok) {
        snprintf(err, errlen, "%s: entry name '%.*s%s' is not 1 to %d of a-z, 0-9 and _", path,
                 (int)(nlen < 80 ? nlen : 80), e->name, nlen > 80 ? "..." : "",
                 AMP_PLUGIN_NAME_MAX);
        return -1;
    }
    size_t vlen = strnlen(e->version, AMP_PLUGIN_VERSION_MAX + 1);
    int version_ok = vlen >= 1 && vlen <= AMP_PLUGIN_VERSION_MAX;
    for (size_t i = 0; version_ok && i < vlen; i++)
        version_ok = e->version[i] >= 0x20 && e->version[i] <= 0x7e;
    if (!version_ok) {
        snprintf(err, errlen, "%s: entry version is not 1 to %d printable ASCII characters", path,
                 AMP_PLUGIN_VERSION_MAX);
        return -1;
    }
    /* Name the missing functions: "lacks a required function" alone sends
     * the plugin author hunting through the vtable. */
    char missing[64] = "";
    if (e->kind == AMP_PLUGIN_KIND_PRECISION) {
        const amp_precision_vtable *vt = e->vtable;
        size_t need = offsetof(amp_precision_vtable, requires_scaler);
        if (vt->struct_size < need) {
            snprintf(err, errlen, "%s: precision vtable struct_size %u is smaller than the %zu bytes "
                     "of its required functions", path, vt->struct_size, need);
            return -1;
        }
        if (!vt->init) strcat(missing, " init");
        if (!vt->fini) strcat(missing, " fini");
        if (!vt->resolve) strcat(missing, " resolve");
    } else if (e->kind == AMP_PLUGIN_KIND_SCALER) {
        const amp_scaler_vtable *vt = e->vtable;
        size_t need = offsetof(amp_scaler_vtable, state_save);
        if (vt->struct_size < need) {
            snprintf(err, errlen, "%s: scaler vtable struct_size %u is smaller than the %zu bytes "
                     "of its required functions", path, vt->struct_size, need);
            return -1;
        }
        if (!vt->init) strcat(missing, " init");
        if (!vt->fini) strcat(missing, " fini");
        if (!vt->get_scale) strcat(missing, " get_scale");
        if (!vt->update) strcat(missing, " update");
    } else {
        snprintf(err, errlen, "%s: unknown plugin kind %u", path, e->kind);
        return -1;
    }
    if (missing[0]) {
        snprintf(err, errlen, "%s: %s vtable leaves required function(s) NULL:%s", path,
                 amp_plugin_kind_name((amp_plugin_kind)e->kind), missing);
        return -1;
    }
    return 0;
}

static int open_file(amp_plugin *p, const char *path, char *err, size_t errlen) {
    if (amp_plugin_check_trust(path, err, errlen) != 0) return -1;
    if (check_elf(path, err, errlen) != 0) return -1;
    /* dlopen runs the file's ELF constructors (the checks above decided it
     * may run code); nothing else of the plugin runs in this function. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "%s: cannot load: %s", path, dlerror());
        return -1;
    }
    const amp_plugin_info *e = dlsym(h, AMP_PLUGIN_ENTRY_SYMBOL);
    if (!e) {
        snprintf(err, errlen,
                 "%s: no '%s' symbol: not an amptrain plugin (declare one with AMP_PLUGIN_DEFINE)",
                 path, AMP_PLUGIN_ENTRY_SYMBOL);
        dlclose(h);
        return -1;
    }
    if (check_bounds(h, e, path, err, errlen) != 0 || check_entry(e, path, err, errlen) != 0) {
        dlclose(h);
        return -1;
    }
    p->handle = h;
    p->entry = e;
    snprintf(p->path, sizeof p->path, "%s", path);
    /* check_entry saw struct_size cover the required functions. */
    uint32_t vsize = *(const uint32_t *)e->vtable;
    memset(&p->vt, 0, sizeof p->vt);
    size_t full = e->kind == AMP_PLUGIN_KIND_PRECISION ? sizeof p->vt.precision : sizeof p->vt.scaler;
    memcpy(&p->vt, e->vtable, vsize < full ? vsize : full);
    return 0;
}

int amp_plugin_probe(const char *path, amp_plugin_info *entry, char *err, size_t errlen) {
    amp_plugin p;
    memset(&p, 0, sizeof p);
    if (open_file(&p, path, err, errlen) != 0) return -1;
    /* Only the bytes the plugin has: a lower minor's entry is shorter. */
    memset(entry, 0, sizeof *entry);
    memcpy(entry, p.entry, p.entry->struct_size < sizeof *entry ? p.entry->struct_size : sizeof *entry);
    /* Strings point into the plugin, which is closed below: copy them. */
    static char name[128], version[64], desc[256], keys[512];
    const char *k = amp_plugin_keys(p.entry);
    snprintf(name, sizeof name, "%s", p.entry->name);
    snprintf(version, sizeof version, "%s", p.entry->version);
    snprintf(desc, sizeof desc, "%s", p.entry->description ? p.entry->description : "");
    snprintf(keys, sizeof keys, "%s", k ? k : "");
    entry->name = name;
    entry->version = version;
    entry->description = desc;
    entry->keys = keys;
    dlclose(p.handle);
    return 0;
}

int amp_plugin_spec_is_path(const char *spec) {
    size_t n = strlen(spec);
    return strchr(spec, '/') != NULL || (n > 3 && strcmp(spec + n - 3, ".so") == 0);
}

/* Finds the file of plugin `spec` (a name) in the search folders: exactly
 * one folder must hold it. 0 with path set, or -1 with err. */
static int find_by_name(amp_plugin_kind kind, const char *spec, const amp_plugin_dirs *d,
                        char path[PATH_MAX], char *err, size_t errlen) {
    const char *kname = amp_plugin_kind_name(kind);
    char file[256], other[256];
    amp_plugin_file_name(file, sizeof file, kind, spec);
    amp_plugin_file_name(other, sizeof other,
                         kind == AMP_PLUGIN_KIND_SCALER ? AMP_PLUGIN_KIND_PRECISION
                                                        : AMP_PLUGIN_KIND_SCALER,
                         spec);
    path[0] = '\0';
    /* The same name in two folders is ambiguous: which one runs would
     * depend on the search order, so refuse and list them all. */
    int found = 0;
    char dup[2048] = "";
    size_t dlen = 0;
    for (int i = 0; i < d->n; i++) {
        char cand[PATH_MAX + 300];
        snprintf(cand, sizeof cand, "%s/%s", d->dir[i], file);
        if (access(cand, F_OK) != 0) continue;
        if (!found++) snprintf(path, PATH_MAX, "%s", cand);
        if (dlen < sizeof dup)
            dlen += (size_t)snprintf(dup + dlen, sizeof dup - dlen, "%s%s", found > 1 ? ", " : "", cand);
    }
    if (found > 1) {
        snprintf(err, errlen,
                 "%s plugin '%s' is ambiguous: %s is in %d folders of the search path (%s); "
                 "remove all but one, or give the path in the INI (plugin = /path/to/%s)",
                 kname, spec, file, found, dup, file);
        return -1;
    }
    if (!path[0]) {
        for (int i = 0; i < d->n; i++) {
            char cand[PATH_MAX + 300];
            snprintf(cand, sizeof cand, "%s/%s", d->dir[i], other);
            if (access(cand, F_OK) != 0) continue;
            /* Only the file name says it is of the other kind; its entry
             * may say otherwise (a misnamed file), so read it. */
            amp_plugin_info e;
            char why[512];
            if (amp_plugin_probe(cand, &e, why, sizeof why) == 0 && e.kind == (uint32_t)kind) {
                char want[256];
                amp_plugin_file_name(want, sizeof want, kind, e.name);
                snprintf(err, errlen,
                         "no %s plugin file %s, but %s declares a %s plugin '%s': its file "
                         "name says %s; rename it to %s",
                         kname, file, cand, kname, e.name,
                         kind == AMP_PLUGIN_KIND_SCALER ? "precision" : "scaler", want);
            } else {
                snprintf(err, errlen,
                         "'%s' is a %s plugin (%s), but a %s plugin is needed here; run "
                         "`amptrain plugins` to list the %s plugins",
                         spec, kind == AMP_PLUGIN_KIND_SCALER ? "precision" : "scaler", cand,
                         kname, kname);
            }
            return -1;
        }
        int off = snprintf(err, errlen, "no %s plugin '%s': %s not found in", kname, spec, file);
        if (d->n == 0) off += snprintf(err + off, errlen > (size_t)off ? errlen - off : 0, " any directory (none exists)");
        for (int i = 0; i < d->n && (size_t)off < errlen; i++)
            off += snprintf(err + off, errlen - off, "%s %s", i ? "," : "", d->dir[i]);
        const char *why = "";
        if (!amp_self_exe(&why) && (size_t)off < errlen) /* the built-in plugins' folder */
            off += snprintf(err + off, errlen - off, " (not beside the executable: %s)", why);
        if ((size_t)off < errlen)
            snprintf(err + off, errlen - off,
                     "; set AMPTRAIN_PLUGIN_PATH or give a path, and see `amptrain plugins`");
        return -1;
    }
    return 0;
}

int amp_plugin_open(amp_plugin *p, amp_plugin_kind kind, const char *spec, const char *base_dir,
                    char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    p->kind = kind;
    const char *kname = amp_plugin_kind_name(kind);
    char path[PATH_MAX];
    if (amp_plugin_spec_is_path(spec)) {
        if (spec[0] == '/' || !base_dir || !base_dir[0])
            snprintf(path, sizeof path, "%s", spec);
        else
            snprintf(path, sizeof path, "%s/%s", base_dir, spec);
        if (access(path, F_OK) != 0) {
            snprintf(err, errlen, "%s plugin file %s: not found", kname, path);
            return -1;
        }
    } else {
        amp_plugin_dirs sd;
        if (amp_plugin_search_dirs(&sd) != 0) {
            snprintf(err, errlen, "%s plugin '%s': out of memory listing the plugin folders", kname, spec);
            return -1;
        }
        int rc = find_by_name(kind, spec, &sd, path, err, errlen);
        amp_plugin_dirs_free(&sd);
        if (rc != 0) return -1;
    }
    if (open_file(p, path, err, errlen) != 0) return -1;
    if (p->entry->kind != (uint32_t)kind) {
        amp_plugin_kind has = (amp_plugin_kind)p->entry->kind;
        char want[256] = "";
        /* Found by name, the file is named for the wrong kind: say so. */
        if (!amp_plugin_spec_is_path(spec)) amp_plugin_file_name(want, sizeof want, has, p->entry->name);
        snprintf(err, errlen, "%s: '%s' is a %s plugin, but a %s plugin is needed here%s%s", path,
                 p->entry->name, amp_plugin_kind_name(has), kname,
                 want[0] ? "; its file name is wrong: rename it to " : "", want);
        amp_plugin_close(p);
        return -1;
    }
    /* Found by name: the entry must carry that name, or the run's records
     * (summary.json, `amptrain plugins`) would name another plugin. */
    if (!amp_plugin_spec_is_path(spec) && strcmp(p->entry->name, spec) != 0) {
        char want[256];
        amp_plugin_file_name(want, sizeof want, kind, p->entry->name);
        snprintf(err, errlen, "%s: its entry names the plugin '%s', not '%s'; rename the file to %s",
                 path, p->entry->name, spec, want);
        amp_plugin_close(p);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ host services */

/* Every service checks its arguments first: a plugin's NULL format, key or
 * out pointer, or a ctx that is not its host->ctx, is recorded as misuse
 * (amp_plugin_misuse) and the call does nothing, instead of reaching
 * undefined behaviour in the host. */

/* Plugins between init and close; ctx is looked up here by address only,
 * so a garbage ctx is never followed. */
static amp_plugin_host *live_hosts;

static void host_misuse(amp_plugin_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void host_misuse(amp_plugin_host *h, const char *fmt, ...) {
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!h->misuse[0])
        snprintf(h->misuse, sizeof h->misuse, "%s plugin '%s' %s (a bug in the plugin)", h->section,
                 h->plugin, what);
    /* what a failing call then returns with */
    snprintf(h->err, sizeof h->err, "%s", h->misuse);
}

/* The host behind ctx, or NULL (after recording the misuse on every live
 * plugin: which one called cannot be known). */
static amp_plugin_host *host_of(void *ctx, const char *service) {
    for (amp_plugin_host *h = live_hosts; h; h = h->next_live)
        if (h == ctx) return h;
    for (amp_plugin_host *h = live_hosts; h; h = h->next_live)
        host_misuse(h, "(or a plugin loaded with it) called host->%s with a ctx (%p) that is "
                       "not host->ctx", service, ctx);
    amp_log(AMP_LOG_ERROR, "a plugin called host->%s with a ctx (%p) that is not host->ctx",
            service, ctx);
    return NULL;
}

/* h, or NULL when ctx is bad or the named argument is NULL. */
static amp_plugin_host *host_args(void *ctx, const char *service, const char *arg,
                                  const void *value) {
    amp_plugin_host *h = host_of(ctx, service);
    if (h && !value) {
        host_misuse(h, "called host->%s with a NULL %s", service, arg);
        return NULL;
    }
    return h;
}

amp_plugin_host *amp_plugin_host_args(void *ctx, const char *service, const char *arg,
                                      const void *value) {
    return host_args(ctx, service, arg, value);
}

static void host_log(void *ctx, int level, const char *fmt, ...) {
    amp_plugin_host *h = host_args(ctx, "log", "format", fmt);
    if (!h) return;
    if (level < AMP_LOG_ERROR || level > AMP_LOG_DEBUG) {
        host_misuse(h, "called host->log with level %d (AMP_LOG_ERROR..AMP_LOG_DEBUG are 0..3)",
                    level);
        return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    amp_log(level, "%s plugin '%s': %s", h->section, h->plugin, msg);
}

static void host_error(void *ctx, const char *fmt, ...) {
    amp_plugin_host *h = host_args(ctx, "error", "format", fmt);
    if (!h) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->err, sizeof h->err, fmt, ap);
    va_end(ap);
}

static const char *where_of(amp_plugin_host *h, const char *key) {
    const char *where = NULL;
    if (!amp_config_lookup(h->cfg, h->section, key, &where) || !where) return amp_config_path(h->cfg);
    return where;
}

static void host_key_error(void *ctx, const char *key, const char *fmt, ...) {
    amp_plugin_host *h = host_args(ctx, "key_error", "key", key);
    if (!h || !host_args(ctx, "key_error", "format", fmt)) return;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(h->err, sizeof h->err, "%s: [%s] %s: %s", where_of(h, key), h->section, key, msg);
}

/* The value of key for a getter, after checking its arguments: 1 with *v
 * set, 0 absent, -1 misuse. */
static int host_get(void *ctx, const char *service, const char *key, const void *out,
                    amp_plugin_host **hp, const char **v, const char **where) {
    amp_plugin_host *h = host_args(ctx, service, "key", key);
    if (!h || !host_args(ctx, service, "out pointer", out)) return -1;
    *hp = h;
    *v = amp_config_lookup(h->cfg, h->section, key, where);
    return *v != NULL;
}

static int host_get_double(void *ctx, const char *key, double *out) {
    amp_plugin_host *h;
    const char *v, *where = NULL;
    int got = host_get(ctx, "get_double", key, out, &h, &v, &where);
    if (got <= 0) return got;
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end != '\0' || errno == ERANGE || !isfinite(d)) {
        snprintf(h->err, sizeof h->err, "%s: [%s] %s = '%s': not a finite number", where, h->section,
                 key, v);
        return -1;
    }
    *out = d;
    return 1;
}

static int host_get_int(void *ctx, const char *key, int64_t *out) {
    amp_plugin_host *h;
    const char *v, *where = NULL;
    int got = host_get(ctx, "get_int", key, out, &h, &v, &where);
    if (got <= 0) return got;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE) {
        snprintf(h->err, sizeof h->err, "%s: [%s] %s = '%s': not an integer", where, h->section, key,
                 v);
        return -1;
    }
    *out = (int64_t)x;
    return 1;
}

static int host_get_string(void *ctx, const char *key, const char **out) {
    amp_plugin_host *h;
    const char *v, *where = NULL;
    int got = host_get(ctx, "get_string", key, out, &h, &v, &where);
    if (got <= 0) return got;
    *out = v;
    return 1;
}

typedef struct each_adapter {
    int (*fn)(void *user, const char *key, const char *value);
    void *user;
} each_adapter;

static int each_trampoline(void *user, const char *key, const char *value, const char *where) {
    each_adapter *a = user;
    return a->fn(a->user, key, value);
}

/* A NULL prefix is "": every key. */
static int host_each_key(void *ctx, const char *prefix,
                         int (*fn)(void *user, const char *key, const char *value), void *user) {
    amp_plugin_host *h = host_args(ctx, "each_key", "callback", fn ? (const void *)&fn : NULL);
    if (!h) return -1;
    each_adapter a = {fn, user};
    return amp_config_each(h->cfg, h->section, prefix ? prefix : "", each_trampoline, &a);
}

static int host_layer_count(void *ctx) {
    amp_plugin_host *h = host_of(ctx, "layer_count");
    return h ? h->layer_count : 0;
}

static const char *host_layer_name(void *ctx, int index) {
    amp_plugin_host *h = host_of(ctx, "layer_name");
    return h && index >= 0 && index < h->layer_count ? h->layers[index] : NULL;
}

static unsigned host_layer_op_classes(void *ctx, int index) {
    amp_plugin_host *h = host_of(ctx, "layer_op_classes");
    return h && h->layer_classes && index >= 0 && index < h->layer_count ? h->layer_classes[index]
                                                                          : 0u;
}

const char *amp_plugin_misuse(const amp_plugin *p) {
    return p && p->host.misuse[0] ? p->host.misuse : NULL;
}

static void live_remove(amp_plugin_host *h) {
    for (amp_plugin_host **l = &live_hosts; *l; l = &(*l)->next_live)
        if (*l == h) {
            *l = h->next_live;
            return;
        }
}

int amp_plugin_init(amp_plugin *p, amp_config *cfg, const char *section,
                    const char *const *layers, int layer_count, char *err, size_t errlen) {
    amp_plugin_host *h = &p->host;
    h->cfg = cfg;
    h->section = section;
    h->plugin = p->entry->name;
    h->layers = layers;
    h->layer_count = layer_count;
    h->err[0] = '\0';
    h->misuse[0] = '\0';
    live_remove(h);
    h->next_live = live_hosts;
    live_hosts = h;
    amp_host_api *api = &h->api;
    memset(api, 0, sizeof *api);
    api->struct_size = sizeof *api;
    api->ctx = h;
    api->log = host_log;
    api->error = host_error;
    api->key_error = host_key_error;
    api->get_double = host_get_double;
    api->get_int = host_get_int;
    api->get_string = host_get_string;
    api->each_key = host_each_key;
    api->layer_count = host_layer_count;
    api->layer_name = host_layer_name;
    api->layer_op_classes = host_layer_op_classes;
    api->base_policy = amp_base_policy_take;
    h->kind = p->kind;
    amp_config_declare_section(cfg, section);
    h->in_init = 1;
    int rc = p->kind == AMP_PLUGIN_KIND_PRECISION ? amp_plugin_precision(p)->init(api, &p->self)
                                                   : amp_plugin_scaler(p)->init(api, &p->self);
    h->in_init = 0;
    if (rc != 0) {
        p->self = NULL;
        snprintf(err, errlen, "%s plugin '%s' (%s) failed to initialise: %s", section,
                 p->entry->name, p->path, amp_plugin_reason(p));
        return -1;
    }
    if (h->misuse[0]) { /* init succeeded on a call the host refused */
        snprintf(err, errlen, "%s (%s), during init", h->misuse, p->path);
        return -1;
    }
    return 0;
}

void amp_plugin_close(amp_plugin *p) {
    if (!p) return;
    live_remove(&p->host);
    if (!p->handle) return;
    if (p->self) {
        if (p->kind == AMP_PLUGIN_KIND_PRECISION)
            amp_plugin_precision(p)->fini(p->self);
        else
            amp_plugin_scaler(p)->fini(p->self);
        p->self = NULL;
    }
    amp_base_policy_free(p->host.base); /* outlives the fini of the plugin on it */
    p->host.base = NULL;
    dlclose(p->handle);
    p->handle = NULL;
    p->entry = NULL;
}
