/* SPDX-License-Identifier: MIT */
/*
 * npu_engine.h - the engine: the devices it opened (each once), one CPU
 * thread pool shared by every session, logging, and the custom-op
 * registry (npu_custom_op.h). One per process; thread-safe.
 */
#ifndef NPU_ENGINE_H
#define NPU_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* memset in the *_init() macros */

#include "npu/npu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_device;

/* ---- Engine -------------------------------------------------------------- */

struct npu_engine;

enum npu_log_level {
	NPU_LOG_ERROR = 0,
	NPU_LOG_WARNING = 1,
	NPU_LOG_INFO = 2,	/* model loads, plans made, devices opened */
	NPU_LOG_DEBUG = 3,
};

struct npu_engine_options {
	size_t struct_size;	/* sizeof(struct npu_engine_options) */
	int threads;		/* CPU threads of the shared pool, the caller
				 * included; 0: all online cores */
	enum npu_log_level log_level;	/* default NPU_LOG_WARNING */
	/* Where messages go; NULL: stderr. Called from any thread. */
	void (*log)(void *arg, enum npu_log_level level, const char *message);
	void *log_arg;
	/*
	 * Debugging and measurement. The library reads no environment
	 * variable except NPU_TRACE_FILE, once, in npu_engine_create() when
	 * trace_file is NULL; the npu CLI maps NPU_CPU_ISA, NPU_POOL_STATS and
	 * NPU_TRACE_FILE onto these fields.
	 */
	/*
	 * Cap the CPU kernels' code path: "portable", "avx2" or "avx512"
	 * (NULL: the best the CPU supports). The path is chosen once per
	 * process, by its first engine (or kernel call): an engine asking for
	 * another one fails with NPU_ERR_BUSY.
	 */
	const char *cpu_isa;
	/* Time every task of the engine's thread pool; sessions print where
	 * the threads' time went per node when they end (stderr). */
	int pool_stats;
	/*
	 * Append a Chrome trace (Perfetto) of every CPU op and NPU job of the
	 * engine's sessions and devices to this file. NULL: NPU_TRACE_FILE
	 * from the environment, if set; "" for none.
	 */
	const char *trace_file;
	/*
	 * Async runs (npu_session_run_async): the engine's run workers,
	 * started by the first async run (0: as many as the CPU pool has
	 * threads), and how many runs may wait for one (0: 256; beyond,
	 * npu_session_run_async() fails with NPU_ERR_BUSY).
	 */
	int async_threads;
	size_t async_queue;
};

NPU_API void npu_engine_options_init_sized(struct npu_engine_options *opts,
					   size_t struct_size);
#define npu_engine_options_init(opts) \
	npu_engine_options_init_sized((opts), sizeof(*(opts)))

/* opts may be NULL (defaults). */
NPU_API npu_status npu_engine_create(const struct npu_engine_options *opts,
				     struct npu_engine **out);
/* Drops the caller's reference: models still loaded keep it alive. */
NPU_API void npu_engine_destroy(struct npu_engine *engine);
/* The size of the shared CPU pool, the caller included. */
NPU_API int npu_engine_threads(const struct npu_engine *engine);

/*
 * The device called 'name' ("sim", "sim#K", "accel", "accel:K" or an accel
 * node path such as "/dev/accel/accel0": npu_device_spec_resolve() says
 * which device each names), opened on first use and shared by every model
 * of the engine. The engine owns it: do not close it.
 */
NPU_API npu_status npu_engine_get_device(struct npu_engine *engine,
					 const char *name,
					 struct npu_device **out);
/*
 * Since 2.3: every device a spec names ("sim:4", "accel:*",
 * "accel:0,accel:1", or one device), in the spec's order, each opened on
 * first use and shared as npu_engine_get_device()'s. At most 'max' fit;
 * *count says how many the spec named. A model whose device is a set runs
 * on all of them (npu_model_options.device).
 */
NPU_API npu_status npu_engine_get_devices(struct npu_engine *engine, const char *spec,
					  struct npu_device **devs, size_t max,
					  size_t *count);
/*
 * Use an application's own device for models that ask for 'name'. The
 * application keeps ownership and closes it after the engine is gone.
 * NPU_ERR_BUSY if a device of that name is in use already.
 */
NPU_API npu_status npu_engine_attach_device(struct npu_engine *engine,
					    const char *name,
					    struct npu_device *device);

#ifdef __cplusplus
}
#endif

#endif /* NPU_ENGINE_H */
