/* SPDX-License-Identifier: MIT */
/*
 * npu_model.h - the engine API: load ONNX models once, run them from many
 * threads, on the CPU or compiled for an NPU.
 *
 *	struct npu_engine *eng;
 *	struct npu_model *m;
 *	struct npu_session *s;
 *
 *	npu_engine_create(NULL, &eng);                  one per process
 *	npu_model_load_file(eng, "det.onnx", NULL, &m); shared, immutable
 *	npu_session_create(m, NULL, &s);                one per thread
 *	if (npu_session_run(s, inputs, 1) != NPU_OK)
 *		fprintf(stderr, "%s\n", npu_last_error());
 *	npu_session_output(s, 0, &out);
 *
 * Objects (the references are ONNX Runtime's Env / Session, TFLite's
 * Model / Interpreter and ncnn's Net / Extractor):
 *   engine   the devices it opened (each once), one CPU thread pool shared
 *            by every session, logging. Thread-safe.
 *   model    the imported graph, weights, options and the calibration
 *            ranges; immutable after load, so any number of threads share
 *            it. Thread-safe.
 *   plan     the model prepared for one concrete set of input shapes:
 *            the optimized graph, memory plan and, on NPU devices, the
 *            compiled segments. Made on first use of those shapes and kept
 *            in the model's cache (bounded by count and bytes, least
 *            recently used dropped). A new shape never re-imports the model
 *            or recalibrates it. Thread-safe, read-only.
 *   session  the run state of one thread: tensors, arenas, jobs in flight.
 *            One run at a time: a call while another thread is inside the
 *            same session, or while its async run is in flight
 *            (npu_session_run_async), fails with NPU_ERR_BUSY.
 * A model keeps its engine alive and a session its model, so destroying
 * them in any order is safe; a session of a destroyed model reports an
 * error instead of running.
 *
 * Errors: every call returns an npu_status; npu_last_error() gives the
 * calling thread's message for its last failed call, naming the file, the
 * node, the input or the field and the reason. A create that fails returns
 * no object.
 *
 * ABI: the option and statistics structs start with 'struct_size'; set it
 * with the *_init() macros (they pass sizeof of the caller's struct), so
 * an application built against an older, shorter struct keeps working,
 * and one built against a newer struct is told so clearly when it sets a
 * field this library does not know. npu_host_tensor, npu_tensor_info and
 * npu_node_placement are frozen: they never change layout.
 */
#ifndef NPU_MODEL_H
#define NPU_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* memset in the *_stats_init() macros */

#include "npu/npu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_device;
struct npu_buffer;

/* ---- Versions ---------------------------------------------------------- */

#define NPU_API_VERSION_MAJOR 2
#define NPU_API_VERSION_MINOR 1
#define NPU_API_VERSION_PATCH 0
#define NPU_API_VERSION \
	(NPU_API_VERSION_MAJOR * 10000 + NPU_API_VERSION_MINOR * 100 + NPU_API_VERSION_PATCH)

/* The library's version, "2.1.0", and NPU_API_VERSION as it was built. */
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

/* ---- Tensors ------------------------------------------------------------ */

#define NPU_MODEL_MAX_RANK 8

/* Element types; the values are ONNX's TensorProto.DataType. */
enum npu_data_type {
	NPU_TYPE_UNDEFINED = 0,
	NPU_TYPE_FLOAT = 1,
	NPU_TYPE_UINT8 = 2,
	NPU_TYPE_INT8 = 3,
	NPU_TYPE_UINT16 = 4,
	NPU_TYPE_INT16 = 5,
	NPU_TYPE_INT32 = 6,
	NPU_TYPE_INT64 = 7,
	NPU_TYPE_STRING = 8,	/* one packed buffer per tensor (below) */
	NPU_TYPE_BOOL = 9,
	NPU_TYPE_FLOAT16 = 10,
	NPU_TYPE_DOUBLE = 11,
	NPU_TYPE_UINT32 = 12,
	NPU_TYPE_UINT64 = 13,
	NPU_TYPE_BFLOAT16 = 16,
	/* Not element types: ONNX containers, one packed buffer each (below). */
	NPU_TYPE_SEQUENCE = 1000,
	NPU_TYPE_OPTIONAL = 1001,	/* 0 items (None) or 1 */
};

/* Bytes per element (0 for undefined) and a name ("float", "int64"). */
NPU_API size_t npu_data_type_size(enum npu_data_type type);
NPU_API const char *npu_data_type_name(enum npu_data_type type);

/* What a model input or output looks like (frozen layout). */
struct npu_tensor_info {
	const char *name;
	enum npu_data_type dtype;
	int rank;		/* -1: unknown rank */
	int64_t dims[NPU_MODEL_MAX_RANK];	/* -1: not fixed */
	const char *dim_names[NPU_MODEL_MAX_RANK];	/* symbolic name or NULL */
};

/*
 * A dense, C-order tensor in host memory (frozen layout). As an input,
 * 'name' picks the model input (NULL: by position); to ask for a plan only
 * name, rank and dims are read.
 */
