/* SPDX-License-Identifier: MIT */
/*
 * npu_struct_size.h - public structs that start with their own size
 * (struct_size), copied between a caller built against one version of a
 * header and a library built against another. Internal; the callers word
 * the errors (runtime/npu_engine.c, userspace/remote/).
 */
#ifndef NPU_STRUCT_SIZE_H
#define NPU_STRUCT_SIZE_H

#include <stddef.h>
#include <string.h>

enum npu_struct_fit {
	NPU_STRUCT_FITS,
	NPU_STRUCT_UNSIZED,	/* struct_size < sizeof(size_t): never initialised */
	NPU_STRUCT_NEWER,	/* longer than ours with a field of ours unknown set */
};

/*
 * A caller's options struct 'src' into the library's 'size'-byte 'dst'
 * (already holding defaults): a shorter one keeps the defaults of the
 * fields it lacks; a longer one must hold zeros past what the library
 * knows (*bad_byte: the first that does not). *given: its struct_size.
 */
static inline enum npu_struct_fit npu_struct_copy_in(void *dst, size_t size, const void *src,
						     size_t *given, size_t *bad_byte)
{
	size_t i;

	memcpy(given, src, sizeof(*given));
	if (*given < sizeof(size_t))
		return NPU_STRUCT_UNSIZED;
	for (i = size; i < *given; i++)
		if (((const unsigned char *)src)[i]) {
			*bad_byte = i;
			return NPU_STRUCT_NEWER;
		}
	memcpy((char *)dst + sizeof(size_t), (const char *)src + sizeof(size_t),
	       (*given < size ? *given : size) - sizeof(size_t));
	memcpy(dst, &size, sizeof(size));
	return NPU_STRUCT_FITS;
}

/*
 * The library's 'size'-byte statistics 'src' out to the caller's 'dst',
 * as much as its struct_size holds (*given); NPU_STRUCT_UNSIZED leaves
 * it untouched.
 */
static inline enum npu_struct_fit npu_struct_copy_out(void *dst, const void *src, size_t size,
						      size_t *given)
{
	memcpy(given, dst, sizeof(*given));
	if (*given < sizeof(size_t))
		return NPU_STRUCT_UNSIZED;
	memcpy((char *)dst + sizeof(size_t), (const char *)src + sizeof(size_t),
	       (*given < size ? *given : size) - sizeof(size_t));
	return NPU_STRUCT_FITS;
}

#endif /* NPU_STRUCT_SIZE_H */
