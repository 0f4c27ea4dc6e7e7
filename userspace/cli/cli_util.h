/* SPDX-License-Identifier: MIT */
/* Helpers shared by the npu subcommands: shapes, random inputs, JSON. */
#ifndef NPU_CLI_UTIL_H
#define NPU_CLI_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npu/npu_model.h"

/* "1x3x640x640" (or "1,3,640,640", "scalar") into dims; rank or -1. */
int npu_cli_parse_dims(const char *s, int64_t *dims);

/*
 * A model as a subcommand uses it: an engine of 'threads', the model, the
 * shapes given with --shape, and once planned the plan and one session.
 */
#define NPU_CLI_MAX_SHAPES 16

struct npu_cli_model {
	struct npu_engine *engine;
	struct npu_model *model;
	struct npu_plan *plan;		/* npu_cli_plan() */
	struct npu_session *session;	/* npu_cli_plan() */
	size_t num_shapes;
	struct npu_host_tensor shapes[NPU_CLI_MAX_SHAPES];	/* name, rank, dims */
	char shape_names[NPU_CLI_MAX_SHAPES][256];
};

/*
 * Engine options with the debugging switches the CLI takes from the
 * environment (the library reads none but NPU_TRACE_FILE): NPU_CPU_ISA =
 * portable|avx2|avx512 caps the CPU kernels' path, NPU_POOL_STATS=1 times
 * the thread pool, NPU_TRACE_FILE=path traces ops and jobs.
 */
void npu_cli_engine_options(struct npu_engine_options *eo, int threads);

/*
 * Device options for --device's default: NPU_DEVICE (sim|accel|auto|
 * /dev/accel/accelN) if set, else auto; the trace file NPU_TRACE_FILE.
 * Prints the error, returns non-zero.
 */
struct npu_device_options;
int npu_cli_device_default(struct npu_device_options *o, const char *cmd);

/*
 * The CPU options NPU_CPU_FUSE=0|1, NPU_CPU_NCHWC=auto|0|1 and
 * NPU_CPU_WINOGRAD=auto|0|all ask for, as a --cpu spec in buf (NULL when
 * none is set): what npu_cli_open() uses when --cpu is not given.
 */
const char *npu_cli_cpu_env(char *buf, size_t size);

/* Engine and model (CPU options from the environment without --cpu);
 * prints the error and returns non-zero. */
/*
 * npu_cli_open() with setup(engine, arg) called between creating the engine
 * and loading the model (registering a provider); non-zero fails the open.
 */
int npu_cli_open_setup(struct npu_cli_model *cm, const char *path,
		       const struct npu_model_options *opts, int threads, const char *cmd,
		       int (*setup)(struct npu_engine *engine, void *arg), void *arg);
int npu_cli_open(struct npu_cli_model *cm, const char *path,
		 const struct npu_model_options *opts, int threads,
		 const char *cmd);
void npu_cli_close(struct npu_cli_model *cm);

/* Record "NAME=DIMS" for the plan; prints the error and returns non-zero. */
int npu_cli_apply_shape(struct npu_cli_model *cm, const char *arg, const char *cmd);

/* Input 'index' as declared, with the dims --shape gave it. */
int npu_cli_input_info(const struct npu_cli_model *cm, size_t index,
		       struct npu_tensor_info *info);

/* The plan for the current shapes and a session; prints the error. */
int npu_cli_plan(struct npu_cli_model *cm, const char *cmd);

/*
 * Random inputs for every model input at its planned shape, seeded:
 * floats uniform in [lo, hi), integers in [0, 10). Returns the number of
 * tensors filled (= npu_model_num_inputs) or -1 with a message printed;
 * free with npu_cli_free_inputs().
 */
int npu_cli_random_inputs(const struct npu_cli_model *cm, uint64_t seed, float lo,
			  float hi, const char *const *shapes, size_t num_shapes,
			  struct npu_host_tensor *out, const char *cmd);
void npu_cli_free_inputs(struct npu_host_tensor *t, int count);

/*
 * The samples of a calibration or evaluation directory, sorted by name (the
 * order the library's calibration reads them in): its *.npy files
 * (npy_files), or its subdirectories (dot names skipped). Returns the
 * count, or -1 when 'dir' cannot be read; free with npu_cli_free_names().
 */
int npu_cli_list_samples(const char *dir, bool npy_files, char ***names);
void npu_cli_free_names(char **names, int count);

/*
 * Fill a tensor from a splitmix64 stream: floats uniform in [lo, hi),
 * integers in [0, 10), bools 0/1. Returns -1 for other types.
 */
int npu_cli_fill_random(struct npu_host_tensor *t, uint64_t *rng, float lo, float hi);

/* A JSON string literal, escaped. */
void npu_cli_json_string(FILE *f, const char *s);

/* Parse a positive int option value; prints and returns -1 when invalid. */
int npu_cli_parse_int(const char *cmd, const char *opt, const char *v,
		      int min, int max);

/*
 * --parallel data|pipeline|auto into *mode; prints and returns -1 when
 * invalid ("tiles": not built yet).
 */
int npu_cli_parse_parallel(const char *cmd, const char *v, enum npu_parallel_mode *mode);

/* --link MBIT[,RTT_MS]: Mbit/s > 0 and a round trip >= 0 ms; -1 if malformed. */
int npu_cli_parse_link(const char *v, double *mbit, double *rtt_ms);

#endif /* NPU_CLI_UTIL_H */
