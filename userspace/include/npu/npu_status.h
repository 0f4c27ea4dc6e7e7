/* SPDX-License-Identifier: MIT */
/*
 * npu_status.h - status codes shared by every libnpu-user call.
 *
 * Every call returns an npu_status. A message says what failed and why,
 * e.g. "npu_submit: command offset 4100 + size 64 exceeds BO size 4096":
 * the engine API (npu_model.h) keeps it per thread (npu_last_error()), the
 * device layer (npu_device.h) in the object the call was made on.
 */
#ifndef NPU_STATUS_H
#define NPU_STATUS_H

/* Marks the library's exported API; everything else in it is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define NPU_API __attribute__((visibility("default")))
#else
#define NPU_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum npu_status {
	NPU_OK = 0,
	NPU_ERR_INVALID_ARG,	/* a parameter is malformed or out of range */
	NPU_ERR_NO_MEMORY,
	NPU_ERR_IO,		/* a file or device could not be read / written */
	NPU_ERR_NOT_FOUND,	/* file, device, name or handle does not exist */
	NPU_ERR_UNSUPPORTED,	/* valid, but not implemented here */
	NPU_ERR_DEVICE,		/* the device or driver refused the request */
	NPU_ERR_JOB_FAILED,	/* a job ran and ended with a device error */
	NPU_ERR_TIMEOUT,
	NPU_ERR_BUSY,		/* resource still in use */
	NPU_ERR_MODEL,		/* a model file is malformed */
	NPU_ERR_INTERNAL,	/* a bug in libnpu-user */
	NPU_ERR_CANCELLED,	/* the run's npu_cancel was triggered */
} npu_status;

/* A short constant name for a status, e.g. "invalid argument". */
NPU_API const char *npu_status_str(npu_status status);

#ifdef __cplusplus
}
#endif

#endif /* NPU_STATUS_H */
