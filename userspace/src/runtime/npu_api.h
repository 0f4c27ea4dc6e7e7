/* SPDX-License-Identifier: MIT */
/*
 * npu_api.h - the objects behind the engine API (npu/npu_model.h):
 * engine (npu_engine.c), model and plan (npu_model.c), session
 * (npu_session.c). Internal.
 */
#ifndef NPU_API_INTERNAL_H
#define NPU_API_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "compiler/codegen.h"
#include "graph/npu_ir.h"
#include "npu/npu_device.h"
#include "npu/npu_model.h"
#include "runtime/npu_runtime.h"

struct npu_compiled;
struct npu_onnx_meta;
struct npu_npub;
struct npu_calib_cache;
struct npu_custom_record;
struct npu_ep;
struct npu_plan_placement;
struct npu_provider_record;
struct npu_keep_fp32;
struct npu_mixed_result;
struct npu_threadpool;

/* ---- Errors: per thread, for npu_last_error() ---- */

/* Record a failure for the calling thread; returns 'status'. */
npu_status npu_api_fail(npu_status status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Record an internal error object's status and message; returns its status. */
npu_status npu_api_fail_err(const struct npu_error *err);

/*
 * Copy a caller's option struct of 'struct_size' bytes into the library's
 * 'size'-byte struct (already holding defaults): a shorter one keeps the
 * defaults of fields it lacks; a longer one must hold zeros past what
 * this library knows. 'what' names the struct in the message.
 */
npu_status npu_api_copy_options(void *dst, size_t size, const void *src,
				const char *what);
/* Copy out min(caller's struct_size, size) bytes of a statistics struct. */
npu_status npu_api_copy_stats(void *dst, const void *src, size_t size,
			      const char *what);

/* ---- Engine ---- */

struct npu_engine_device {
	char *name;
	struct npu_device *dev;
	bool owned;			/* opened by the engine */
};

/*
 * The devices 'spec' names (npu_device_spec_resolve), each opened on first
 * use under its own name, so "accel", "accel:0" and its node path are one
 * device, and "sim:4" shares its first with "sim". A device the
 * application attached under the spec's exact name comes first. names[i]
 * (optional) is the engine's name of devs[i], valid as long as the engine.
 */
npu_status npu_engine_open_devices(struct npu_engine *engine, const char *spec,
				   struct npu_device **devs, const char **names, size_t max,
				   size_t *count);

struct npu_async;

struct npu_engine {
	atomic_int refs;		/* the caller's + one per model */
	struct npu_engine_options opts;
	struct npu_threadpool *pool;	/* shared; NULL with one thread */
	int threads;
	pthread_mutex_t lock;		/* devices */
	/* Every device a model named (each once): up to one set's worth of
	 * each kind, and a few more attached or named singly. */
	struct npu_engine_device devs[2 * NPU_DEVICE_SET_MAX];
	size_t num_devs;
	struct npu_async *async;	/* run workers, started on first use (under lock) */
	/* Custom ops (npu_custom_op.c): the registry its models' graphs use. */
	struct npu_op_registry *ops;
	struct npu_custom_record **custom_ops;	/* under lock */
	size_t num_custom_ops;
	/* Execution providers the application registered (npu_provider.c). */
	struct npu_provider_record **providers;	/* under lock */
	size_t num_providers;
};

/*
 * Queue fn(arg) for one of the engine's run workers (npu_async.c),
 * starting them on first use; NPU_ERR_BUSY when the queue is full.
 */
npu_status npu_async_submit(struct npu_engine *engine, void (*fn)(void *arg), void *arg);
/* Stop the workers once the queue is empty (engine teardown; may run on one). */
void npu_async_shutdown(struct npu_async *async);

void npu_engine_ref(struct npu_engine *engine);
/* Free the engine's custom op registrations (at its end). */
void npu_custom_ops_free(struct npu_engine *engine);
/*
 * At load: every node of a custom domain (not one the library knows) has
 * an op registered, and custom nodes have the input / output counts their
 * registration allows; err names the node and the op.
 */
npu_status npu_custom_ops_check_graph(const struct npu_graph *g, struct npu_error *err);
/*
 * Run an application's kernel (a custom op's or a provider's compute) on
 * op through a kernel context; 'label' names it in messages. With dtypes /
 * shapes (per output), an output allocated otherwise fails the run; so
 * does an error, or an output left unallocated.
 */
struct npu_kernel_context;
struct npu_op_ctx;
npu_status npu_kernel_context_run(struct npu_op_ctx *op, const char *label,
				  const enum npu_dtype *dtypes, const struct npu_shape *shapes,
				  npu_status (*compute)(void *user, void *state,
							struct npu_kernel_context *ctx),
				  void *user, void *state);
void npu_engine_unref(struct npu_engine *engine);
void npu_engine_log(const struct npu_engine *engine, enum npu_log_level level,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- Model and plans ---- */

struct npu_io_info {
	struct npu_tensor_info info;
	char *name;
	char *dim_names[NPU_MAX_RANK];
};

struct npu_plan {
	atomic_int refs;		/* the cache's + callers' + sessions' */
	struct npu_model *model;
	struct npu_shape *shapes;	/* per model input */
	struct npu_graph *g;		/* planned (and compiled) copy */
	struct npu_exec_schedule *exec;
	struct npu_compiled *compiled;	/* NPU devices */
	struct npu_io_info *outputs;	/* concrete output shapes */
	uint64_t bytes;			/* counted against the cache bound */
	struct npu_mixed_result *mixed;	/* accuracy_target set: the search */
	/* Where every node runs and why, by provider (npu_provider.c). */
	struct npu_plan_placement *placements;
	size_t num_placements;
	/* Its NPU code put on the model's other devices (npu_plan_on_device). */
	pthread_mutex_t replica_lock;
	/* The modeled NPU cycles of one run (the work it adds to its
	 * device's queue): the compiler's estimate until a run measured it. */
	atomic_uint_least64_t work_cycles;
	/*
	 * How its runs use the model's devices (npu_multi.c): the mode and
	 * the cost model's estimate and reason. In pipeline mode, the device
	 * of each NPU segment (compiled->num_segments entries, consecutive
	 * segments on one device form a stage) and each device's predicted
	 * cycles per run; pipeline_ready once every replica holds its
	 * segments (under replica_lock).
	 */
	struct npu_parallel_info parallel;
	size_t *seg_device;
	uint64_t stage_cycles[NPU_DEVICE_SET_MAX];
	bool pipeline_ready;
	atomic_bool pipeline_off;	/* a pipeline run failed: data parallel from then on */
	/* auto chose a pipeline: the model does not fit one device. */
	bool auto_pipeline;
	char auto_why[160];
};

/*
 * Make 'plan' runnable on device 'index' of its model's set (its code's
 * replica there, made once); NPU_OK at once for device 0. index ==
 * NPU_PLAN_PIPELINE: every device holding its pipeline stage.
 */
#define NPU_PLAN_PIPELINE NPU_DEVICE_SET_MAX
npu_status npu_plan_on_device(struct npu_plan *plan, size_t index);
/*
 * After compiling: resolve the model's npu_model_options.parallel for
 * 'plan' with the cost model, in pipeline mode assign its segments to
 * devices, and put the constants on the devices (npu_multi.c).
 * NPU_ERR_NO_MEMORY with *retry_pipeline set: auto, and the model does
 * not fit one device; the plan is to be built again cut in stages.
 */
npu_status npu_plan_parallel_setup(struct npu_plan *plan, bool *retry_pipeline);
/* The pipeline_stages a plan compiles with (0: no cut). */
int npu_plan_pipeline_stages(const struct npu_plan *plan);
/* A plan on a device set binds without constants (npu_compiled.defer_consts). */
bool npu_plan_defers_consts(const struct npu_plan *plan);

struct npu_model {
	atomic_int refs;		/* the caller's + sessions' + plan users' */
	atomic_bool destroyed;		/* the caller dropped it */
	atomic_bool warned;		/* its compile warnings were summed up once */
	struct npu_engine *engine;
	struct npu_model_options opts;	/* strings point into the model */
	char *device_name;		/* "cpu", "sim", ... */
	char *calib_dir, *calib_method;
	char *keep_fp32;		/* opts.keep_fp32, split at the commas */
	struct npu_keep_fp32 *keep;
	size_t num_keep;
	char *int16;			/* opts.int16, split at the commas */
	const char **int16_names;
	size_t num_int16;
	char *precision;
	char *codegen;			/* opts.codegen, copied */
	struct npu_codegen_options codegen_opts;	/* parsed from it */
	char *cpu;			/* opts.cpu, copied */
	struct npu_cpu_options cpu_opts;	/* parsed from it */
	char **calib_names;		/* samples of calib_dir (under build_lock) */
	int num_calib_names;
	bool calib_subdirs;		/* DIR/<sample>/<input>.npy form */
	char *source;
	void *bytes;			/* the ONNX model */
	size_t size;
	bool bytes_in_npub;		/* bytes points into npub (not malloc'ed) */
	void *npub;			/* a loaded .npub file, or NULL */
	bool npub_mapped;		/* npub is a mapping of the file (munmap) */
	size_t npub_size;
	struct npu_shape *npub_shapes;	/* its compiled input shapes */
	/* Imported once, never modified; a compiled file's only when a plan
	 * at other shapes (or a quantization report) needs the source. */
	struct npu_graph *base;
	/* A compiled file's graph as compiled (npub.h), never modified. */
	struct npu_graph *finished;
	struct npu_npub *npub_open;	/* its file as parsed at load, until a plan takes it */
	struct npu_onnx_meta *meta;	/* what the ModelProto says about itself */
	struct npu_io_info *inputs, *outputs;
	size_t num_inputs, num_outputs;
	struct npu_device *dev;		/* NULL on "cpu" (the engine owns it) */
	/*
	 * Every device of the model's set, devs[0] == dev, and what runs did
	 * on each (npu_session.c picks one per run). One device but for a
	 * spec naming several ("sim:4").
	 */
	struct npu_device *devs[NPU_DEVICE_SET_MAX];
	const char *dev_names[NPU_DEVICE_SET_MAX];	/* the engine's */
	size_t num_devs;
	pthread_mutex_t load_lock;	/* picking a device */
	struct npu_model_device_load {
		uint64_t outstanding_cycles;	/* modeled work of runs in flight (load_lock) */
		atomic_uint_least64_t runs, inflight, modeled_cycles;
		atomic_uint_least64_t failovers;	/* runs that failed here, run again elsewhere */
		atomic_bool out_of_rotation;	/* failed where another succeeded */
	} load[NPU_DEVICE_SET_MAX];
	/* The providers a plan offers nodes to, in priority order, "cpu" last. */
	const struct npu_ep **eps;
	size_t num_eps;
	char *providers;		/* opts.providers, copied */
	/* The plan cache; builds are serialized by build_lock. */
	pthread_mutex_t build_lock;
	pthread_mutex_t cache_lock;
	struct npu_plan **plans;	/* most recently used first */
	size_t num_plans, max_plans;
	uint64_t plan_bytes, max_plan_bytes;
	struct npu_calib_cache *calib;	/* under build_lock */
	atomic_uint_least64_t imports, calibrations;
	atomic_uint_least64_t plans_built, plan_hits, plan_misses, plans_evicted;
	atomic_uint_least64_t compilations, codegens;
};

/*
 * The source graph m->base, imported on first need for a compiled file
 * (under build_lock, or at load); NPU_ERR_UNSUPPORTED naming the compiled
 * shapes when the file keeps no source.
 */
npu_status npu_model_source(struct npu_model *m, struct npu_error *err);

/*
 * What needs the importer or the compiler: npu_model_compile.c in
 * libnpu-user, npu_no_compiler.c (each fails naming the library to use)
 * in libnpu-runtime.
 */
/* Parse the model options only the compiler reads (calib_method, codegen). */
npu_status npu_model_compile_options(struct npu_model *m);
/* Import m->bytes into m->base (and m->meta when 'meta'); counts imports. */
npu_status npu_model_import(struct npu_model *m, bool meta, struct npu_error *err);
/* The CPU fusion passes of a plan on the CPU device. */
npu_status npu_model_cpu_passes(struct npu_model *m, struct npu_graph *g, struct npu_error *err);
/* A compiled file before version 3: the passes its segments were cut after. */
npu_status npu_model_replay_passes(struct npu_graph *g, struct npu_error *err);
/* Compile p->g for m's NPU device into p->compiled (p->mixed for a target). */
npu_status npu_model_compile(struct npu_model *m, struct npu_plan *p, struct npu_error *err);
void npu_model_compile_free(struct npu_model *m);
void npu_plan_mixed_free(struct npu_plan *p);

void npu_model_ref(struct npu_model *model);
void npu_model_unref(struct npu_model *model);
void npu_plan_ref(struct npu_plan *plan);
/* Drop a reference without the model reference npu_plan_release() drops. */
void npu_plan_unref(struct npu_plan *plan);

/*
 * The plan for these input tensors' shapes (inputs[i] feeds model input
 * i), checked against the model's declaration; a new reference.
 */
npu_status npu_model_plan_for(struct npu_model *model,
			      const struct npu_shape *shapes,
			      struct npu_plan **out);
/* Map caller tensors onto model inputs by name or position, checking each. */
npu_status npu_model_bind_inputs(const struct npu_model *model,
				 const struct npu_host_tensor *inputs,
				 size_t count, bool shapes_only,
				 struct npu_tensor *tensors,
				 const struct npu_tensor **ptrs);

/*
 * Move an internal tensor's data and 'name' (both malloc'ed) into 'out',
 * a host tensor its caller frees with npu_host_tensor_free(); 't' is
 * destroyed. No copy.
 */
void npu_host_tensor_take(struct npu_host_tensor *out, struct npu_tensor *t, char *name);

#endif /* NPU_API_INTERNAL_H */
