/* Datasets: Fashion-MNIST IDX reader, the tiny-gradient synthetic task and
 * the deterministic epoch order. See data.h for the API. */
#include "data.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data_id.h"
#include "io/file.h"
#include "util/log.h"
#include "util/rng.h"

#define AMP_DATA_INSTALL_HINT \
    "install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or set [data] path"
#define AMP_DATA_DAMAGED_HINT "the file is damaged; reinstall dataset-fashion-mnist"

#define AMP_IDX_IMAGES_MAGIC 0x00000803u /* unsigned byte, 3 dims */
#define AMP_IDX_LABELS_MAGIC 0x00000801u /* unsigned byte, 1 dim */
#define AMP_FMNIST_CLASSES 10

/* Stream tags: one user seed feeds several independent generators. */
#define AMP_STREAM_TINY_MEANS 0x4d45414e53ULL /* "MEANS" */
#define AMP_STREAM_TINY_TRAIN 0x545241494eULL /* "TRAIN" */
#define AMP_STREAM_TINY_TEST 0x54455354ULL    /* "TEST" */
#define AMP_STREAM_ORDER 0x4f52444552000000ULL /* "ORDER", epoch in the low bits */

/* ---- IDX files --------------------------------------------------------- */

typedef struct idx_file {
    gzFile f;
    char path[4096];
    uint32_t magic;
    uint32_t dims[3];
    int64_t header_bytes;
    amp_data_source src; /* the file as opened */
} idx_file;

/* Reads up to len bytes; returns the count read (short only at the end of
 * the data) or -1 on a read/decompression error with a message in err. */
static int64_t idx_read(idx_file *fi, void *buf, int64_t len, char *err, size_t errlen)
{
    int64_t done = 0;
    while (done < len) {
        int64_t want = len - done;
        if (want > (1 << 30))
            want = 1 << 30; /* gzread takes an unsigned int and returns an int */
        int got = gzread(fi->f, (unsigned char *)buf + done, (unsigned)want);
        if (got < 0) {
            int zerr = 0;
            const char *msg = gzerror(fi->f, &zerr);
            size_t pl = strlen(fi->path);
            if (strncmp(msg, fi->path, pl) == 0 && strncmp(msg + pl, ": ", 2) == 0)
                msg += pl + 2; /* zlib prefixes the path; we already say it */
            amp_set_err(err, errlen, "%s: read error: %s; " AMP_DATA_DAMAGED_HINT, fi->path,
                      zerr == Z_ERRNO ? strerror(errno) : msg);
            return -1;
        }
        done += got;
        if (got < want)
            break;
    }
    return done;
}

/* " (the gzip stream ends early)" when zlib saw a cut-off stream. */
static const char *idx_eof_note(idx_file *fi)
{
    int zerr = 0;
    gzerror(fi->f, &zerr);
    return zerr == Z_BUF_ERROR ? " (the gzip stream ends early)" : "";
}

static void idx_close(idx_file *fi)
{
    if (fi->f)
        gzclose(fi->f);
    fi->f = NULL;
}

/* Makes room for `need` elements of el bytes in *p (capacity *cap),
 * doubling but never past `limit`. The IDX buffers grow with the bytes that
 * actually arrive, so a header that claims billions of examples in a short
 * file costs an error message, not a giant allocation. */
