/* SPDX-License-Identifier: MIT */
/*
 * npu.h - the one header applications include for libnpu-user.
 *
 *   #include <npu/npu.h>      (pkg-config --cflags --libs libnpu-user)
 */
#ifndef NPU_H
#define NPU_H

#include "npu/npu_status.h"	/* npu_status, npu_status_str() */
#include "npu/npu_device.h"	/* devices, buffers, command streams, jobs */

/* Models (compile / load / run) — npu_model.h is included here. */

#endif /* NPU_H */
