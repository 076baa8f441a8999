/* Scaler "dynamic": PyTorch GradScaler's update rule (torch/amp/grad_scaler.py,
 * aten/src/ATen/native/cuda/AmpKernels.cu amp_update_scale_cuda_kernel):
 *   found_inf: scale *= backoff, tracker = 0
 *   clean:     tracker += 1; at growth_interval: scale *= growth (only when the
 *              result is finite), tracker = 0
 * No minimum scale: repeated overflow can drive the scale to 0, which the
 * host reports (as PyTorch users see it collapse). */
#include <stdlib.h>

#include "amptrain/plugin.h"
#include "scaler_growth.h"

#define DYN_STATE_VERSION 1u
/* the tracker's head (magic, version, scale, growth_tracker), then growth,
 * backoff, interval */
#define DYN_STATE_SIZE (AMP_SCALER_TRACKER_HEAD + 3 * 8)
static const char dyn_magic[4] = {'a', 'm', 'p', 'D'};

typedef struct dyn_state {
    const amp_host_api *host;
    amp_scaler_tracker t;
    /* PyTorch keeps the factors as double kernel arguments: the product with
     * the float32 scale is formed in double and rounded to float32 when
     * stored. We do the same so trajectories match bit for bit. */
    double growth;
    double backoff;
} dyn_state;

static int dyn_init(const amp_host_api *host, void **self)
{
    amp_scaler_growth g = {65536.0, 2.0, 0.5, 2000};
    if (amp_scaler_read_growth(host, &g) || amp_scaler_check_growth_keys(host, &g))
        return -1;
    dyn_state *s = calloc(1, sizeof *s);
    if (!s) {
        host->error(host->ctx, "dynamic scaler: out of memory");
        return -1;
    }
    s->host = host;
    s->t = (amp_scaler_tracker){(float)g.init_scale, 0, g.growth_interval};
    s->growth = g.growth_factor;
    s->backoff = g.backoff_factor;
    *self = s;
    return 0;
}

static void dyn_fini(void *self) { free(self); }

static double dyn_get_scale(void *self) { return ((dyn_state *)self)->t.scale; }

static int dyn_update(void *self, const amp_scaler_stats *stats, int *skip)
{
    dyn_state *s = self;
    if (amp_scaler_update_begin(s->host, stats, skip, "dynamic"))
        return -1;
    if (*skip) {
        s->t.scale = (float)((double)s->t.scale * s->backoff);
        amp_scaler_tracker_overflow(&s->t);
    } else if (amp_scaler_tracker_clean(&s->t)) {
        float grown = (float)((double)s->t.scale * s->growth);
        if (isfinite(grown)) /* never grow past float32 range to inf */
            s->t.scale = grown;
    }
    return 0;
}

static int dyn_state_save(void *self, void *buf, size_t cap, size_t *len)
{
    dyn_state *s = self;
    int rc = amp_scaler_save_begin(s->host, buf, cap, len, DYN_STATE_SIZE);
    if (rc <= 0)
        return rc;
    unsigned char *p = buf;
    amp_scaler_tracker_put(p, dyn_magic, DYN_STATE_VERSION, &s->t);
    amp_le_put_f64(p + 24, s->growth);
    amp_le_put_f64(p + 32, s->backoff);
    amp_le_put_i64(p + 40, s->t.interval);
    return 0;
}

/* Restores scale, tracker and hyper-parameters, as PyTorch's
 * load_state_dict does; a hyper-parameter differing from the config is
 * logged so a changed INI on resume does not go unnoticed. */
static int dyn_state_load(void *self, const void *buf, size_t len)
{
    dyn_state *s = self;
    const amp_host_api *h = s->host;
    if (amp_scaler_load_check(h, buf, len, DYN_STATE_SIZE, dyn_magic, DYN_STATE_VERSION,
                              "dynamic"))
        return -1;
    const unsigned char *p = buf;
    double scale;
    int64_t tracker;
    amp_scaler_tracker_get(p, &scale, &tracker);
    double growth = amp_le_get_f64(p + 24);
    double backoff = amp_le_get_f64(p + 32);
    int64_t interval = amp_le_get_i64(p + 40);
    /* Scale 0 is a state PyTorch can reach (no minimum), so allow >= 0 here;
     * the host stops on a zero scale either way. */
    if (!(scale >= 0.0) || !isfinite((float)scale) || (double)(float)scale != scale ||
        !isfinite(growth) || !(growth > 1.0) || !(backoff > 0.0 && backoff < 1.0) ||
        !amp_scaler_tracker_valid(tracker, interval)) {
        h->error(h->ctx,
                 "dynamic scaler state: invalid values (scale %g, growth_tracker %lld, growth "
                 "%g, backoff %g, interval %lld)",
                 scale, (long long)tracker, growth, backoff, (long long)interval);
        return -1;
    }
    if (growth != s->growth || backoff != s->backoff || interval != s->t.interval)
        h->log(h->ctx, AMP_LOG_WARN,
               "checkpoint hyper-parameters (growth_factor %g, backoff_factor %g, "
               "growth_interval %lld) replace the config's (%g, %g, %lld)",
               growth, backoff, (long long)interval, s->growth, s->backoff,
               (long long)s->t.interval);
    s->t = (amp_scaler_tracker){(float)scale, tracker, interval};
    s->growth = growth;
    s->backoff = backoff;
    return 0;
}

static const amp_scaler_vtable dyn_vtable = {
    (uint32_t)sizeof(amp_scaler_vtable), dyn_init, dyn_fini, dyn_get_scale, dyn_update,
    dyn_state_save, dyn_state_load};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_SCALER, "dynamic", "1.0.0",
                  "PyTorch GradScaler: back off on overflow, grow after growth_interval "
                  "clean steps",
                  &dyn_vtable);
