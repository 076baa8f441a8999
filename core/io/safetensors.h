/* Reading and writing Hugging Face safetensors files.
 *
 * Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON mapping
 * tensor name -> {"dtype", "shape", "data_offsets": [begin, end]} plus an
 * optional "__metadata__" object of string -> string, then the data buffer
 * (row-major, little-endian; offsets are relative to its first byte).
 *
 * The reader treats the file as hostile: every number in the header is checked
 * against the file before it is used, and every failure is a message naming
 * the file, never a crash. Tensor data stays on disk until amp_safetensors_get_f32
 * reads it, so opening a big checkpoint to look at its header is cheap.
 */
#ifndef AMP_SAFETENSORS_H
#define AMP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The reference implementation refuses headers above 100 MB; so do we. */
#define AMP_ST_MAX_HEADER (100ull << 20)
/* More dimensions than this is taken as a corrupt header, not a tensor. */
#define AMP_ST_MAX_RANK 64

/* One tensor to write. data holds product(shape) floats, row-major; it may be
 * NULL only when that product is 0. ndim is 0 (a scalar) to 4. */
typedef struct amp_st_tensor {
    const char *name;
    const float *data;
    int ndim;
    int64_t shape[4];
} amp_st_tensor;

/* Writes the tensors as F32, in the given order, with optional metadata pairs
 * (meta_kv = {"k1", "v1", "k2", "v2", NULL}, or NULL for none). The header is
 * padded with spaces so the data starts 8-byte aligned, as the reference writer
 * does. The file is written to a unique temporary beside it (amp_tmp_create),
 * fsynced and renamed over path, so a failure leaves path as it was (the
 * temporary is removed). Names
 * and metadata must be valid UTF-8, unique, and not "__metadata__". */
int amp_safetensors_write(const char *path, const amp_st_tensor *tensors, int count,
                          const char *const *meta_kv, char *err, size_t errlen);

typedef struct amp_safetensors amp_safetensors;

/* Opens path and validates its header against the file (see safetensors.c for
 * the full list of checks). On success *out owns an open descriptor and the
 * parsed header; free it with amp_safetensors_close. On failure *out is NULL. */
int amp_safetensors_open(amp_safetensors **out, const char *path, char *err, size_t errlen);

/* Tensors in header order. Strings returned here live until close. */
int amp_safetensors_count(const amp_safetensors *st);
const char *amp_safetensors_name(const amp_safetensors *st, int i); /* NULL if i is out of range */

/* The i-th tensor's dtype string ("F32", "BF16", ...) and shape. Returns -1 if
 * i is out of range. Any output pointer may be NULL. */
int amp_safetensors_info(const amp_safetensors *st, int i, const char **dtype, int *ndim,
                         const int64_t **shape);

/* The "__metadata__" value for key, or NULL when absent. */
const char *amp_safetensors_meta(const amp_safetensors *st, const char *key);

/* Copies the tensor `name` into dst (product(shape) floats) as float32. The
 * file's rank and shape must equal ndim/shape. F32, F16 and BF16 widen exactly;
 * F64 rounds to nearest (a C cast); I64 (PyTorch's num_batches_tracked)
 * loads exactly when |v| <= 2^24 and is an error beyond. Other dtypes are an
 * error. */
int amp_safetensors_get_f32(const amp_safetensors *st, const char *name, int ndim,
                            const int64_t *shape, float *dst, char *err, size_t errlen);

void amp_safetensors_close(amp_safetensors *st); /* NULL is fine */

#ifdef __cplusplus
}
#endif

#endif
