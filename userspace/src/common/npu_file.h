/* SPDX-License-Identifier: MIT */
/* npu_file.h - whole files into memory (internal). */
#ifndef NPU_COMMON_FILE_H
#define NPU_COMMON_FILE_H

#include <stddef.h>

#include "common/npu_error.h"

/* Read a whole regular file (at most 2 GiB) into a malloc'd buffer. */
npu_status npu_read_file(const char *path, void **data, size_t *size,
			 struct npu_error *err);

#endif /* NPU_COMMON_FILE_H */
