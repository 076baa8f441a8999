/* A limited load of a huge IDX set holds only what it keeps (issue 15: a
 * .gz declaring 200M labels allocated for all of them even with
 * train_limit = 1024). The files are real: 200M labels and 200M 1x1 images,
 * all zeros, gzipped to about 200 KB each, written here. Measured by the
 * process's peak resident memory, not by time: the load must raise it by
 * far less than the 200 MB the labels alone would take. It runs in its own
 * process first thing, so no earlier peak hides the load's. FIFOs as IDX
 * files are refused at once. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/data.h"
#include "expect.h"

#define N_EXAMPLES 200000000u

static long peak_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* An IDX header (magic, dims) then `zeros` zero bytes, gzipped, streamed. */
static int write_zeros_gz(const char *path, uint32_t magic, const uint32_t *dims, int ndims,
                          uint64_t zeros)
{
    gzFile f = gzopen(path, "wb1");
    if (!f)
        return -1;
    unsigned char hdr[16];
    int hl = 4 + 4 * ndims;
    uint32_t v[4] = {magic, dims[0], ndims > 1 ? dims[1] : 0, ndims > 2 ? dims[2] : 0};
    for (int i = 0; i < 1 + ndims; i++)
        for (int b = 0; b < 4; b++)
            hdr[4 * i + b] = (unsigned char)(v[i] >> (24 - 8 * b));
    static unsigned char chunk[1 << 20];
    int ok = gzwrite(f, hdr, (unsigned)hl) == hl;
    while (ok && zeros) {
        unsigned n = zeros < sizeof chunk ? (unsigned)zeros : (unsigned)sizeof chunk;
        ok = gzwrite(f, chunk, n) == (int)n;
        zeros -= n;
    }
    return gzclose(f) == Z_OK && ok ? 0 : -1;
}

int main(void)
{
    char dir[] = "/tmp/amp_test_data_limit_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char images[128], labels[128], fifo[128];
    snprintf(images, sizeof images, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(labels, sizeof labels, "%s/train-labels-idx1-ubyte.gz", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo.gz", dir);
    uint32_t di[3] = {N_EXAMPLES, 1, 1}, dl[1] = {N_EXAMPLES};
    EXPECT(write_zeros_gz(images, 0x803, di, 3, N_EXAMPLES) == 0, "writing %s", images);
    EXPECT(write_zeros_gz(labels, 0x801, dl, 1, N_EXAMPLES) == 0, "writing %s", labels);

    amp_dataset d;
    char err[1024] = "";
    long before = peak_kib();
    int rc = amp_dataset_load_idx(&d, images, labels, 1024, err, sizeof err);
    long grew_mib = (peak_kib() - before) / 1024;
    EXPECT(rc == 0, "limited load failed: %s", err);
    EXPECT(rc != 0 || (d.n == 1024 && d.features == 1), "kept %lld examples of %d features",
           (long long)d.n, d.features);
    /* Kept: 1024 labels and pixels, plus a 1 MiB scratch buffer and zlib's. */
    EXPECT(grew_mib < 64, "a 1024-example load of %u examples raised the peak memory by %ld MiB",
           N_EXAMPLES, grew_mib);
    printf("limit 1024 of %u examples: peak memory grew by %ld MiB\n", N_EXAMPLES, grew_mib);
    amp_dataset_free(&d);

    /* A FIFO in place of either file: refused at once (no writer ever
     * comes, so a blocking open would hang the test until its timeout). */
    EXPECT(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    rc = amp_dataset_load_idx(&d, fifo, labels, 0, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, "fifo.gz: cannot read: it is a FIFO (named pipe), not a regular "
                                  "file") != NULL,
           "FIFO as images: %s", err);
    rc = amp_dataset_load_idx(&d, images, fifo, 0, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, "it is a FIFO (named pipe)") != NULL, "FIFO as labels: %s", err);
    rc = amp_dataset_load_idx(&d, "/dev/zero", labels, 0, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, "/dev/zero: cannot read: it is a character device") != NULL,
           "/dev/zero as images: %s", err);

    unlink(fifo);
    unlink(images);
    unlink(labels);
    rmdir(dir);
    if (amp_test_failures) {
        fprintf(stderr, "test_data_limit: %d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("test_data_limit: all checks passed\n");
    return 0;
}