struct npu_host_tensor {
	const char *name;
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
	void *data;
	size_t nbytes;
};

/*
 * ONNX sequences and optionals travel as one host tensor of dtype
 * NPU_TYPE_SEQUENCE or NPU_TYPE_OPTIONAL, rank 1, dims[0] = nbytes: a
 * self-contained buffer these functions write and read (items may be
 * containers themselves). A container from a session output is valid as
 * long as the output is.
 */
NPU_API size_t npu_sequence_bytes(const struct npu_host_tensor *items, size_t count);
/* Pack items into buf (npu_sequence_bytes() of them); *out describes it. */
NPU_API npu_status npu_sequence_pack(enum npu_data_type kind,
				     const struct npu_host_tensor *items, size_t count,
				     void *buf, size_t size, struct npu_host_tensor *out);
NPU_API npu_status npu_sequence_length(const struct npu_host_tensor *container,
				       size_t *count);
/* Item 'index' as a view into the container (data not copied). */
NPU_API npu_status npu_sequence_item(const struct npu_host_tensor *container, size_t index,
				     struct npu_host_tensor *item);

/*
 * A string tensor is a host tensor of dtype NPU_TYPE_STRING whose rank and
 * dims are its shape and whose data is one self-contained buffer of
 * nbytes holding all its strings (UTF-8 or any bytes; lengths are
 * explicit). These functions write and read it.
 */
NPU_API size_t npu_string_tensor_bytes(const size_t *lengths, size_t count);
/*
 * Pack 'count' strings (strings[i] of lengths[i] bytes) into buf
 * (npu_string_tensor_bytes() of them). count must equal the element count
 * of the shape the tensor is given.
 */
NPU_API npu_status npu_string_tensor_pack(const char *const *strings, const size_t *lengths,
					  size_t count, void *buf, size_t size);
/* String 'index' of t as a view into its buffer (not NUL-terminated). */
NPU_API npu_status npu_string_tensor_get(const struct npu_host_tensor *t, size_t index,
					 const char **str, size_t *length);

/* ---- Tensor files (API 1.2) ---------------------------------------------- */

/*
 * Read a tensor from a file: a serialized ONNX TensorProto when the path
 * ends in ".pb", otherwise a NumPy .npy file (format 1.0 to 3.0,
 * little-endian <f4 <f8 <f2 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1, C order;
 * Fortran order and big-endian data are refused). *out then holds the
 * tensor in memory the library allocated: data, and name (the
 * TensorProto's name, NULL for .npy). Release it with
 * npu_host_tensor_free(). Errors (npu_last_error()) name the file and
 * what is wrong with it.
 */
NPU_API npu_status npu_tensor_file_read(const char *path, struct npu_host_tensor *out);
/*
 * Write t as a .npy file (format 1.0). nbytes must match the dims and the
 * element type; strings, sequences and optionals are refused.
 */
NPU_API npu_status npu_tensor_file_write_npy(const char *path, const struct npu_host_tensor *t);
/* Free what npu_tensor_file_read() allocated and zero *t; NULL is a no-op. */
NPU_API void npu_host_tensor_free(struct npu_host_tensor *t);

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
 * The device called 'name' ("sim", "accel" or an accel node path such as
 * "/dev/accel/accel0"), opened on first use and shared by every model of
 * the engine. The engine owns it: do not close it.
 */
NPU_API npu_status npu_engine_get_device(struct npu_engine *engine,
					 const char *name,
					 struct npu_device **out);
/*
 * Use an application's own device for models that ask for 'name'. The
 * application keeps ownership and closes it after the engine is gone.
 * NPU_ERR_BUSY if a device of that name is in use already.
 */
NPU_API npu_status npu_engine_attach_device(struct npu_engine *engine,
					    const char *name,
					    struct npu_device *device);

/* ---- Model ---------------------------------------------------------------- */

struct npu_model;

