/* Datasets: the IDX reader and its errors (on small files written here),
 * real Fashion-MNIST when installed, the tiny-gradient task, the epoch
 * order and gather, and the RNG they share. Returns 77 (skip) only when
 * everything else passed and Fashion-MNIST is not installed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/data.h"
#include "util/rng.h"
#include "expect.h"



/* ---- RNG ---------------------------------------------------------------- */

static void test_rng(void)
{
    amp_rng a, b;
    amp_rng_seed(&a, 7);
    amp_rng_seed(&b, 7);
    int same = 1;
    for (int i = 0; i < 100; i++)
        same &= amp_rng_next(&a) == amp_rng_next(&b);
    EXPECT(same, "same seed gave different streams");
    amp_rng_seed(&b, 8);
    EXPECT(amp_rng_next(&a) != amp_rng_next(&b), "seeds 7 and 8 agree");

    /* Counts per bucket of below(10) and moments of uniform/normal: loose
     * bounds (many sigma) that a broken generator still misses. */
    amp_rng_seed(&a, 1);
    int hist[10] = {0};
    double su = 0, sn = 0, sn2 = 0, umin = 1, umax = 0;
    const int N = 100000;
    for (int i = 0; i < N; i++) {
        uint64_t k = amp_rng_below(&a, 10);
        if (k >= 10) {
            EXPECT(k < 10, "below(10) gave %llu", (unsigned long long)k);
            break;
        }
        hist[k]++;
        double u = amp_rng_uniform(&a);
        su += u;
        umin = u < umin ? u : umin;
        umax = u > umax ? u : umax;
        double z = amp_rng_normal(&a);
        sn += z;
        sn2 += z * z;
    }
    for (int k = 0; k < 10; k++)
        EXPECT(abs(hist[k] - N / 10) < 600, "below(10) bucket %d has %d of %d", k, hist[k], N);
    EXPECT(umin >= 0 && umax < 1, "uniform out of [0,1): %g..%g", umin, umax);
    EXPECT(fabs(su / N - 0.5) < 0.01, "uniform mean %g", su / N);
    EXPECT(fabs(sn / N) < 0.02, "normal mean %g", sn / N);
    EXPECT(fabs(sn2 / N - 1.0) < 0.03, "normal variance %g", sn2 / N);
    EXPECT(amp_rng_below(&a, 1) == 0 && amp_rng_below(&a, 0) == 0, "below(1)/below(0) not 0");
}

/* ---- epoch order and gather --------------------------------------------- */

static int is_perm(const int64_t *p, int64_t n)
{
    char *seen = calloc((size_t)n + 1, 1);
    int ok = seen != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]])
            ok = 0;
        else
            seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

static void test_order(void)
{
    enum { N = 1000 };
    static int64_t p1[N], p2[N], p3[N], p4[N];
    amp_dataset_order(p1, N, 42, 0, 1);
    amp_dataset_order(p2, N, 42, 0, 1);
    amp_dataset_order(p3, N, 42, 1, 1);
    amp_dataset_order(p4, N, 43, 0, 1);
    EXPECT(is_perm(p1, N) && is_perm(p3, N) && is_perm(p4, N), "order is not a permutation");
    EXPECT(memcmp(p1, p2, sizeof p1) == 0, "same (seed, epoch) gave different orders");
    EXPECT(memcmp(p1, p3, sizeof p1) != 0, "epochs 0 and 1 have the same order");
    EXPECT(memcmp(p1, p4, sizeof p1) != 0, "seeds 42 and 43 have the same order");
    int fixed = 0;
    for (int i = 0; i < N; i++)
        fixed += p1[i] == i;
    EXPECT(fixed < 20, "shuffle left %d of %d in place", fixed, N);

    amp_dataset_order(p2, N, 42, 0, 0);
    int ident = 1;
    for (int i = 0; i < N; i++)
        ident &= p2[i] == i;
    EXPECT(ident, "shuffle=0 is not the identity");

    int64_t one = -1;
    amp_dataset_order(&one, 1, 42, 3, 1);
    EXPECT(one == 0, "n=1 order gave %lld", (long long)one);
    amp_dataset_order(NULL, 0, 42, 3, 1); /* n = 0 touches nothing */
}

/* ---- tiny-gradient task ------------------------------------------------- */

