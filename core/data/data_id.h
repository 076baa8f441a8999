/* The fingerprint of a run's data, as checkpoints record it (section DATA):
 * one line per data file, "file <sha256> <bytes> <path>", or one
 * "generated <what> <parameters>" line for synthetic data. A resume
 * compares the checkpoint's lines with the data it loaded and refuses a
 * difference: an edited corpus of the same vocabulary size (its token ids
 * would silently change meaning) or other IDX files of the same size
 * trained on before this check existed. */
#ifndef AMP_DATA_ID_H
#define AMP_DATA_ID_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* A file a dataset was read from, as fstat saw it when it was opened: the
 * fingerprint hashes it later and checks that it is still that file. */
typedef struct amp_data_source {
    char path[4096];  /* "" for generated data */
    uint64_t size, dev, ino;
    int64_t mtime_ns;
} amp_data_source;

/* Records path and what fstat said of it when it was opened. */
void amp_data_source_note(amp_data_source *src, const char *path, const struct stat *st);

/* 0 when src's file is still the one opened (same inode, size and
 * modification time), and *fd (when fd is not NULL) a descriptor of it;
 * else it changed under the run: -1 with err. */
int amp_data_source_check(const amp_data_source *src, int *fd, char *err, size_t errlen);

/* SHA-256 of src's file as 64 hex digits, read again (regular files only,
 * io/file.h); the file must still be the one opened (same inode, size and
 * modification time), else it changed under the run: -1 with err. */
int amp_data_source_sha256(const amp_data_source *src, char hex[65], char *err, size_t errlen);

/* 0 when now (the data this run loaded) has the fingerprint saved in a
 * checkpoint; else -1 with err naming the file and both fingerprints. */
int amp_data_id_compare(const char *saved, size_t saved_len, const char *now, char *err,
                        size_t errlen);

#endif
