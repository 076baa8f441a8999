/* Standard output as the commands' result: text that never reached it (a
 * full device, a closed descriptor, a failing disk) makes the command fail
 * with a message, never exit 0 as if it had been printed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

void amp_cli_hold_std_fds(void) {
    /* A closed 1 or 2 would be the number the next open() returns, and the
     * text meant for the terminal would land in that file (a checkpoint, a
     * log). /dev/null opened read-only takes the place: a write to it still
     * fails (EBADF), as it did on the closed descriptor. */
    for (int fd = 1; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int h = open("/dev/null", O_RDONLY);
        if (h >= 0 && h != fd) { /* fd 0 was closed as well and took it */
            dup2(h, fd);
            close(h);
        }
    }
}

/* The reason of the first failed flush: glibc drops the text an explicit
 * fflush could not write, so the close at the end would not see it again. */
static int first_errno;

static void remember(void) {
    if (!first_errno) first_errno = errno ? errno : EIO;
}

int amp_cli_flush_stdout(void) {
    errno = 0;
    if (fflush(stdout) == 0) return 0;
    remember();
    return -1;
}

int amp_cli_close_stdout(int code) {
    int failed = ferror(stdout) != 0;
    errno = 0;
    /* fclose writes what is still buffered (after a failed write that
     * filled the buffer glibc keeps the rest, and the retry says why) */
    if (fclose(stdout) != 0) {
        failed = 1;
        remember();
    }
    if (!failed) return code;
    fprintf(stderr, "amptrain: writing standard output failed: %s\n",
            strerror(first_errno ? first_errno : EIO));
    return code ? code : 1;
}
