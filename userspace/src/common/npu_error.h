/* SPDX-License-Identifier: MIT */
/* Per-object error messages behind every public *_last_error() call. */
#ifndef NPU_ERROR_H
#define NPU_ERROR_H

#include <stdarg.h>

#include "npu/npu_status.h"

#define NPU_ERROR_MSG_MAX 512

struct npu_error {
	npu_status status;
	char msg[NPU_ERROR_MSG_MAX];
};

/* Record 'status' with a printf-style message; returns 'status'. */
npu_status npu_error_set(struct npu_error *err, npu_status status,
			 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
npu_status npu_error_vset(struct npu_error *err, npu_status status,
			  const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* Prefix the existing message with "prefix: " (adds context going up). */
void npu_error_prefix(struct npu_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void npu_error_clear(struct npu_error *err);
/* The message, or "" when no error was recorded. */
const char *npu_error_msg(const struct npu_error *err);

#endif /* NPU_ERROR_H */