struct npu_model_options {
	size_t struct_size;	/* sizeof(struct npu_model_options) */
	/*
	 * "cpu" (default): everything fp32 on the CPU. "sim" (the NPU
	 * simulator in-process), "accel" or an accel node path: compiled,
	 * NPU-capable parts run int8 on that NPU. Anything else is an error.
	 */
	const char *device;
	int profile;		/* time every node and NPU op (statistics) */
	/* Compilation for NPU devices (ignored on "cpu"): */
	/*
	 * Calibration samples: DIR/NAME.npy, one per sample, for a one-input
	 * model, else DIR/<sample>/<input name>.npy; read one at a time (twice:
	 * min / max, then histograms). An NPU device needs this or
	 * calib_random: without either the load fails.
	 */
	const char *calib_dir;
	/* Activation ranges: "minmax" (default), "mse", "percentile", "entropy". */
	const char *calib_method;
	double calib_percentile;	/* 0: 99.99 */
	uint64_t calib_seed;	/* random calibration inputs; 0: 1 */
	int calib_samples;	/* number of random sets; 0: 4 */
	/* Keep every NPU-capable node on the NPU, even segments too small to
	 * pay for their transfers (tests of the NPU's arithmetic). */
	int keep_small_segments;
	/* Plan cache: at most this many plans (0: 8) and bytes (0: 1 GiB). */
	size_t max_plans;
	uint64_t max_plan_bytes;
	/*
	 * 1: with no calib_dir, calibrate on calib_samples seeded random
	 * normal inputs (smoke tests: noise gives poor int8 ranges).
	 */
	int calib_random;
	/*
	 * Mixed precision (NPU devices; compiler.md). keep_fp32: nodes, by
	 * name, that stay fp32 on the CPU, comma-separated ("conv1,conv7";
	 * names as npu compile --explain shows them); a name no node has
	 * fails the plan. accuracy_target: a cosine in (0, 1] that the
	 * model's outputs must reach against fp32 on held-out samples, the
	 * last quarter of the calibration samples (calibration then uses the
	 * rest); the NPU nodes whose int8 error alone hurts the outputs most stay
	 * fp32 on the CPU until it is reached (npu_plan_mixed_precision()
	 * says which). 0: off.
	 */
	const char *keep_fp32;
	double accuracy_target;
	/*
	 * 1: correct each convolution's bias for the mean shift its int8
	 * weights make, from per-channel input means of the calibration
	 * data (compiler.md, "Bias correction"); -1: off; 0 (the default):
	 * only the convolutions with int16 activations (the 16x8 mode).
	 */
	int bias_correction;
	/*
	 * The 16x8 mode (NPU devices with NPU_CAP_INT16; compiler.md, "int16
	 * activations"). int16: nodes, comma-separated and named as for
	 * keep_fp32, whose activations are int16 (int8 weights, int64
	 * accumulator); precision: "int8" (NULL: the default) or "int16" for
	 * every node that has an int16 form. A name no node has fails the
	 * plan, and so does a named node without an int16 form.
	 * With accuracy_target, the search promotes nodes to int16 first.
	 */
	const char *int16;
	const char *precision;
	/*
	 * How NPU code is built and scheduled, "key=value[,key=value...]"
	 * (NULL: the defaults, every technique on): array_modes, out_lut,
	 * tile_search, prefetch, gap_split = 0|1; lut_producer = any|last;
	 * pixel_mm, fuse = auto|off|force; fuse_rows = N. For measuring a
	 * technique or reaching a code path; a compiled model (.npub) keeps
	 * them. An unknown key or value fails the load naming it.
	 */
	const char *codegen;
	/*
	 * How the CPU part is planned, "key=value[,key=value...]" (NULL: the
	 * defaults): fuse = 0|1 (0: no CPU graph passes, the graph as
	 * imported; "cpu" device only), nchwc = auto|0|1 (the blocked layout
	 * pass: by default on AVX-512 only; "cpu" device only), winograd =
	 * auto|0|all (Winograd F(4,3) for 3x3 convolutions where it wins,
	 * never, or for every eligible one). Per model: two models of one
	 * engine may differ. A compiled model (.npub) keeps them: it plans the
	 * CPU part with the options it was compiled with. An unknown key or
	 * value fails the load naming it.
	 */
	const char *cpu;
};

NPU_API void npu_model_options_init_sized(struct npu_model_options *opts,
					  size_t struct_size);
#define npu_model_options_init(opts) \
	npu_model_options_init_sized((opts), sizeof(*(opts)))

/*
 * Load an ONNX model or a compiled .npub (whose plan for its compiled
 * shapes is ready at once). opts may be NULL. The bytes are copied; 'name'
 * names the model in messages.
 */
NPU_API npu_status npu_model_load_file(struct npu_engine *engine,
				       const char *path,
				       const struct npu_model_options *opts,
				       struct npu_model **out);
NPU_API npu_status npu_model_load_memory(struct npu_engine *engine,
					 const void *data, size_t size,
					 const char *name,
					 const struct npu_model_options *opts,
					 struct npu_model **out);
/* Drops the caller's reference; sessions still open keep the memory. */
NPU_API void npu_model_destroy(struct npu_model *model);

NPU_API const char *npu_model_name(const struct npu_model *model);
NPU_API const char *npu_model_device(const struct npu_model *model);
NPU_API size_t npu_model_num_inputs(const struct npu_model *model);
NPU_API size_t npu_model_num_outputs(const struct npu_model *model);
/*
 * The interface as the file declares it (symbolic dims are -1 with their
 * dim_names). For a .npub, inputs show the compiled shapes. Pointers in
 * 'info' live as long as the model.
 */
NPU_API npu_status npu_model_input_info(const struct npu_model *model,
					size_t index,
					struct npu_tensor_info *info);
NPU_API npu_status npu_model_output_info(const struct npu_model *model,
					 size_t index,
					 struct npu_tensor_info *info);