static int grow_to(void **p, int64_t *cap, int64_t need, int64_t limit, size_t el)
{
    if (need <= *cap)
        return 0;
    int64_t nc = *cap ? *cap : 1 << 16;
    while (nc < need)
        nc *= 2;
    if (nc > limit)
        nc = limit;
    void *q = realloc(*p, (size_t)nc * el);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static int path_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* dir/base.gz, or dir/base when the .gz is missing, into out. */
static int idx_find(char *out, size_t outlen, const char *dir, const char *base, char *err,
                    size_t errlen)
{
    char gz[4096], raw[4096];
    if ((size_t)snprintf(gz, sizeof gz, "%s/%s.gz", dir, base) >= sizeof gz ||
        (size_t)snprintf(raw, sizeof raw, "%s/%s", dir, base) >= sizeof raw ||
        strlen(gz) >= outlen) {
        amp_set_err(err, errlen, "%s/%s: path too long; set a shorter [data] path", dir, base);
        return -1;
    }
    if (path_exists(gz)) {
        snprintf(out, outlen, "%s", gz);
    } else if (path_exists(raw)) {
        snprintf(out, outlen, "%s", raw); /* gzread passes plain files through */
    } else {
        amp_set_err(err, errlen, "%s: not found (nor %s); " AMP_DATA_INSTALL_HINT, gz, raw);
        return -1;
    }
    return 0;
}

/* Opens path (gzip or plain) and reads and checks the IDX header against
 * `magic`. */
static int idx_open(idx_file *fi, const char *path, uint32_t magic, char *err, size_t errlen)
{
    memset(fi, 0, sizeof *fi);
    if ((size_t)snprintf(fi->path, sizeof fi->path, "%s", path) >= sizeof fi->path) {
        amp_set_err(err, errlen, "%.200s...: path too long", path);
        return -1;
    }
    /* Regular files only: a FIFO would block the open, a device never end. */
    char why[4200];
    struct stat st;
    int fd = amp_file_open_read(fi->path, &st, why, sizeof why);
    if (fd < 0) {
        amp_set_err(err, errlen, "%s; give [data] path a folder of IDX files", why);
        return -1;
    }
    amp_data_source_note(&fi->src, fi->path, &st);
    errno = 0;
    fi->f = gzdopen(fd, "rb");
    if (!fi->f) {
        amp_set_err(err, errlen, "%s: cannot open: %s", fi->path,
                  errno ? strerror(errno) : "out of memory");
        close(fd);
        return -1;
    }
    gzbuffer(fi->f, 1u << 17);

    unsigned char hdr[16];
    int ndims = (int)(magic & 0xffu);
    int64_t hlen = 4 + 4 * (int64_t)ndims;
    int64_t got = idx_read(fi, hdr, 4, err, errlen);
    if (got < 0)
        goto fail;
    if (got < 4) {
        amp_set_err(err, errlen, "%s: too short for an IDX header (%lld bytes)%s; " AMP_DATA_DAMAGED_HINT,
                  fi->path, (long long)got, idx_eof_note(fi));
        goto fail;
    }
    fi->magic = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    if (fi->magic != magic) {
        const char *what = magic == AMP_IDX_IMAGES_MAGIC ? "an IDX image file" : "an IDX label file";
        const char *looks = fi->magic == AMP_IDX_LABELS_MAGIC   ? "; it looks like a label file"
                            : fi->magic == AMP_IDX_IMAGES_MAGIC ? "; it looks like an image file"
                                                                : "";
        amp_set_err(err, errlen, "%s: bad magic 0x%08x (expected 0x%08x, %s)%s; check [data] path or "
                  "reinstall dataset-fashion-mnist",
                  fi->path, fi->magic, magic, what, looks);
        goto fail;
    }
    got = idx_read(fi, hdr + 4, hlen - 4, err, errlen);
    if (got < 0)
        goto fail;
    if (got < hlen - 4) {
        amp_set_err(err, errlen, "%s: truncated IDX header (%lld of %lld bytes)%s; " AMP_DATA_DAMAGED_HINT,
                  fi->path, (long long)(4 + got), (long long)hlen, idx_eof_note(fi));
        goto fail;
    }
    for (int d = 0; d < ndims; d++) {
        const unsigned char *p = hdr + 4 + 4 * d;
        fi->dims[d] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    }
    fi->header_bytes = hlen;
    return 0;
fail:
    idx_close(fi);
    return -1;
}

/* After the payload: the file must end here. */
static int idx_expect_end(idx_file *fi, unsigned char *scratch, int64_t scratch_len,
                          const char *declared, char *err, size_t errlen)
{
    int64_t extra = 0;
    for (;;) {
        int64_t got = idx_read(fi, scratch, scratch_len, err, errlen);
        if (got < 0)
            return -1;
        extra += got;
        if (got < scratch_len)
            break;
    }
    if (extra > 0) {
        amp_set_err(err, errlen,
                  "%s: %lld trailing bytes after the %s the header declares; " AMP_DATA_DAMAGED_HINT,
                  fi->path, (long long)extra, declared);
        return -1;
    }
    return 0;
}

int amp_dataset_load_fashion_mnist(amp_dataset *out, const char *dir, const char *split,
                                   int64_t limit, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!dir || !*dir)
        dir = AMP_FASHION_MNIST_DIR;
    const char *prefix;
    if (split && strcmp(split, "train") == 0) {
        prefix = "train";
    } else if (split && strcmp(split, "test") == 0) {
        prefix = "t10k";
    } else {
        amp_set_err(err, errlen, "fashion-mnist: unknown split '%s' (expected train or test)",
                  split ? split : "(null)");
        return -1;
    }
    char base[64], images[4096], labels[4096];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    if (idx_find(images, sizeof images, dir, base, err, errlen))
        return -1;
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    if (idx_find(labels, sizeof labels, dir, base, err, errlen))
        return -1;
    return amp_dataset_load_idx(out, images, labels, limit, err, errlen);
}