static int nearest_mean(const float *means, const float *x, int classes, int features)
{
    int best = 0;
    double bestd = INFINITY;
    for (int c = 0; c < classes; c++) {
        double d = 0;
        for (int f = 0; f < features; f++) {
            double t = (double)x[f] - means[c * features + f];
            d += t * t;
        }
        if (d < bestd) {
            bestd = d;
            best = c;
        }
    }
    return best;
}

static void test_tiny(void)
{
    char err[512];
    const int64_t n = 2000;
    const int F = 32, C = 10;
    amp_dataset a, b, c, t, s;
    int rc = amp_dataset_make_tiny(&a, "train", n, F, C, 1.0, 42, err, sizeof err);
    EXPECT(rc == 0, "make_tiny: %s", err);
    if (rc)
        return;
    EXPECT(a.n == n && a.features == F && a.classes == C && a.rows == 0, "tiny shape");
    amp_dataset_make_tiny(&b, "train", n, F, C, 1.0, 42, err, sizeof err);
    amp_dataset_make_tiny(&c, "train", n, F, C, 1.0, 43, err, sizeof err);
    amp_dataset_make_tiny(&t, "test", n, F, C, 1.0, 42, err, sizeof err);
    amp_dataset_make_tiny(&s, "train", n, F, C, 0x1p-12, 42, err, sizeof err);
    size_t xb = (size_t)n * F * sizeof(float), yb = (size_t)n * sizeof(int32_t);
    EXPECT(b.x && memcmp(a.x, b.x, xb) == 0 && memcmp(a.y, b.y, yb) == 0,
          "same seed is not bitwise identical");
    EXPECT(c.x && memcmp(a.x, c.x, xb) != 0, "seeds 42 and 43 gave the same x");
    EXPECT(t.x && memcmp(a.x, t.x, xb) != 0, "train and test gave the same x");

    int hist[10] = {0}, yok = 1;
    for (int64_t i = 0; i < n; i++) {
        if (a.y[i] < 0 || a.y[i] >= C)
            yok = 0;
        else
            hist[a.y[i]]++;
    }
    EXPECT(yok, "tiny label out of range");
    for (int k = 0; k < C; k++)
        EXPECT(hist[k] > n / C / 2, "class %d has only %d of %lld examples", k, hist[k], (long long)n);

    /* Train and test share the class means: means estimated on train
     * classify test almost perfectly. */
    float *means = calloc((size_t)C * F, sizeof(float));
    int cnt[10] = {0};
    for (int64_t i = 0; i < n; i++) {
        cnt[a.y[i]]++;
        for (int f = 0; f < F; f++)
            means[a.y[i] * F + f] += a.x[i * F + f];
    }
    for (int k = 0; k < C; k++)
        for (int f = 0; f < F; f++)
            means[k * F + f] /= cnt[k] ? cnt[k] : 1;
    int64_t correct = 0;
    for (int64_t i = 0; i < n; i++)
        correct += nearest_mean(means, t.x + i * F, C, F) == t.y[i];
    double acc = (double)correct / (double)n;
    EXPECT(acc > 0.9, "nearest train mean classifies only %.3f of test", acc);
    free(means);

    /* A power-of-two scale is exact. */
    int exact = s.x != NULL && memcmp(a.y, s.y, yb) == 0;
    for (int64_t i = 0; exact && i < n * F; i++)
        exact = s.x[i] == a.x[i] * 0x1p-12f;
    EXPECT(exact, "x at 2^-12 is not x at 1 times 2^-12");

    err[0] = 0;
    amp_dataset bad;
    EXPECT(amp_dataset_make_tiny(&bad, "valid", n, F, C, 1.0, 1, err, sizeof err) != 0 &&
              strstr(err, "valid") && bad.x == NULL,
          "bad split not rejected: %s", err);
    EXPECT(amp_dataset_make_tiny(&bad, "train", 0, F, C, 1.0, 1, err, sizeof err) != 0, "n=0 accepted");
    EXPECT(amp_dataset_make_tiny(&bad, "train", n, F, 1, 1.0, 1, err, sizeof err) != 0, "1 class accepted");
    EXPECT(amp_dataset_make_tiny(&bad, "train", n, F, C, 0.0, 1, err, sizeof err) != 0, "scale 0 accepted");
    EXPECT(amp_dataset_make_tiny(&bad, "train", n, F, C, NAN, 1, err, sizeof err) != 0, "scale NaN accepted");

    /* gather follows perm */
    int64_t perm[64];
    amp_dataset_order(perm, 64, 5, 2, 1);
    float xo[8 * 32];
    int32_t yo[8];
    amp_dataset_gather(xo, yo, &a, perm, 10, 8);
    int gok = 1;
    for (int k = 0; k < 8; k++)
        gok &= yo[k] == a.y[perm[10 + k]] &&
               memcmp(xo + k * F, a.x + perm[10 + k] * F, F * sizeof(float)) == 0;
    EXPECT(gok, "gather does not follow perm");
    amp_dataset_gather(xo, yo, &a, NULL, 5, 2);
    EXPECT(yo[1] == a.y[6] && memcmp(xo, a.x + 5 * F, 2 * F * sizeof(float)) == 0,
          "gather with perm=NULL is not the identity");

    amp_dataset_free(&a);
    amp_dataset_free(&b);
    amp_dataset_free(&c);
    amp_dataset_free(&t);
    amp_dataset_free(&s);
    amp_dataset_free(&a); /* twice is safe */
}

