// SPDX-License-Identifier: MIT
#include "common/npu_error.h"

#include <stdio.h>
#include <string.h>

const char *npu_status_str(npu_status status)
{
	switch (status) {
	case NPU_OK: return "ok";
	case NPU_ERR_INVALID_ARG: return "invalid argument";
	case NPU_ERR_NO_MEMORY: return "out of memory";
	case NPU_ERR_IO: return "I/O error";
	case NPU_ERR_NOT_FOUND: return "not found";
	case NPU_ERR_UNSUPPORTED: return "unsupported";
	case NPU_ERR_DEVICE: return "device error";
	case NPU_ERR_JOB_FAILED: return "job failed";
	case NPU_ERR_TIMEOUT: return "timed out";
	case NPU_ERR_BUSY: return "busy";
	case NPU_ERR_MODEL: return "malformed model";
	case NPU_ERR_INTERNAL: return "internal error";
	case NPU_ERR_CANCELLED: return "cancelled";
	}
	return "unknown status";
}

npu_status npu_error_vset(struct npu_error *err, npu_status status,
			  const char *fmt, va_list ap)
{
	if (!err)
		return status;
	err->status = status;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return status;
}

npu_status npu_error_set(struct npu_error *err, npu_status status,
			 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	npu_error_vset(err, status, fmt, ap);
	va_end(ap);
	return status;
}

void npu_error_prefix(struct npu_error *err, const char *fmt, ...)
{
	char old[NPU_ERROR_MSG_MAX];
	size_t len;
	va_list ap;
	int n;

	if (!err)
		return;
	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	len = n < 0 ? 0 : (size_t)n;
	if (len >= sizeof(err->msg) - 3)
		return;
	/* Truncation of the old message is fine: the prefix matters most. */
	snprintf(err->msg + len, sizeof(err->msg) - len, ": %.*s",
		 (int)(sizeof(err->msg) - len - 3), old);
}

void npu_error_clear(struct npu_error *err)
{
	if (!err)
		return;
	err->status = NPU_OK;
	err->msg[0] = '\0';
}

const char *npu_error_msg(const struct npu_error *err)
{
	return err ? err->msg : "";
}