int amp_dataset_load_idx(amp_dataset *out, const char *images_path, const char *labels_path,
                         int64_t limit, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    idx_file img, lab;
    unsigned char *scratch = NULL;
    const int64_t scratch_len = 1 << 20;
    memset(&lab, 0, sizeof lab);

    if (idx_open(&img, images_path, AMP_IDX_IMAGES_MAGIC, err, errlen))
        return -1;
    if (idx_open(&lab, labels_path, AMP_IDX_LABELS_MAGIC, err, errlen))
        goto fail;

    int64_t n = img.dims[0];
    uint32_t rows = img.dims[1], cols = img.dims[2];
    if (n == 0 || rows == 0 || cols == 0 || (uint64_t)rows * cols > INT_MAX) {
        amp_set_err(err, errlen, "%s: header declares %lld images of %ux%u, which is not a usable dataset; "
                  AMP_DATA_DAMAGED_HINT, img.path, (long long)n, rows, cols);
        goto fail;
    }
    if ((int64_t)lab.dims[0] != n) {
        amp_set_err(err, errlen, "%s: %lld images but %s: %lld labels; both files must come from the same "
                  "split of the same dataset", img.path, (long long)n, lab.path, (long long)lab.dims[0]);
        goto fail;
    }
    int features = (int)(rows * cols);
    int64_t keep = limit > 0 && limit < n ? limit : n;
    if ((uint64_t)keep * (uint64_t)features > SIZE_MAX / sizeof(float)) {
        amp_set_err(err, errlen, "%s: %lld images of %d pixels do not fit in memory", img.path,
                  (long long)keep, features);
        goto fail;
    }

    /* Labels: every one is checked, but only the kept ones are stored; the
     * rest stream through scratch. A .gz of 200M labels (200 KB compressed)
     * with train_limit = 1024 costs 4 KB, not 200 MB. out->y grows with the
     * labels that actually arrive (see grow_to). */
    int64_t y_cap = 0, got = 0, nlab = 0, x_cap = 0;
    scratch = malloc((size_t)scratch_len);
    if (!scratch) {
        amp_set_err(err, errlen, "fashion-mnist: out of memory");
        goto fail;
    }
    while (nlab < n) {
        int64_t want = n - nlab < scratch_len ? n - nlab : scratch_len;
        got = idx_read(&lab, scratch, want, err, errlen);
        if (got < 0)
            goto fail;
        for (int64_t k = 0; k < got; k++) {
            if (scratch[k] >= AMP_FMNIST_CLASSES) {
                amp_set_err(err, errlen, "%s: label %u at index %lld is out of range 0..%d; "
                          AMP_DATA_DAMAGED_HINT, lab.path, scratch[k], (long long)(nlab + k),
                          AMP_FMNIST_CLASSES - 1);
                goto fail;
            }
        }
        int64_t upto = nlab + got < keep ? nlab + got : keep;
        if (upto > nlab) {
            if (grow_to((void **)&out->y, &y_cap, upto, keep, sizeof(int32_t))) {
                amp_set_err(err, errlen, "%s: out of memory for %lld labels", lab.path,
                            (long long)keep);
                goto fail;
            }
            for (int64_t k = 0; nlab + k < upto; k++)
                out->y[nlab + k] = scratch[k];
        }
        nlab += got;
        if (got < want) {
            amp_set_err(err, errlen, "%s: truncated: header says %lld labels (%lld bytes) but only %lld "
                      "follow the %lld-byte header%s; " AMP_DATA_DAMAGED_HINT, lab.path, (long long)n,
                      (long long)n, (long long)nlab, (long long)lab.header_bytes, idx_eof_note(&lab));
            goto fail;
        }
    }
    if (idx_expect_end(&lab, scratch, scratch_len, "labels", err, errlen))
        goto fail;

    /* Pixels: stream the whole payload through scratch so that a limited
     * load still validates the file's size without holding all of it. */
    float lut[256];
    for (int b = 0; b < 256; b++)
        lut[b] = (float)b / 255.0f;
    const int64_t total = n * features, kept = keep * features;
    int64_t done = 0;
    while (done < total) {
        int64_t want = total - done < scratch_len ? total - done : scratch_len;
        got = idx_read(&img, scratch, want, err, errlen);
        if (got < 0)
            goto fail;
        int64_t upto = done + got < kept ? done + got : kept;
        if (upto > done && grow_to((void **)&out->x, &x_cap, upto, kept, sizeof(float))) {
            amp_set_err(err, errlen, "%s: out of memory for %lld images of %d pixels", img.path,
                      (long long)keep, features);
            goto fail;
        }
        for (int64_t k = 0; k < got && done + k < kept; k++)
            out->x[done + k] = lut[scratch[k]];
        done += got;
        if (got < want) {
            amp_set_err(err, errlen, "%s: truncated: header says %lld images of %ux%u (%lld bytes) but only "
                      "%lld follow the %lld-byte header%s; " AMP_DATA_DAMAGED_HINT, img.path, (long long)n,
                      rows, cols, (long long)total, (long long)done, (long long)img.header_bytes,
                      idx_eof_note(&img));
            goto fail;
        }
    }
    if (idx_expect_end(&img, scratch, scratch_len, "images", err, errlen))
        goto fail;

    idx_close(&img);
    idx_close(&lab);
    free(scratch);
    out->src[0] = img.src;
    out->src[1] = lab.src;
    out->n = keep;
    out->features = features;
    out->classes = AMP_FMNIST_CLASSES;
    out->rows = (int)rows;
    out->cols = (int)cols;
    return 0;
fail:
    idx_close(&img);
    idx_close(&lab);
    free(scratch);
    amp_dataset_free(out);
    return -1;
}

