#include "self_exe.h"

#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_exe[PATH_MAX], g_loader[PATH_MAX];
static char g_why[2 * PATH_MAX + 256];
static int g_looked; /* init ran: programs other than the CLI (tests, benches) look on first use */

/* The main program (the first object listed) asks for an interpreter. */
static int main_wants_interp(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_INTERP) *(int *)data = 1;
    return 1;
}

/* name's real path into out when it is a regular file other than the
 * loader's (st). */
static int program_file(const char *name, const struct stat *loader, char *out) {
    struct stat st;
    if (!name || !name[0] || !realpath(name, out) || stat(out, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    return st.st_dev == loader->st_dev && st.st_ino == loader->st_ino ? -1 : 0;
}

int amp_self_exe_init(char **argv) {
    g_looked = 1;
    g_exe[0] = g_loader[0] = '\0';
    char ran[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", ran, sizeof ran - 1);
    if (n <= 0) {
        snprintf(g_why, sizeof g_why,
                 "the executable's location could not be read (/proc/self/exe: %s; is /proc "
                 "mounted?)", strerror(errno));
        return -1;
    }
    ran[n] = '\0';
    /* The kernel maps a program's interpreter itself and says where
     * (AT_BASE); a program that asks for one but got none from the kernel
     * was started by running the loader, which is then /proc/self/exe. */
    int interp = 0;
    dl_iterate_phdr(main_wants_interp, &interp);
    if (!interp || getauxval(AT_BASE) != 0) {
        memcpy(g_exe, ran, (size_t)n + 1);
        return 0;
    }
    memcpy(g_loader, ran, (size_t)n + 1);
    struct stat ld;
    const char *execfn = (const char *)getauxval(AT_EXECFN), *arg0 = argv ? argv[0] : NULL;
    if (stat(g_loader, &ld) == 0 &&
        (program_file(execfn, &ld, g_exe) == 0 || program_file(arg0, &ld, g_exe) == 0))
        return 0;
    g_exe[0] = '\0';
    snprintf(g_why, sizeof g_why,
             "the executable's location could not be read: amptrain was started through the "
             "dynamic loader %s, and neither AT_EXECFN (%s) nor argv[0] (%s) names the program's "
             "file; run amptrain directly", g_loader, execfn ? execfn : "unset", arg0 ? arg0 : "unset");
    g_loader[0] = '\0';
    return -1;
}

const char *amp_self_exe(const char **why) {
    if (!g_looked) amp_self_exe_init(NULL);
    if (!g_exe[0] && why) *why = g_why;
    return g_exe[0] ? g_exe : NULL;
}

int amp_self_exe_dir(char *out, size_t len) {
    if (!amp_self_exe(NULL) || strlen(g_exe) >= len) return -1;
    snprintf(out, len, "%s", g_exe);
    char *slash = strrchr(out, '/');
    if (slash) *slash = '\0';
    return 0;
}

const char *amp_self_loader(void) { return amp_self_exe(NULL) && g_loader[0] ? g_loader : NULL; }

int amp_self_argv(const char *name, const char **argv, const char **program) {
    if (!amp_self_exe(NULL)) return -1;
    if (!g_loader[0]) {
        argv[0] = name ? name : g_exe;
        *program = g_exe;
        return 1;
    }
    argv[0] = g_loader;
    argv[1] = g_exe;
    *program = g_loader;
    return 2;
}

int amp_self_execv(char *const *argv, char *why, size_t whylen) {
    int argc = 0;
    while (argv[argc]) argc++;
    const char *args[argc + 3], *program = NULL, *gone = ""; /* no malloc: also after fork */
    int n = amp_self_argv(argv[0], args, &program);
    if (n < 0) {
        amp_self_exe(&gone);
        if (why) snprintf(why, whylen, "%s", gone);
        return -1;
    }
    memcpy(args + n, argv + 1, (size_t)argc * sizeof *args); /* with the NULL */
    execv(program, (char *const *)args);
    if (why) snprintf(why, whylen, "execv %s: %s", program, strerror(errno));
    return -1;
}
