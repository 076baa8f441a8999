/* Where this program's executable is, found once at start-up: the built-in
 * plugins, the CUDA module and the shipped data sit beside it, and `ab` and
 * the start-up restart run it again. /proc/self/exe names the file the
 * kernel ran, which is the dynamic loader when the program was started
 * through it (`/lib64/ld-linux-x86-64.so.2 amptrain train ...`): then the
 * program is the file the loader was given (AT_EXECFN, else argv[0]), and
 * it is run again through the same loader. Without a readable /proc the
 * location is unknown, and what needs it says so. */
#ifndef AMP_SELF_EXE_H
#define AMP_SELF_EXE_H

#include <stddef.h>

/* At the start of main, before any chdir. 0, or -1 when the location could
 * not be read (amp_self_exe then gives the reason). */
int amp_self_exe_init(char **argv);

/* The executable's real path; NULL before init or when unknown, with
 * "the executable's location could not be read (...)" in why (may be NULL). */
const char *amp_self_exe(const char **why);

/* The executable's folder into out; -1 when unknown (see amp_self_exe). */
int amp_self_exe_dir(char *out, size_t len);

/* The dynamic loader the program was started through, NULL when the kernel
 * started it (the usual case). */
const char *amp_self_loader(void);

/* The program and the first arguments that run this executable again:
 * argv[0..n) = {loader, exe} through the loader, else {name} (the
 * executable's path when name is NULL, as another launcher such as mpirun
 * needs); *program is what to execv. Returns n (at most 2), or -1 when the
 * location is unknown. */
int amp_self_argv(const char *name, const char **argv, const char **program);

/* execv of this executable (through the loader when started so) with
 * argv[1..] (argv[0] is replaced); returns -1 with why (when not NULL)
 * when it failed. */
int amp_self_execv(char *const *argv, char *why, size_t whylen);

#endif