struct npu_model_stats {
	size_t struct_size;	/* sizeof(struct npu_model_stats) */
	/* ONNX imports: 1 after loading an ONNX file, never more; 0 after
	 * loading a compiled file, 1 once a plan at other shapes needs its
	 * source model. */
	uint64_t imports;
	uint64_t calibrations;	/* calibration runs (NPU devices) */
	uint64_t plans_built;	/* plans made (compilations on NPU devices) */
	uint64_t plan_hits;	/* plan requests served from the cache */
	uint64_t plan_misses;
	uint64_t plans_evicted;
	uint64_t plans_cached;	/* now in the cache */
	uint64_t plan_bytes;	/* their host memory, as counted for the bound */
	/* Since 2.1. Compilations from the source graph (graph passes,
	 * placement, lowering; NPU devices), and NPU segment code
	 * generations: both 0 while a compiled file runs at its shapes
	 * without per-op profiling. */
	uint64_t compilations;
	uint64_t codegens;
};

#define npu_model_stats_init(st) \
	((void)memset((st), 0, sizeof(*(st))), (st)->struct_size = sizeof(*(st)))

NPU_API npu_status npu_model_get_stats(const struct npu_model *model,
				       struct npu_model_stats *stats);

/*
 * What the model file says about itself (ONNX Runtime's ModelMetadata):
 * the ModelProto's producer, domain, version and doc string, its graph's
 * name and doc string, and its metadata_props, custom key/value pairs
 * (by index or by key below). Absent strings are "", an absent
 * model_version 0. A .npub gives what the model it was compiled from
 * said. Strings live as long as the model. A model whose metadata_props
 * has an entry without a key, or a key twice, fails to load (NPU_ERR_MODEL).
 */
struct npu_model_metadata {
	size_t struct_size;		/* sizeof(struct npu_model_metadata) */
	const char *producer_name;	/* "pytorch", "tf2onnx" */
	const char *producer_version;
	const char *domain;		/* reverse-DNS, "ai.onnx.ml" */
	int64_t model_version;
	const char *doc_string;
	const char *graph_name;
	const char *graph_doc_string;
	size_t num_props;		/* metadata_props entries */
};

#define npu_model_metadata_init(md) \
	((void)memset((md), 0, sizeof(*(md))), (md)->struct_size = sizeof(*(md)))

NPU_API npu_status npu_model_get_metadata(const struct npu_model *model,
					  struct npu_model_metadata *metadata);
/* metadata_props entry 'index', in file order ('key' or 'value' may be NULL: not wanted). */
NPU_API npu_status npu_model_metadata_prop(const struct npu_model *model, size_t index,
					   const char **key, const char **value);
/* The value of metadata_props key 'key'; NPU_ERR_NOT_FOUND if none. */
NPU_API npu_status npu_model_metadata_find(const struct npu_model *model, const char *key,
					   const char **value);

/* ---- Plan ------------------------------------------------------------------ */

struct npu_plan;

/*
 * The plan for these input shapes (by name, or by position when name is
 * NULL; only rank and dims are read), made now if it is not cached. Every
 * input must be given with every dim known. Returns a reference: release
 * it with npu_plan_release().
 */
NPU_API npu_status npu_model_get_plan(struct npu_model *model,
				      const struct npu_host_tensor *shapes,
				      size_t count, struct npu_plan **out);
NPU_API void npu_plan_release(struct npu_plan *plan);
NPU_API const struct npu_model *npu_plan_model(const struct npu_plan *plan);

/* Concrete shapes of the plan's inputs and outputs. */
NPU_API npu_status npu_plan_input_info(const struct npu_plan *plan,
				       size_t index,
				       struct npu_tensor_info *info);
NPU_API npu_status npu_plan_output_info(const struct npu_plan *plan,
					size_t index,
					struct npu_tensor_info *info);

/* Where a node of the source model runs, and why (frozen layout). */
struct npu_node_placement {
	const char *node;	/* node name ("#index" if unnamed) */
	const char *op_type;
	int on_npu;		/* 1: NPU segment, 0: CPU */
	int segment;		/* NPU segment index, -1 on the CPU */
	uint64_t macs;		/* multiply-accumulates of the node */
	const char *reason;	/* "CONV2D on the MAC array", "op not in the NPU ISA" */
};

/* Placements of a plan compiled for an NPU device (0 on "cpu"). */
NPU_API size_t npu_plan_num_placements(const struct npu_plan *plan);
NPU_API npu_status npu_plan_placement(const struct npu_plan *plan,
				      size_t index,
				      struct npu_node_placement *placement);

/*
 * The quantization report of a plan compiled for an NPU device: per NPU
 * node, SQNR (dB) and cosine of its int8 output (dequantized) against the
 * fp32 output, 'local' (the node alone, on fp32 inputs quantized with its
 * input parameters: the error it adds) and 'e2e' (the compiled model run
 * on the device: the error accumulated up to it), over at most
 * max_samples (0: all) of the model's calibration samples. Layers are
 * sorted worst local SQNR first; NAN where the fp32 value is unknown.
 */
