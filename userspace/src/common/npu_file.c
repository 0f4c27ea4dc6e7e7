// SPDX-License-Identifier: MIT
/* Whole files into memory (npu_file.h). */
#include "common/npu_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

npu_status npu_read_file(const char *path, void **data, size_t *size,
			 struct npu_error *err)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	void *buf;

	*data = NULL;
	*size = 0;
	if (!f)
		return npu_error_set(err, errno == ENOENT ? NPU_ERR_NOT_FOUND
							  : NPU_ERR_IO,
				     "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		return npu_error_set(err, NPU_ERR_IO, "%s: not a regular file",
				     path);
	}
	if ((uint64_t)st.st_size > (1ull << 31)) {
		fclose(f);
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: %lld bytes, larger than 2 GiB", path,
				     (long long)st.st_size);
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		fclose(f);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory",
				     path);
	}
	if (st.st_size && fread(buf, 1, (size_t)st.st_size, f) !=
				  (size_t)st.st_size) {
		free(buf);
		fclose(f);
		return npu_error_set(err, NPU_ERR_IO, "%s: short read", path);
	}
	fclose(f);
	*data = buf;
	*size = (size_t)st.st_size;
	return NPU_OK;
}