/* ---- IDX reader on small files ------------------------------------------ */

static char tmpdir[64];

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Writes an IDX file: header (magic, dims) then len payload bytes, gzipped
 * when gz is set. */
static void write_idx(const char *name, int gz, uint32_t magic, const uint32_t *dims,
                      const unsigned char *payload, size_t len)
{
    char path[256];
    unsigned char hdr[16];
    int nd = (int)(magic & 0xff);
    put_be32(hdr, magic);
    for (int d = 0; d < nd && d < 3; d++)
        put_be32(hdr + 4 + 4 * d, dims[d]);
    size_t hl = 4 + 4 * (size_t)(nd < 3 ? nd : 3);
    snprintf(path, sizeof path, "%s/%s%s", tmpdir, name, gz ? ".gz" : "");
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f || gzwrite(f, hdr, (unsigned)hl) != (int)hl ||
            (len && gzwrite(f, payload, (unsigned)len) != (int)len) || gzclose(f) != Z_OK) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(1);
        }
    } else {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(hdr, 1, hl, f) != hl || (len && fwrite(payload, 1, len, f) != len) ||
            fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(1);
        }
    }
}

static void rm_all(void)
{
    const char *names[] = {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    char path[256];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
        snprintf(path, sizeof path, "%s/%s.gz", tmpdir, names[i]);
        unlink(path);
    }
}

enum { TN = 5, TR = 2, TC = 3 };
static unsigned char tpix[TN * TR * TC], tlab[TN];

/* A valid 5-image 2x3 "test" split, gzipped or not. */
static void write_good(int gz)
{
    uint32_t di[3] = {TN, TR, TC}, dl[1] = {TN};
    rm_all();
    write_idx("t10k-images-idx3-ubyte", gz, 0x803, di, tpix, sizeof tpix);
    write_idx("t10k-labels-idx1-ubyte", gz, 0x801, dl, tlab, sizeof tlab);
}

/* Loads the temp "test" split and checks it fails with every needle in err. */
static void expect_fail(int line, const char *what, const char *n1, const char *n2)
{
    char err[1024] = "";
    amp_dataset d;
    int rc = amp_dataset_load_fashion_mnist(&d, tmpdir, "test", 0, err, sizeof err);
    int ok = rc != 0 && d.x == NULL && d.n == 0 && strstr(err, n1) && (!n2 || strstr(err, n2));
    if (!ok) {
        amp_test_failures++;
        fprintf(stderr, "FAIL %s:%d: %s: rc=%d err='%s' (wanted '%s'%s%s)\n", __FILE__, line, what, rc,
                err, n1, n2 ? " and " : "", n2 ? n2 : "");
    }
    if (rc == 0)
        amp_dataset_free(&d);
}

