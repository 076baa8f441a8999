/* amp_scaler_block.so: scale 1, and an `update` that can hold the process
 * inside a training step for as long as a test needs, so that signals and
 * concurrent runs meet it at a known point instead of a guessed moment:
 *   AMP_BLOCK_STEP     the 0-based step whose update blocks (unset: none)
 *   AMP_BLOCK_INIT     a subcommand (`train`): init blocks instead, in a
 *                      process running it (not in `ab`, which also loads
 *                      plugins to check its configs), before any step
 *   AMP_BLOCK_READY    a file it creates once it is blocked
 *   AMP_BLOCK_RELEASE  the file whose appearance lets it go on (it gives up
 *                      after 60 s, failing the update, so nothing hangs)
 * The state (how many updates ran) is saved, so runs with checkpoints
 * resume. A test plugin: it reads the environment and touches files, which
 * real plugins never do. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "amptrain/plugin.h"

typedef struct block_state {
    const amp_host_api *host;
    long long updates;
} block_state;

/* Creates AMP_BLOCK_READY, then waits for AMP_BLOCK_RELEASE; 0, or -1
 * after 60 s. */
static int hold(void)
{
    const char *ready = getenv("AMP_BLOCK_READY"), *release = getenv("AMP_BLOCK_RELEASE");
    if (ready) {
        int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) close(fd);
    }
    struct timespec tick = {0, 5 * 1000 * 1000};
    int waited = 0;
    while (access(release, F_OK) != 0) {
        if (++waited > 12000) return -1;
        nanosleep(&tick, NULL);
    }
    return 0;
}

/* Whether this process's first argument is cmd (/proc/self/cmdline). */
static int running(const char *cmd)
{
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    size_t first = strlen(buf) + 1;
    return first < (size_t)n && strcmp(buf + first, cmd) == 0;
}

static int bl_init(const amp_host_api *host, void **self)
{
    const char *init = getenv("AMP_BLOCK_INIT");
    if (init && getenv("AMP_BLOCK_RELEASE") && running(init) && hold() != 0) {
        host->error(host->ctx, "block: %s never appeared", getenv("AMP_BLOCK_RELEASE"));
        return 1;
    }
    block_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "out of memory");
        return 1;
    }
    s->host = host;
    *self = s;
    return 0;
}

static void bl_fini(void *self) { free(self); }
static double bl_get_scale(void *self) { (void)self; return 1.0; }

static int bl_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    block_state *s = self;
    const char *at = getenv("AMP_BLOCK_STEP"), *release = getenv("AMP_BLOCK_RELEASE");
    if (at && release && stats->step == atoll(at) && hold() != 0) {
        s->host->error(s->host->ctx, "block: %s never appeared", release);
        return 1;
    }
    s->updates++;
    *skip = stats->found_inf != 0;
    return 0;
}

static int bl_save(void *self, void *buf, size_t cap, size_t *len)
{
    block_state *s = self;
    *len = sizeof s->updates;
    if (buf && cap >= sizeof s->updates) memcpy(buf, &s->updates, sizeof s->updates);
    return 0;
}

static int bl_load(void *self, const void *buf, size_t len)
{
    block_state *s = self;
    if (len != sizeof s->updates) {
        s->host->error(s->host->ctx, "block: state of %zu bytes", len);
        return 1;
    }
    memcpy(&s->updates, buf, sizeof s->updates);
    return 0;
}

static const amp_scaler_vtable bl_vtable = {(uint32_t)sizeof(amp_scaler_vtable), bl_init, bl_fini,
                                            bl_get_scale, bl_update, bl_save, bl_load};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "block", "1.0.0",
                  "test: scale 1; update blocks at a step until a file appears", &bl_vtable);