int amp_dataset_check_splits(const amp_dataset *train, const amp_dataset *test, const char *dir,
                             char *err, size_t errlen)
{
    if (train->features == test->features && train->classes == test->classes)
        return 0;
    amp_set_err(err, errlen, "%s: the train split has %dx%d images but the test split %dx%d; both must "
              "come from the same dataset", dir ? dir : AMP_FASHION_MNIST_DIR, train->rows, train->cols,
              test->rows, test->cols);
    return -1;
}

/* ---- the tiny-gradient synthetic task ---------------------------------- */

/* Class c has a mean vector mu_c ~ N(0,1)^features drawn from (seed,
 * "MEANS"), the same for both splits; each example draws its label and
 * noise from the split's own stream and is x = (mu_y + 0.5 * N(0,1)) *
 * input_scale. At input_scale 1 the classes are far apart and a small MLP
 * learns them easily in FP32.
 *
 * The point is input_scale. The first layer's weight gradient is
 * dL/dW1 = x^T delta1, proportional to input_scale (as is the next layer's
 * while the hidden activations stay that small). Measured for a 32-64-10
 * ReLU MLP, He init, batch 128, batch-mean cross-entropy: median |dW1| is
 * about 2^-18 at scale 2^-12 (99% of it FP16-subnormal, so it keeps only a
 * few bits) and about 2^-26 at 2^-20 (69% flushed to zero in FP16). So
 * FP16 without loss scaling starves the first layer, a loss scale (2^16 by
 * default) lifts those gradients back into range, and BF16 (FP32's exponent
 * range) keeps them. Below 2^-14 x itself is FP16-subnormal too.
 *
 * Each value is computed as the float v = (float)(mu + 0.5 * noise) and then
 * multiplied by (float)input_scale, so a power-of-two scale is exact (barring
 * float underflow/overflow) and the data at scale s are the data at scale 1
 * times s, bit for bit. */
