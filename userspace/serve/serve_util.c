// SPDX-License-Identifier: MIT
/* npu-serve: errors, clocks and datatype names (serve_log: logging.c). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "serve.h"

int serve_err(char *err, int status, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err, SERVE_ERR_MAX, fmt, ap);
		va_end(ap);
	}
	return status;
}

uint64_t serve_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const struct {
	enum npu_data_type type;
	const char *name;
} dtypes[] = {
	{ NPU_TYPE_BOOL, "BOOL" },
	{ NPU_TYPE_UINT8, "UINT8" },
	{ NPU_TYPE_UINT16, "UINT16" },
	{ NPU_TYPE_UINT32, "UINT32" },
	{ NPU_TYPE_UINT64, "UINT64" },
	{ NPU_TYPE_INT8, "INT8" },
	{ NPU_TYPE_INT16, "INT16" },
	{ NPU_TYPE_INT32, "INT32" },
	{ NPU_TYPE_INT64, "INT64" },
	{ NPU_TYPE_FLOAT16, "FP16" },
	{ NPU_TYPE_FLOAT, "FP32" },
	{ NPU_TYPE_DOUBLE, "FP64" },
	/* Serialized as Triton does (bytes.h); config name TYPE_STRING. */
	{ NPU_TYPE_STRING, "BYTES" },
};

#define NUM_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

const char *serve_dtype_name(enum npu_data_type t)
{
	size_t i;

	for (i = 0; i < NUM_DTYPES; i++)
		if (dtypes[i].type == t)
			return dtypes[i].name;
	return "INVALID";
}

enum npu_data_type serve_dtype_parse(const char *name)
{
	size_t i;

	for (i = 0; i < NUM_DTYPES; i++)
		if (!strcmp(dtypes[i].name, name))
			return dtypes[i].type;
	return NPU_TYPE_UNDEFINED;
}

const char *serve_config_dtype_name(enum npu_data_type t)
{
	static const char *const names[] = {
		[NPU_TYPE_BOOL] = "TYPE_BOOL", [NPU_TYPE_UINT8] = "TYPE_UINT8",
		[NPU_TYPE_UINT16] = "TYPE_UINT16", [NPU_TYPE_UINT32] = "TYPE_UINT32",
		[NPU_TYPE_UINT64] = "TYPE_UINT64", [NPU_TYPE_INT8] = "TYPE_INT8",
		[NPU_TYPE_INT16] = "TYPE_INT16", [NPU_TYPE_INT32] = "TYPE_INT32",
		[NPU_TYPE_INT64] = "TYPE_INT64", [NPU_TYPE_FLOAT16] = "TYPE_FP16",
		[NPU_TYPE_FLOAT] = "TYPE_FP32", [NPU_TYPE_DOUBLE] = "TYPE_FP64",
		[NPU_TYPE_STRING] = "TYPE_STRING",
	};

	if ((unsigned)t < sizeof(names) / sizeof(names[0]) && names[t])
		return names[t];
	return "TYPE_INVALID";
}

enum npu_data_type serve_config_dtype_parse(const char *name)
{
	if (strncmp(name, "TYPE_", 5) || !strcmp(name, "TYPE_BYTES"))
		return NPU_TYPE_UNDEFINED;
	if (!strcmp(name, "TYPE_STRING"))
		return NPU_TYPE_STRING;
	return serve_dtype_parse(name + 5);
}
