/* Opening the files amptrain reads. A path can name anything: a FIFO (open
 * blocks until a writer appears, and read blocks after), a terminal, a
 * device such as /dev/zero (endless) or a directory. Every reader goes
 * through these helpers, which refuse all but regular files without ever
 * blocking: stat first (so a device is never even opened), then open with
 * O_NONBLOCK|O_NOCTTY and check the descriptor again with fstat (the path
 * may have changed in between). O_NONBLOCK is cleared once the file is
 * known to be regular.
 *
 * Messages name the path and what it is: "x.ini: cannot read: it is a FIFO
 * (named pipe), not a regular file". */
#ifndef AMP_IO_FILE_H
#define AMP_IO_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

/* "a FIFO (named pipe)", "a directory", "a character device", ... */
const char *amp_file_kind(mode_t mode);

/* Opens path for reading: a descriptor (O_CLOEXEC) of a regular file, with
 * its fstat in *st when st is not NULL; -1 with "path: cannot read: ..." in
 * err otherwise. */
int amp_file_open_read(const char *path, struct stat *st, char *err, size_t errlen);

/* The same as a stdio stream ("r"). */
FILE *amp_file_fopen_read(const char *path, struct stat *st, char *err, size_t errlen);

/* Reads a whole regular file of at most max bytes into a malloc'd buffer
 * with a NUL after the last byte (*buf, *len; the caller frees). A larger
 * file is refused before anything is read (its size comes from fstat); a
 * file that grows past max while read is refused too. 0, or -1 with err. */
int amp_file_read_all(const char *path, size_t max, char **buf, size_t *len, char *err,
                      size_t errlen);

/* Reads one line of at most max bytes (the '\n' not counted, not kept)
 * into *buf (grown as needed, NUL-terminated; free it after the last
 * call), its length in *len. 1: a line; 0: the end of the file; -1: a read
 * error (errno set; never taken for the end); -2: the line is longer than
 * max (the rest of it is not read). Unlike getline, a line without a
 * newline in a huge file never costs more than max bytes. */
int amp_file_read_line(FILE *f, size_t max, char **buf, size_t *cap, size_t *len);

/* Reads exactly n bytes at offset off. 0; -1 with errno set (0 when the file
 * ended first). */
int amp_file_pread_full(int fd, void *buf, size_t n, unsigned long long off);

/* *crc = CRC-32 (zlib's) of the first n bytes of fd. 0; -1 when it cannot
 * read them all. */
int amp_file_crc_prefix(int fd, uint64_t n, uint32_t *crc);

#endif
