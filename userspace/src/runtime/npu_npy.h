/* SPDX-License-Identifier: MIT */
/*
 * npu_npy.h - NumPy .npy files (format versions 1.0, 2.0 and 3.0), per
 * numpy.lib.format: little-endian dtypes <f4 <f8 <f2 <i8 <i4 <i2 |i1 <u8
 * <u4 <u2 |u1 |b1, C order. Fortran order and big-endian data are
 * rejected with a clear message.
 */
#ifndef NPU_NPY_H
#define NPU_NPY_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/npu_ir.h"

npu_status npu_npy_parse(const void *data, size_t size, const char *source,
			 struct npu_tensor **out, struct npu_error *err);
npu_status npu_npy_read(const char *path, struct npu_tensor **out,
			struct npu_error *err);
/* Version 1.0 header unless the header needs more than 65535 bytes. */
npu_status npu_npy_write(const char *path, const struct npu_tensor *t,
			 struct npu_error *err);

/*
 * The samples of a calibration directory, sorted by name so that runs are
 * repeatable: its *.npy files (npy_files), or its subdirectories (dot
 * names skipped). Returns the count, or -1 when 'dir' cannot be read;
 * free with npu_npy_free_names().
 */
int npu_npy_list_samples(const char *dir, bool npy_files, char ***names);
void npu_npy_free_names(char **names, int count);

#endif /* NPU_NPY_H */