struct npu_quant_layer {
	const char *node;	/* a pointwise group: its last node */
	const char *op_type;
	const char *value;	/* the node's output */
	int segment;
	double local_sqnr_db, local_cosine;
	double e2e_sqnr_db, e2e_cosine;
};

struct npu_quant_report {
	size_t num_layers;
	struct npu_quant_layer *layers;
	/* The model's outputs, compiled run against fp32 (e2e_* only;
	 * node and value are the output's name, segment -1). */
	size_t num_outputs;
	struct npu_quant_layer *outputs;
	size_t samples;
	/* Segment output elements the host's int8 emulation (firmware-sim's
	 * reference kernels) reproduced, and of those how many differed from
	 * what the device computed: 0 unless something is broken. */
	uint64_t compared, mismatches;
};

NPU_API npu_status npu_plan_quant_report(struct npu_plan *plan, size_t max_samples,
					 struct npu_quant_report **out);
NPU_API void npu_quant_report_free(struct npu_quant_report *report);

/*
 * What npu_model_options.accuracy_target did to a plan. Cosines are
 * against fp32 on the held-out samples, the lowest over the float
 * outputs: with every NPU-capable node in int8 (only keep_fp32 on the
 * CPU) and as planned. Costs per run, before and after: NPU segments,
 * modeled NPU cycles (mean over the hold-out), MACs left to the CPU.
 */
struct npu_mixed_precision {
	size_t struct_size;		/* sizeof(struct npu_mixed_precision) */
	double target;			/* 0: the plan had no target */
	size_t calib_samples, holdout_samples;
	double holdout_cosine_int8, holdout_cosine;
	int reached;			/* holdout_cosine >= target */
	size_t compilations;		/* the search's trial compilations */
	size_t num_kept;		/* nodes the search kept in fp32 */
	const char *const *kept;	/* their names, most sensitive first */
	const double *kept_sqnr_db;	/* output SQNR (dB) with only that node
					 * in int8: what ranked it */
	size_t segments_int8, segments;
	uint64_t npu_cycles_int8, npu_cycles;
	uint64_t cpu_macs_int8, cpu_macs;
	uint32_t clock_mhz;		/* what the cycles count */
	/* The search promotes nodes to int16 (16x8 mode) before it keeps
	 * any in fp32: the nodes that run in int16, in graph order. */
	size_t num_int16;
	const char *const *int16;
	double holdout_cosine_int16;	/* best with int16 alone (0: not tried) */
};

#define npu_mixed_precision_init(mp) \
	((void)memset((mp), 0, sizeof(*(mp))), (mp)->struct_size = sizeof(*(mp)))

/* Pointers in *out live as long as the plan. */
NPU_API npu_status npu_plan_mixed_precision(const struct npu_plan *plan,
					    struct npu_mixed_precision *out);

/*
 * Save a plan compiled for an NPU device as a finished compiled model
 * (.npub: 'npu run FILE.npub'): its graph as compiled and each NPU
 * segment's generated code, so that loading it imports nothing, runs no
 * graph pass and generates no code (npu_model_stats counts them). Its
 * inputs are fixed to the shapes it was compiled for.
 */
NPU_API npu_status npu_plan_save_compiled(const struct npu_plan *plan,
					  const char *path);

/* Since 2.1: how npu_plan_save_compiled_with() writes the file. */
struct npu_save_options {
	size_t struct_size;	/* sizeof(struct npu_save_options) */
	/*
	 * 1 (the default): keep the source ONNX model in the file, so that
	 * the loaded model can also run on the CPU device or give a
	 * quantization report (each imports it once). 0: only what running
	 * on an NPU device needs; those other uses are then an error
	 * (NPU_ERR_UNSUPPORTED) naming the compiled shapes.
	 */
	int keep_source;
};

NPU_API void npu_save_options_init_sized(struct npu_save_options *opts, size_t struct_size);
#define npu_save_options_init(opts) \
	npu_save_options_init_sized((opts), sizeof(*(opts)))

/* npu_plan_save_compiled() with options; opts may be NULL (the defaults). */
NPU_API npu_status npu_plan_save_compiled_with(const struct npu_plan *plan, const char *path,
					       const struct npu_save_options *opts);

/* ---- Session ----------------------------------------------------------------- */

struct npu_session;

struct npu_session_options {
	size_t struct_size;	/* sizeof(struct npu_session_options) */
	/* Run states of plans kept for a switch back (0: 4). */
	size_t max_plan_states;
};

NPU_API void npu_session_options_init_sized(struct npu_session_options *opts,
					    size_t struct_size);
#define npu_session_options_init(opts) \
	npu_session_options_init_sized((opts), sizeof(*(opts)))

NPU_API npu_status npu_session_create(struct npu_model *model,
				      const struct npu_session_options *opts,
				      struct npu_session **out);
NPU_API void npu_session_destroy(struct npu_session *session);

/*
 * Run with 'count' inputs (by name, or by position when name is NULL) on
 * the plan for their shapes, made on first use of those shapes. For a
 * model whose first dimension is dynamic, N requests stacked along it run
 * at once on the plan for N.
 */
