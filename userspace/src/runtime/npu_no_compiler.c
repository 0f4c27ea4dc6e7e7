// SPDX-License-Identifier: MIT
/*
 * libnpu-runtime's answer where libnpu-user imports or compiles
 * (npu_model_compile.c): this library runs compiled models (.npub) and has
 * neither the ONNX importer (nor protobuf-c) nor the compiler. Each entry
 * point the runtime core calls into them fails naming what it needed, so
 * an application linked against libnpu-runtime gets a clear error, not a
 * missing symbol; what only frees what those would have made does
 * nothing, as there is nothing to free.
 */
#include "runtime/npu_api.h"

#include <string.h>

#include "compiler/compiler.h"
#include "onnx/npu_onnx.h"
#include "npu/npu_compress.h"

#define RUNTIME_ONLY "libnpu-runtime runs compiled models (.npub) only"

npu_status npu_model_compile_options(struct npu_model *m)
{
	if (m->calib_method || m->codegen)
		return npu_api_fail(NPU_ERR_UNSUPPORTED,
				    "npu_model_options.%s: compiler options, and " RUNTIME_ONLY
				    ": use libnpu-user to compile",
				    m->calib_method ? "calib_method" : "codegen");
	return NPU_OK;
}

npu_status npu_model_import(struct npu_model *m, bool meta, struct npu_error *err)
{
	(void)meta;
	if (m->finished)	/* the CPU device, a quantization report */
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: this needs the model's source, and " RUNTIME_ONLY
				     " on an NPU device: use libnpu-user", m->source);
	if (m->npub)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: a compiled file before version 3 is compiled again when it loads, and "
				     RUNTIME_ONLY " of version 3: compile it again with 'npu compile'",
				     m->source);
	return npu_error_set(err, NPU_ERR_UNSUPPORTED,
			     "%s: not a compiled model, and " RUNTIME_ONLY
			     ": load ONNX models with libnpu-user", m->source);
}

npu_status npu_model_cpu_passes(struct npu_model *m, struct npu_graph *g, struct npu_error *err)
{
	(void)g;
	return npu_error_set(err, NPU_ERR_UNSUPPORTED, "%s: the CPU passes, and " RUNTIME_ONLY,
			     m->source);
}

npu_status npu_model_replay_passes(struct npu_graph *g, struct npu_error *err)
{
	return npu_error_set(err, NPU_ERR_UNSUPPORTED,
			     "%s: a compiled file before version 3 is compiled again on load, and "
			     RUNTIME_ONLY " of version 3", g->source);
}

npu_status npu_model_compile(struct npu_model *m, struct npu_plan *p, struct npu_error *err)
{
	(void)p;
	return npu_error_set(err, NPU_ERR_UNSUPPORTED, "%s: compiling, and " RUNTIME_ONLY,
			     m->source);
}

void npu_model_compile_free(struct npu_model *m)
{
	(void)m;	/* no calibration cache is ever made here */
}

void npu_plan_mixed_free(struct npu_plan *p)
{
	(void)p;	/* no mixed-precision search is ever run here */
}

npu_status npu_segment_generate(struct npu_segment *seg, struct npu_device *dev,
				uint32_t sram_size, bool profile, struct npu_error *err)
{
	(void)dev;
	(void)sram_size;
	return npu_error_set(err, NPU_ERR_UNSUPPORTED,
			     "NPU segment %d: %s needs code generation, and " RUNTIME_ONLY
			     " with their stored code", seg->index,
			     profile ? "per-op profiling" : "a segment without code");
}

npu_status npu_compiled_bind(struct npu_compiled *c, struct npu_graph *graph,
			     struct npu_device *device, struct npu_error *err)
{
	(void)c;
	(void)device;
	return npu_error_set(err, NPU_ERR_UNSUPPORTED, "%s: binding a compilation, and "
			     RUNTIME_ONLY, graph->source);
}

npu_status npu_onnx_read_tensor_file(const char *path, struct npu_tensor **out, char **name,
				     struct npu_error *err)
{
	*out = NULL;
	if (name)
		*name = NULL;
	return npu_error_set(err, NPU_ERR_UNSUPPORTED,
			     "%s: a serialized TensorProto needs protobuf-c, and " RUNTIME_ONLY
			     ": use .npy files", path);
}

NPU_API npu_status npu_plan_quant_report(struct npu_plan *plan, size_t max_samples,
					 struct npu_quant_report **out)
{
	(void)max_samples;
	if (out)
		*out = NULL;
	return npu_api_fail(NPU_ERR_UNSUPPORTED, "%s: the quantization report compiles, and "
			    RUNTIME_ONLY, plan ? plan->model->source : "npu_plan_quant_report");
}

NPU_API void npu_quant_report_free(struct npu_quant_report *report)
{
	(void)report;	/* npu_plan_quant_report() never makes one here */
}

NPU_API npu_status npu_plan_mixed_precision(const struct npu_plan *plan,
					    struct npu_mixed_precision *out)
{
	struct npu_mixed_precision mp = { .struct_size = sizeof(mp) };

	if (!plan || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_mixed_precision: NULL argument");
	/* No search ran: the zero answer, as libnpu-user gives without a target. */
	return npu_api_copy_stats(out, &mp, sizeof(mp), "npu_mixed_precision");
}

NPU_API void npu_compress_options_init_sized(struct npu_compress_options *o, size_t size)
{
	struct npu_compress_options d = { .struct_size = size, .method = NPU_PRUNE_MAGNITUDE,
					  .sparsity = 0.5 };	/* as npu_compress_api.c */

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

NPU_API npu_status npu_compress_memory(const void *data, size_t size, const char *name,
				       const struct npu_compress_options *opts,
				       struct npu_compress_result **out)
{
	(void)data, (void)size, (void)opts;
	if (out)
		*out = NULL;
	return npu_api_fail(NPU_ERR_UNSUPPORTED, "%s: compression imports the ONNX model, and "
			    RUNTIME_ONLY, name ? name : "npu_compress");
}

NPU_API npu_status npu_compress_file(const char *path, const struct npu_compress_options *opts,
				     struct npu_compress_result **out)
{
	return npu_compress_memory(NULL, 0, path, opts, out);
}

NPU_API void npu_compress_result_free(struct npu_compress_result *result)
{
	(void)result;	/* npu_compress_*() never makes one here */
}
