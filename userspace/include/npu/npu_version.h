/* SPDX-License-Identifier: MIT */
/*
 * npu_version.h - libnpu-user's version and its error convention: every
 * call returns an npu_status, and npu_last_error() gives the calling
 * thread's message for its last failed call.
 */
#ifndef NPU_VERSION_H
#define NPU_VERSION_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* memset in the *_init() macros */

#include "npu/npu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions ---------------------------------------------------------- */

#define NPU_API_VERSION_MAJOR 2
#define NPU_API_VERSION_MINOR 3
#define NPU_API_VERSION_PATCH 0
#define NPU_API_VERSION \
	(NPU_API_VERSION_MAJOR * 10000 + NPU_API_VERSION_MINOR * 100 + NPU_API_VERSION_PATCH)

/* The library's version, "2.3.0", and NPU_API_VERSION as it was built. */
NPU_API const char *npu_version(void);
NPU_API int npu_api_version(void);

/* The calling thread's message for its last failed call ("" if none). */
NPU_API const char *npu_last_error(void);
/*
 * Set the calling thread's npu_last_error() to the formatted message and
 * return 'status': for libraries built on this one (libnpu-remote, an
 * application's own layers) whose errors callers read the same way.
 */
NPU_API npu_status npu_last_error_set(npu_status status, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

#ifdef __cplusplus
}
#endif

#endif /* NPU_VERSION_H */