static void test_idx_files(void)
{
    char err[1024];
    amp_dataset d;
    for (int i = 0; i < (int)sizeof tpix; i++)
        tpix[i] = (unsigned char)(i * 37 % 256);
    tpix[0] = 0;
    tpix[1] = 255;
    for (int i = 0; i < TN; i++)
        tlab[i] = (unsigned char)(9 - i);

    /* good, gzipped */
    write_good(1);
    int rc = amp_dataset_load_fashion_mnist(&d, tmpdir, "test", 0, err, sizeof err);
    EXPECT(rc == 0, "good file: %s", err);
    if (rc == 0) {
        EXPECT(d.n == TN && d.features == TR * TC && d.rows == TR && d.cols == TC && d.classes == 10,
              "shape n=%lld features=%d rows=%d cols=%d", (long long)d.n, d.features, d.rows, d.cols);
        int ok = 1;
        for (int i = 0; i < TN * TR * TC; i++)
            ok &= d.x[i] == (float)tpix[i] / 255.0f;
        for (int i = 0; i < TN; i++)
            ok &= d.y[i] == tlab[i];
        EXPECT(ok && d.x[0] == 0.0f && d.x[1] == 1.0f, "values differ from the file");
        amp_dataset_free(&d);
    }
    /* limit keeps the first rows; a limit past n keeps all */
    rc = amp_dataset_load_fashion_mnist(&d, tmpdir, "test", 2, err, sizeof err);
    EXPECT(rc == 0 && d.n == 2 && d.y[1] == tlab[1] && d.x[2 * TR * TC - 1] == tpix[2 * TR * TC - 1] / 255.0f,
          "limit 2: rc=%d %s", rc, err);
    amp_dataset_free(&d);
    rc = amp_dataset_load_fashion_mnist(&d, tmpdir, "test", 100, err, sizeof err);
    EXPECT(rc == 0 && d.n == TN, "limit 100: rc=%d n=%lld", rc, (long long)d.n);
    amp_dataset_free(&d);

    /* uncompressed fallback */
    write_good(0);
    rc = amp_dataset_load_fashion_mnist(&d, tmpdir, "test", 0, err, sizeof err);
    EXPECT(rc == 0 && d.n == TN && d.y[0] == 9 && d.x[1] == 1.0f, "uncompressed: rc=%d %s", rc, err);
    amp_dataset_free(&d);

    /* missing directory / split */
    char missing[128];
    snprintf(missing, sizeof missing, "%s/nope", tmpdir);
    err[0] = 0;
    rc = amp_dataset_load_fashion_mnist(&d, missing, "train", 0, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, missing) && strstr(err, "train-images-idx3-ubyte.gz") &&
              strstr(err, "apt-get install dataset-fashion-mnist") && strstr(err, "[data] path"),
          "missing dir: %s", err);
    rc = amp_dataset_load_fashion_mnist(&d, tmpdir, "valid", 0, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, "valid"), "bad split: %s", err);

    uint32_t di[3] = {TN, TR, TC}, dl[1] = {TN};

    /* wrong magic */
    write_good(1);
    write_idx("t10k-images-idx3-ubyte", 1, 0x1234803, di, tpix, sizeof tpix);
    expect_fail(__LINE__, "bad magic", "bad magic 0x01234803", "expected 0x00000803");
    write_good(1);
    write_idx("t10k-labels-idx1-ubyte", 1, 0x803, di, tlab, sizeof tlab);
    expect_fail(__LINE__, "image file as labels", "t10k-labels-idx1-ubyte.gz: bad magic 0x00000803",
                "expected 0x00000801");

    /* truncated payload, header, and gzip stream */
    write_good(1);
    write_idx("t10k-images-idx3-ubyte", 1, 0x803, di, tpix, sizeof tpix - 1);
    expect_fail(__LINE__, "truncated images", "truncated: header says 5 images of 2x3 (30 bytes)",
                "only 29 follow");
    write_good(1);
    write_idx("t10k-labels-idx1-ubyte", 1, 0x801, dl, tlab, 3);
    expect_fail(__LINE__, "truncated labels", "t10k-labels-idx1-ubyte.gz: truncated", "only 3 follow");
    write_good(1);
    write_idx("t10k-images-idx3-ubyte", 1, 0x803, di, NULL, 0);
    {   /* header cut after the magic */
        char path[256];
        snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", tmpdir);
        gzFile f = gzopen(path, "wb");
        unsigned char m[6] = {0, 0, 8, 3, 0, 0};
        gzwrite(f, m, sizeof m);
        gzclose(f);
    }
    expect_fail(__LINE__, "truncated header", "truncated IDX header", NULL);
    write_good(1);
    {   /* a .gz cut in the middle of its compressed stream */
        char path[256];
        struct stat st;
        snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", tmpdir);
        if (stat(path, &st) == 0)
            EXPECT(truncate(path, st.st_size - 12) == 0, "truncate(%s)", path);
    }
    expect_fail(__LINE__, "cut gzip stream", "t10k-images-idx3-ubyte.gz", NULL);

    /* trailing bytes */
    unsigned char more[sizeof tpix + 3];
    memcpy(more, tpix, sizeof tpix);
    memset(more + sizeof tpix, 1, 3);
    write_good(1);
    write_idx("t10k-images-idx3-ubyte", 1, 0x803, di, more, sizeof more);
    expect_fail(__LINE__, "trailing image bytes", "3 trailing bytes", NULL);

    /* count mismatch */
    uint32_t dl4[1] = {TN - 1};
    write_good(1);
    write_idx("t10k-labels-idx1-ubyte", 1, 0x801, dl4, tlab, TN - 1);
    expect_fail(__LINE__, "count mismatch", "5 images but", "4 labels");

    /* label out of range (the last one, past a limit, still counts) */
    unsigned char badlab[TN];
    memcpy(badlab, tlab, TN);
    badlab[TN - 1] = 10;
    write_good(1);
    write_idx("t10k-labels-idx1-ubyte", 1, 0x801, dl, badlab, TN);
    expect_fail(__LINE__, "label 10", "label 10 at index 4 is out of range 0..9", NULL);

    rm_all();
}

