/* SPDX-License-Identifier: MIT */
/*
 * npu_model.h - the engine API: load ONNX models once, run them from many
 * threads, on the CPU or compiled for an NPU. One header per object:
 * npu_engine.h, this one (models), npu_plan.h, npu_session.h, with
 * npu_tensor.h and npu_version.h; this one includes them all.
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
 *            the optimized graph, arena layout and, on NPU devices, the
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
#include <string.h>	/* memset in the *_init() macros */

#include "npu/npu_status.h"
#include "npu/npu_version.h"
#include "npu/npu_tensor.h"
#include "npu/npu_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_device;

/* ---- Model ---------------------------------------------------------------- */

struct npu_model;

/*
 * A model on a set of devices. DATA: each run on one device, runs at once
 * spread by least outstanding modeled work; every device holds the whole
 * model. PIPELINE: the NPU work is cut into one stage per device
 * (consecutive segments of similar modeled cost); a run passes through
 * the devices in turn and runs at once (sessions, async runs) fill the
 * pipeline; each device holds its stage's constants. AUTO: the cost model
 * picks (npu_plan_parallel_info() says what and why): data parallel unless
 * one device cannot hold the model, then a pipeline.
 */
enum npu_parallel_mode {
	NPU_PARALLEL_AUTO = 0,
	NPU_PARALLEL_DATA = 1,
	NPU_PARALLEL_PIPELINE = 2,
};

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
	/*
	 * Since 2.2. Execution providers in priority order, comma-separated
	 * (npu/npu_provider.h): "npu" (the NPU 'device'; "sim" when that is
	 * "cpu"), "cpu" (always last; added when not named) and providers the
	 * application registered on the engine. Without "npu" no device is
	 * opened. NULL: "npu,cpu" on an NPU device, else "cpu". A name nobody
	 * registered, a name twice or "cpu" before another fails the load
	 * naming it.
	 */
	const char *providers;
	/*
	 * Since 2.3. How runs use a set of several devices ("sim:4",
	 * "accel:*"; one device: ignored). Documentation/multi-npu.md.
	 */
	enum npu_parallel_mode parallel;
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

/*
 * Since 2.3: the devices a model runs on. A device spec naming a set
 * ("sim:4", "accel:*", "accel:0,accel:1") gives the model every one of
 * them: plans are compiled once and their code and constants put on each
 * device when it is first used; each run goes to the device with the
 * least modeled work outstanding (data parallel). 0 on "cpu".
 */
NPU_API size_t npu_model_num_devices(const struct npu_model *model);

/* What a model's runs did on one of its devices. */
struct npu_model_device_stats {
	size_t struct_size;		/* sizeof(struct npu_model_device_stats) */
	const char *name;		/* the engine's name: "sim#1", "/dev/accel/accel0" */
	uint64_t runs;			/* runs done on it */
	uint64_t inflight;		/* runs on it now */
	uint64_t modeled_cycles;	/* NPU cycles its jobs took, modeled, summed */
	uint32_t clock_mhz;		/* its modeled clock (0 before a plan ran) */
	/*
	 * A run that fails on a device of a set as a device fails (a job
	 * error or hang, the device out of memory) runs again on another;
	 * failovers counts those runs here. When the other succeeds this one
	 * is taken out of rotation: no run is sent to it until the model is
	 * loaded again (unless every device of a session's mask is out).
	 */
	uint32_t out_of_rotation;
	uint64_t failovers;
	/* Device memory of the engine's handle (every model's buffers on it):
	 * now and at most (npu_device_memory()). */
	uint64_t memory_bytes, memory_peak_bytes;
};

NPU_API void npu_model_device_stats_init_sized(struct npu_model_device_stats *stats,
					       size_t struct_size);
#define npu_model_device_stats_init(stats) \
	npu_model_device_stats_init_sized((stats), sizeof(*(stats)))
NPU_API npu_status npu_model_device_stats(const struct npu_model *model, size_t index,
					  struct npu_model_device_stats *out);

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

#ifdef __cplusplus
}
#endif

/* Plans and sessions, which every model user needs. */
#include "npu/npu_plan.h"
#include "npu/npu_session.h"

#endif /* NPU_MODEL_H */