int amp_dataset_make_tiny(amp_dataset *out, const char *split, int64_t n, int features,
                          int classes, double input_scale, uint64_t seed, char *err,
                          size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint64_t stream;
    if (split && strcmp(split, "train") == 0) {
        stream = AMP_STREAM_TINY_TRAIN;
    } else if (split && strcmp(split, "test") == 0) {
        stream = AMP_STREAM_TINY_TEST;
    } else {
        amp_set_err(err, errlen, "tiny: unknown split '%s' (expected train or test)",
                  split ? split : "(null)");
        return -1;
    }
    if (n <= 0 || features <= 0 || classes < 2) {
        amp_set_err(err, errlen, "tiny: need n > 0, features > 0 and classes >= 2 (got %lld, %d, %d)",
                  (long long)n, features, classes);
        return -1;
    }
    float scale = (float)input_scale;
    if (!isfinite(input_scale) || input_scale <= 0 || !isfinite(scale) || scale == 0.0f) {
        amp_set_err(err, errlen, "tiny: input_scale %g must be a positive finite float", input_scale);
        return -1;
    }
    if ((uint64_t)n > SIZE_MAX / sizeof(float) / (uint64_t)features ||
        (uint64_t)classes > SIZE_MAX / sizeof(double) / (uint64_t)features) {
        amp_set_err(err, errlen, "tiny: %lld x %d examples do not fit in memory", (long long)n, features);
        return -1;
    }

    double *mu = malloc((size_t)classes * (size_t)features * sizeof(double));
    out->x = malloc((size_t)n * (size_t)features * sizeof(float));
    out->y = malloc((size_t)n * sizeof(int32_t));
    if (!mu || !out->x || !out->y) {
        free(mu);
        amp_dataset_free(out);
        amp_set_err(err, errlen, "tiny: out of memory for %lld x %d examples", (long long)n, features);
        return -1;
    }

    amp_rng r;
    amp_rng_seed_stream(&r, seed, AMP_STREAM_TINY_MEANS);
    for (size_t k = 0; k < (size_t)classes * (size_t)features; k++)
        mu[k] = amp_rng_normal(&r);

    amp_rng_seed_stream(&r, seed, stream);
    for (int64_t i = 0; i < n; i++) {
        int32_t c = (int32_t)amp_rng_below(&r, (uint64_t)classes);
        const double *m = mu + (size_t)c * (size_t)features;
        float *xi = out->x + (size_t)i * (size_t)features;
        out->y[i] = c;
        for (int f = 0; f < features; f++) {
            float v = (float)(m[f] + 0.5 * amp_rng_normal(&r));
            xi[f] = v * scale;
        }
    }
    free(mu);
    out->n = n;
    out->features = features;
    out->classes = classes;
    return 0;
}

void amp_dataset_free(amp_dataset *d)
{
    if (!d)
        return;
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}

/* ---- epoch order -------------------------------------------------------- */

void amp_dataset_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch, int shuffle)
{
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    if (!shuffle)
        return;
    amp_rng r;
    amp_rng_seed_stream(&r, seed, AMP_STREAM_ORDER ^ (uint64_t)epoch);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)amp_rng_below(&r, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void amp_dataset_gather(float *x_out, int32_t *y_out, const amp_dataset *d,
                        const int64_t *perm, int64_t start, int64_t count)
{
    size_t row = (size_t)d->features;
    for (int64_t k = 0; k < count; k++) {
        int64_t src = perm ? perm[start + k] : start + k;
        memcpy(x_out + (size_t)k * row, d->x + (size_t)src * row, row * sizeof(float));
        y_out[k] = d->y[src];
    }
}
