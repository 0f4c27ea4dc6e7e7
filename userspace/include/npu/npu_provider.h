/* SPDX-License-Identifier: MIT */
/*
 * npu_provider.h - execution providers: who runs which nodes of a model.
 *
 * A model's placement is a priority list of providers
 * (npu_model_options.providers, "npu,cpu"; npu --providers). When a plan
 * is made, each provider in turn is offered the nodes no earlier one took;
 * what it takes it compiles, and the CPU runs what is left. The library
 * has two: "npu" (the model's NPU device: the compiler's placement,
 * segments and command streams) and "cpu" (its kernels, always last).
 * An application adds its own, as ONNX Runtime's execution providers and
 * TFLite's delegates do:
 *
 *	static bool my_can_run(void *user, const struct npu_provider_node *node,
 *			       char *why, size_t why_size)
 *	{
 *		if (!strcmp(npu_provider_node_op_type(node), "Relu"))
 *			return true;
 *		snprintf(why, why_size, "only Relu");
 *		return false;
 *	}
 *
 *	struct npu_provider p;
 *
 *	npu_provider_init(&p);
 *	p.name = "myaccel";
 *	p.can_run = my_can_run;
 *	p.compile = my_compile;       one subgraph of nodes it took -> state
 *	p.compute = my_compute;       runs it: npu_kernel_input / _output
 *	p.release = my_release;
 *	npu_engine_register_provider(engine, &p);
 *	mo.providers = "myaccel,npu,cpu";
 *
 * Nodes a provider takes that touch one another form one subgraph (the
 * largest runs the graph's order allows without a cycle); each becomes
 * one node of the plan that the provider's compute() runs, with the
 * subgraph's inputs and outputs as its own (npu_kernel_input() /
 * npu_kernel_output() of npu_custom_op.h, in the subgraph's order).
 * Control-flow nodes (If, Loop, Scan) and custom ops are not offered.
 *
 * Compiled files: npu_plan_save_compiled() stores each such node with its
 * subgraph and, if the provider has serialize(), the bytes it gave; a
 * load calls deserialize() with them (else compile() again). Loading
 * needs the provider registered on the loading engine.
 *
 * Threads: can_run(), compile(), serialize() and deserialize() run while
 * a plan is made, on the thread making it; compute() may run for one
 * state on several sessions' threads at once, so it must only read it.
 */
#ifndef NPU_PROVIDER_H
#define NPU_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>	/* memset in npu_provider_init() */

#include "npu/npu_custom_op.h"	/* npu_kernel_context, npu_op_attrs */
#include "npu/npu_status.h"
#include "npu/npu_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_engine;

/* One node of the model (valid during the callback that was given it). */
struct npu_provider_node;
/* Nodes a provider took, as one subgraph (valid during the callback). */
struct npu_provider_subgraph;

NPU_API const char *npu_provider_node_name(const struct npu_provider_node *node);
NPU_API const char *npu_provider_node_op_type(const struct npu_provider_node *node);
NPU_API const char *npu_provider_node_domain(const struct npu_provider_node *node);	/* "" */
NPU_API int npu_provider_node_opset(const struct npu_provider_node *node);
NPU_API size_t npu_provider_node_num_inputs(const struct npu_provider_node *node);
NPU_API size_t npu_provider_node_num_outputs(const struct npu_provider_node *node);
/*
 * Input / output 'index': its name, type and shape (all dims known when a
 * plan is made) and, for an input that is a constant (weights), its bytes
 * in *constant (NULL otherwise; constant may be NULL). An omitted optional
 * input is NPU_ERR_NOT_FOUND.
 */
NPU_API npu_status npu_provider_node_input(const struct npu_provider_node *node, size_t index,
					   struct npu_tensor_info *info, const void **constant);
NPU_API npu_status npu_provider_node_output(const struct npu_provider_node *node, size_t index,
					    struct npu_tensor_info *info);
