/* SPDX-License-Identifier: MIT */
/*
 * npu.h - the one header applications include for libnpu-user.
 *
 *   #include <npu/npu.h>      (pkg-config --cflags --libs libnpu-user)
 *
 * It compiles as C11 and as C++17; only what it declares is exported.
 * Split computing's client is a library of its own: <npu/npu_remote.h>,
 * pkg-config npu-remote.
 */
#ifndef NPU_H
#define NPU_H

#include "npu/npu_status.h"	/* npu_status, npu_status_str() */
#include "npu/npu_device.h"	/* devices, buffers, command streams, jobs */
#include "npu/npu_version.h"	/* the version, npu_last_error() */
#include "npu/npu_tensor.h"	/* host tensors, strings, sequences, tensor files */
#include "npu/npu_engine.h"	/* the engine: devices, CPU threads, logging */
#include "npu/npu_model.h"	/* models (and, through it, the two below) */
#include "npu/npu_plan.h"	/* a model at one set of input shapes */
#include "npu/npu_session.h"	/* runs: sync, async, IO binding, statistics */
#include "npu/npu_custom_op.h"	/* custom ops: an application's kernels */
#include "npu/npu_provider.h"	/* execution providers: who runs which nodes */
#include "npu/npu_compress.h"	/* pruning with reconstruction (npu compress) */

#endif /* NPU_H */