NPU_API npu_status npu_session_run(struct npu_session *session,
				   const struct npu_host_tensor *inputs,
				   size_t count);
/* The same on a given plan of the session's model; shapes must match it. */
NPU_API npu_status npu_session_run_plan(struct npu_session *session,
					struct npu_plan *plan,
					const struct npu_host_tensor *inputs,
					size_t count);
/* Output 'index' of the last run; data is valid until the next run. */
NPU_API npu_status npu_session_output(const struct npu_session *session,
				      size_t index,
				      struct npu_host_tensor *out);
/* The plan of the last run (borrowed; valid until the next run). */
NPU_API const struct npu_plan *npu_session_plan(const struct npu_session *session);
/* Seconds of the last run. */
NPU_API double npu_session_last_run_seconds(const struct npu_session *session);

/*
 * Per-op-type statistics of the last plan run, by decreasing time when
 * profiling (counts of nodes otherwise): op type, nodes, calls, total ms.
 */
NPU_API size_t npu_session_num_op_stats(const struct npu_session *session);
NPU_API npu_status npu_session_op_stat(const struct npu_session *session,
				       size_t index, const char **op_type,
				       size_t *nodes, uint64_t *calls,
				       double *total_ms);

/* NPU figures of the session's current plan and its last run. */
struct npu_npu_stats {
	size_t struct_size;		/* sizeof(struct npu_npu_stats) */
	size_t segments;		/* NPU segments (jobs per run) */
	uint64_t total_macs;		/* MACs of the whole model */
	uint64_t npu_macs;		/* MACs placed on the NPU */
	uint64_t arena_bytes;		/* device memory for activations */
	uint64_t arena_sum_bytes;	/* ... if every tensor had its own */
	uint64_t arena_lower_bound;	/* max bytes live at once */
	uint64_t host_arena_bytes;	/* the same three for the host tensors (one
					 * arena when all shapes are static; 0 when
					 * they come from a reuse pool) */
	uint64_t host_sum_bytes;
	uint64_t host_lower_bound;
	double compile_ms;
	uint32_t clock_mhz;		/* what modeled cycles count */
	uint64_t ideal_mac_cycles;	/* per run: NPU MACs / MAC array size */
	/* The last run: */
	uint64_t last_cycles;		/* modeled NPU cycles, all segments */
	double last_npu_wall_ms;	/* host time inside NPU segment ops */
};

#define npu_npu_stats_init(st) \
	((void)memset((st), 0, sizeof(*(st))), (st)->struct_size = sizeof(*(st)))

NPU_API npu_status npu_session_npu_stats(const struct npu_session *session,
					 struct npu_npu_stats *stats);
/* The same for a plan before any run (the last_* fields stay 0). */
NPU_API npu_status npu_plan_npu_stats(const struct npu_plan *plan,
				      struct npu_npu_stats *stats);

/*
 * One NPU segment (one job per run; a segment inside a Loop or Scan body
 * runs once per iteration, and its figures cover the whole run): its
 * share of the work, last run.
 */
struct npu_segment_stats {
	size_t struct_size;		/* sizeof(struct npu_segment_stats) */
	size_t nodes;			/* source nodes it replaces */
	const char *first_node, *last_node;
	uint64_t macs;
	uint64_t ideal_mac_cycles;	/* macs / MAC array size: the roofline */
	uint64_t instructions;
	uint64_t last_cycles;		/* modeled cycles of the last run */
	uint64_t dram_bytes;		/* DMA to and from DRAM per run */
};

NPU_API npu_status npu_session_npu_segment(const struct npu_session *session,
					   size_t index,
					   struct npu_segment_stats *stats);

/*
 * One NPU op (a lowered node) of the last run. Its modeled cycles come
 * from device timestamps around it, taken when the model was loaded with
 * 'profile' set (0 otherwise); ideal_mac_cycles / cycles is its roofline.
 */
struct npu_op_stats {
	size_t struct_size;		/* sizeof(struct npu_op_stats) */
	int segment;
	const char *node;		/* source node name */
	const char *kind;		/* "conv", "matmul", "pool", "eltwise", "lut", "resize", "copy", "softmax", "layernorm", "reduce" */
	uint64_t macs;
	uint64_t ideal_mac_cycles;	/* macs / MAC array size */
	uint64_t cycles;
	/*
	 * Bytes its DMA moves to and from DRAM (device VA) per run, both
	 * directions: inputs, weights and outputs that leave SRAM. 0 for a
	 * model loaded from .npub, which keeps no per-op accounting.
	 */
	uint64_t dram_bytes;
	/*
	 * The compiler's cost model: the cycles it predicted for the op
	 * before generating code (Documentation/compiler.md); 0 for a .npub.
	 */
	uint64_t predicted_cycles;
	/*
	 * 1: the op runs inside the previous op's tile loop (cross-layer
	 * fusion, its output never leaves SRAM): that op's MACs, cycles,
	 * DRAM bytes and prediction cover both; this one has none (its
	 * cycles are the profiling timestamp's).
	 */
	int fused;
};