/* ---- real Fashion-MNIST -------------------------------------------------- */

static int check_fmnist_rows(const amp_dataset *d, const char *what)
{
    int xok = 1, yok = 1, saw0 = 0, saw1 = 0;
    for (int64_t i = 0; i < d->n * d->features; i++) {
        float v = d->x[i];
        xok &= v >= 0.0f && v <= 1.0f;
        saw0 |= v == 0.0f;
        saw1 |= v == 1.0f;
    }
    for (int64_t i = 0; i < d->n; i++)
        yok &= d->y[i] >= 0 && d->y[i] < 10;
    EXPECT(xok && saw0 && saw1, "%s: pixels not in [0,1] or never 0/1", what);
    EXPECT(yok, "%s: label out of 0..9", what);
    return xok && yok;
}

static void test_fashion_mnist(void)
{
    char err[1024];
    amp_dataset tr, te, full;
    int rc = amp_dataset_load_fashion_mnist(&tr, NULL, "train", 1000, err, sizeof err);
    EXPECT(rc == 0, "train: %s", err);
    if (rc == 0) {
        EXPECT(tr.n == 1000 && tr.features == 784 && tr.rows == 28 && tr.cols == 28 && tr.classes == 10,
              "train shape n=%lld features=%d", (long long)tr.n, tr.features);
        check_fmnist_rows(&tr, "train");
        amp_dataset_free(&tr);
    }
    rc = amp_dataset_load_fashion_mnist(&te, AMP_FASHION_MNIST_DIR, "test", 1000, err, sizeof err);
    EXPECT(rc == 0, "test: %s", err);
    if (rc)
        return;
    EXPECT(te.n == 1000 && te.features == 784, "test shape");
    check_fmnist_rows(&te, "test");

    rc = amp_dataset_load_fashion_mnist(&full, NULL, "test", 0, err, sizeof err);
    EXPECT(rc == 0 && full.n == 10000, "full test: rc=%d n=%lld %s", rc, (long long)full.n, err);
    if (rc == 0) {
        int hist[10] = {0};
        for (int64_t i = 0; i < full.n; i++)
            if (full.y[i] >= 0 && full.y[i] < 10)
                hist[full.y[i]]++;
        for (int k = 0; k < 10; k++)
            EXPECT(hist[k] == 1000, "test class %d has %d examples, want 1000", k, hist[k]);
        EXPECT(memcmp(full.x, te.x, (size_t)te.n * 784 * sizeof(float)) == 0 &&
                  memcmp(full.y, te.y, (size_t)te.n * sizeof(int32_t)) == 0,
              "limited load differs from the first rows of the full load");
        amp_dataset_free(&full);
    }
    amp_dataset_free(&te);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/amp_test_data_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_rng();
    test_order();
    test_tiny();
    test_idx_files();
    rmdir(tmpdir);

    struct stat st;
    int have = stat(AMP_FASHION_MNIST_DIR, &st) == 0;
    if (have)
        test_fashion_mnist();

    if (amp_test_failures) {
        fprintf(stderr, "test_data: %d failure(s)\n", amp_test_failures);
        return 1;
    }
    if (!have) {
        printf("test_data: SKIP Fashion-MNIST checks: %s is absent "
               "(apt-get install dataset-fashion-mnist); all other checks passed\n",
               AMP_FASHION_MNIST_DIR);
        return 77;
    }
    printf("test_data: ok\n");
    return 0;
}