NPU_API const struct npu_op_attrs *npu_provider_node_attrs(const struct npu_provider_node *node);
/*
 * During can_run(): whether input 'index' of the node is made by a node
 * this provider took in this pass. Nodes are offered in an order that
 * runs the graph (a node after those making its inputs), so a provider
 * can take "everything downstream of X" (the remote provider's tail).
 */
NPU_API bool npu_provider_node_input_taken(const struct npu_provider_node *node, size_t index);

/* The subgraph's nodes in an order that runs them (each after its inputs). */
NPU_API size_t npu_provider_subgraph_num_nodes(const struct npu_provider_subgraph *sg);
NPU_API const struct npu_provider_node *
npu_provider_subgraph_node(const struct npu_provider_subgraph *sg, size_t index);
/*
 * Its inputs (values its nodes read that are made outside it, constants
 * excluded) and outputs (values its nodes make that something outside
 * reads): compute()'s npu_kernel_input(i) / npu_kernel_output(i).
 */
NPU_API size_t npu_provider_subgraph_num_inputs(const struct npu_provider_subgraph *sg);
NPU_API size_t npu_provider_subgraph_num_outputs(const struct npu_provider_subgraph *sg);
NPU_API npu_status npu_provider_subgraph_input(const struct npu_provider_subgraph *sg,
					       size_t index, struct npu_tensor_info *info);
NPU_API npu_status npu_provider_subgraph_output(const struct npu_provider_subgraph *sg,
						size_t index, struct npu_tensor_info *info);

struct npu_provider {
	size_t struct_size;	/* sizeof(struct npu_provider) */
	/*
	 * How models name it in npu_model_options.providers: 1 to 31 of
	 * [a-z0-9_], starting with a letter; not "cpu" or "npu" ("remote" is
	 * libnpu-remote's: npu_remote_register_provider()).
	 */
	const char *name;
	void *user;		/* passed to every callback */
	/*
	 * Capability (required): true to take the node; false, with why in
	 * why[why_size] (for npu compile --explain), to leave it.
	 */
	bool (*can_run)(void *user, const struct npu_provider_node *node, char *why,
			size_t why_size);
	/*
	 * Compile one subgraph it took into *state (required), when a plan's
	 * kernels are prepared (once per plan, and once more where an NPU
	 * model's calibration runs the graph). An error fails the plan with
	 * npu_last_error_set()'s message.
	 */
	npu_status (*compile)(void *user, const struct npu_provider_subgraph *sg, void **state);
	/*
	 * Run it (required): read the inputs, allocate and write every output
	 * (npu_kernel_input / npu_kernel_output). An error fails the run, with
	 * npu_kernel_set_error()'s message; so does an output left
	 * unallocated or allocated with another type or shape than the
	 * subgraph's.
	 */
	npu_status (*compute)(void *user, void *state, struct npu_kernel_context *ctx);
	void (*release)(void *user, void *state);	/* optional */
	/*
	 * Optional, together: the state as bytes (*data from malloc(), the
	 * library frees it) for a compiled file, and a state from them.
	 */
	npu_status (*serialize)(void *user, const void *state, void **data, size_t *size);
	npu_status (*deserialize)(void *user, const struct npu_provider_subgraph *sg,
				  const void *data, size_t size, void **state);
	/* Optional: when the engine goes (after its models), e.g. to free user. */
	void (*destroy)(void *user);
};

NPU_API void npu_provider_init_sized(struct npu_provider *provider, size_t struct_size);
#define npu_provider_init(p) npu_provider_init_sized((p), sizeof(*(p)))

/*
 * Register a provider on the engine (before loading the models that name
 * it); strings are copied, 'user' is kept. A second provider of the same
 * name is NPU_ERR_BUSY; a bad name or a missing callback is
 * NPU_ERR_INVALID_ARG.
 */
NPU_API npu_status npu_engine_register_provider(struct npu_engine *engine,
						const struct npu_provider *provider);

#ifdef __cplusplus
}
#endif

#endif /* NPU_PROVIDER_H */