NPU_API size_t npu_session_npu_num_ops(const struct npu_session *session);
NPU_API npu_status npu_session_npu_op(const struct npu_session *session,
				      size_t index, struct npu_op_stats *stats);

/* ---- Run options, cancellation, async runs ------------------------------------------ */

/*
 * A cancel flag for runs (ONNX Runtime's RunOptions terminate): runs that
 * borrow it through npu_run_options.cancel check it before every node,
 * every If branch and every Loop and Scan iteration (so before every NPU
 * job they submit), and end with NPU_ERR_CANCELLED once it is triggered:
 * every job they submitted completed, nothing leaked, and the session
 * runs normally afterwards. A run that starts with it triggered runs
 * nothing. It stays triggered until reset. Thread-safe: trigger, reset and
 * is_triggered from any thread while runs check it; trigger also from a
 * signal handler (async-signal-safe). Destroy it once no run uses it.
 */
struct npu_cancel;

NPU_API npu_status npu_cancel_create(struct npu_cancel **out);
NPU_API void npu_cancel_destroy(struct npu_cancel *cancel);
NPU_API void npu_cancel_trigger(struct npu_cancel *cancel);
NPU_API void npu_cancel_reset(struct npu_cancel *cancel);
/* 1 if triggered (and not reset since), else 0. */
NPU_API int npu_cancel_is_triggered(const struct npu_cancel *cancel);

struct npu_run_options {
	size_t struct_size;	/* sizeof(struct npu_run_options) */
	/*
	 * 1: measure every step of this run (each CPU node, each NPU segment)
	 * for npu_session_run_timing() / npu_session_step_timing(). 0: no
	 * clock is read per node and nothing is recorded.
	 */
	int timings;
	/* Borrowed for the run (an async run's: until its callback); NULL: none. */
	struct npu_cancel *cancel;
	/*
	 * IO binding (ONNX Runtime's IoBinding, TFLite's custom allocations);
	 * the arrays, their names and memory are borrowed for the run (an
	 * async run's: until its callback). See "IO binding" below.
	 *
	 * outputs: the outputs to compute, by name (0: all of them). Only the
	 * nodes these need run; npu_session_output() of any other output
	 * fails. An entry with data set is caller memory the output is
	 * written to: dtype, rank and dims must be the output's and nbytes
	 * exactly its size, data aligned to its element size. An entry with
	 * data NULL (dtype 0, nbytes 0) only chooses the output, which then
	 * lives in the session as usual.
	 */
	const struct npu_host_tensor *outputs;
	size_t num_outputs;
	/*
	 * Inputs in buffers of the model's NPU device (npu_buffer_alloc or
	 * npu_buffer_import_dmabuf on the device npu_engine_get_device()
	 * gives for the model's device name), by name, in place of entries of
	 * the run's 'inputs' (each model input given once, either way).
	 */
	const struct npu_device_tensor *device_inputs;
	size_t num_device_inputs;
};

/*
 * A model input in a device buffer (frozen layout): the tensor is nbytes
 * of dense C-order data of dtype and shape at 'offset' in 'buffer'.
 */
struct npu_device_tensor {
	const char *name;
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
	struct npu_buffer *buffer;
	uint64_t offset;
	size_t nbytes;
};

NPU_API void npu_run_options_init_sized(struct npu_run_options *opts, size_t struct_size);
#define npu_run_options_init(opts) \
	npu_run_options_init_sized((opts), sizeof(*(opts)))

/*
 * npu_session_run() (plan NULL) or npu_session_run_plan() with options;
 * opts may be NULL (the defaults).
 */
NPU_API npu_status npu_session_run_with(struct npu_session *session,
					struct npu_plan *plan,
					const struct npu_host_tensor *inputs,
					size_t count,
					const struct npu_run_options *opts);

/*
 * Called exactly once per accepted npu_session_run_async(), on one of the
 * engine's run workers, when the run ended: 'status' is what
 * npu_session_run_with() would have returned, npu_last_error() (on this
 * thread) its message. Inside it the run's outputs are read with
 * npu_session_output(); the session counts as running until it returns,
 * so another run of the session started here fails with NPU_ERR_BUSY and
 * npu_session_wait() here too; npu_session_destroy() here is allowed (it
 * takes effect once the callback returned). Do not wait here for another
 * session's run (npu_session_wait, npu_session_destroy of a session with
 * a run queued): with every worker in such a callback, the queue stalls.
 */
typedef void (*npu_run_callback)(npu_status status, struct npu_session *session, void *arg);

/*
 * npu_session_run_with() on a library thread (ONNX Runtime's RunAsync):
 * queues the run and returns at once; done(status, session, arg) reports
 * its end. The 'inputs' array is copied, but the tensors' data and names,
 * 'plan' and opts->cancel are borrowed until the callback. One run per
 * session at a time: while it is queued or running, any other run of the
 * session (sync or async) fails with NPU_ERR_BUSY. A run that is refused
 * (bad arguments, busy session, full queue) returns an error and never
 * calls done. Read the outputs with npu_session_output() in or after the
 * callback (after: once npu_session_wait() returned, or the callback told
 * the thread). The run holds the session's model, and so its engine: both
 * may be destroyed while it runs.
 */
NPU_API npu_status npu_session_run_async(struct npu_session *session,
					 struct npu_plan *plan,
					 const struct npu_host_tensor *inputs,
					 size_t count,
					 const struct npu_run_options *opts,
					 npu_run_callback done, void *arg);
/*
 * Block until the session has no async run in flight (its callback
 * returned); NPU_OK at once if it has none. npu_session_destroy() waits
 * the same way. NPU_ERR_BUSY when called from the session's own callback.
 */
NPU_API npu_status npu_session_wait(struct npu_session *session);

/* ---- IO binding: copies counted ----------------------------------------------- */

/*
 * Where the last run's data went (npu_run_options.outputs and
 * device_inputs). A host copy is a memcpy of a whole tensor by the
 * library: of an input whose data is not aligned to its element size (the
 * kernels read whole elements), of an output whose producer could not
 * write into the caller's memory (an output that is a model input or a
 * constant, or the same value bound twice). Quantizing a float input into
 * an NPU segment's device arena and dequantizing its outputs are
 * conversions every run needs, not copies: they are not counted.
 */
struct npu_io_stats {
	size_t struct_size;		/* sizeof(struct npu_io_stats) */
	uint64_t input_copies, input_copy_bytes;
	uint64_t output_copies, output_copy_bytes;
	/* Zero-copy bindings: */
	uint64_t inputs_in_place;	/* read where the caller put them */
	uint64_t device_inputs;		/* ... of those, in device buffers */
	uint64_t outputs_in_place;	/* written by their producer straight into
					 * the caller's memory */
	/* Nodes of the model's top-level graph that ran, and that did not
	 * because no chosen output needs them. */
	uint64_t nodes_run, nodes_skipped;
};

#define npu_io_stats_init(st) \
	((void)memset((st), 0, sizeof(*(st))), (st)->struct_size = sizeof(*(st)))

/* NPU_ERR_INVALID_ARG until a run succeeded. */
NPU_API npu_status npu_session_io_stats(const struct npu_session *session,
					struct npu_io_stats *stats);

/* ---- Measured steps of a run ---------------------------------------------------- */

enum npu_step_kind {
	NPU_STEP_CPU = 0,	/* one node on the host (If / Loop / Scan with their bodies) */
	NPU_STEP_NPU = 1,	/* one NPU segment: quantize, one job, dequantize */
};

/*
 * The last run, when it asked for timings. Times are ns of CLOCK_MONOTONIC
 * (start_ns) or from start_ns (steps), measured on the calling thread.
 */
struct npu_run_timing {
	size_t struct_size;	/* sizeof(struct npu_run_timing) */
	uint64_t start_ns;	/* the session began running the plan */
	uint64_t total_ns;	/* ... and had every output */
	size_t steps;		/* in the order they started */
	uint32_t clock_mhz;	/* what NPU cycles count (0: no NPU segment) */
};

/*
 * One step. The host runs CPU steps that do not need a segment's outputs
 * while its job is in flight, so a CPU step may lie inside an NPU step;
 * CPU steps never overlap each other, nor NPU steps each other (a
 * session has at most one job in flight). Strings live until the next run.
 */
struct npu_step_timing {
	size_t struct_size;	/* sizeof(struct npu_step_timing) */
	enum npu_step_kind kind;
	const char *name;	/* CPU: the node's name; NPU: its node, "npu_segment_N" */
	const char *op_type;	/* CPU: its op type; NPU: "NpuSegment" */
	int segment;		/* NPU: segment index; CPU: -1 */
	size_t nodes;		/* source nodes it runs (CPU: 1) */
	const char *first_node, *last_node;	/* NPU: what the segment spans */
	uint64_t start_ns;	/* began (NPU: quantizing its inputs) */
	uint64_t end_ns;	/* outputs ready (NPU: dequantized) */
	uint64_t submit_ns;	/* NPU: the job submitted ... */
	uint64_t done_ns;	/* ... and seen complete by the device layer */
	uint64_t cycles;	/* NPU: modeled device cycles of this job */
};

/* NPU_ERR_INVALID_ARG if the last run did not ask for timings or failed. */
NPU_API npu_status npu_session_run_timing(const struct npu_session *session,
					  struct npu_run_timing *timing);
NPU_API npu_status npu_session_step_timing(const struct npu_session *session,
					   size_t index,
					   struct npu_step_timing *step);

#define npu_run_timing_init(t) \
	((void)memset((t), 0, sizeof(*(t))), (t)->struct_size = sizeof(*(t)))
#define npu_step_timing_init(t) \
	((void)memset((t), 0, sizeof(*(t))), (t)->struct_size = sizeof(*(t)))

#ifdef __cplusplus
}
#endif

#endif /* NPU_MODEL_H */
