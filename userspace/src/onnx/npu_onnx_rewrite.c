// SPDX-License-Identifier: MIT
/*
 * npu_onnx_rewrite.c - a ModelProto with some constants replaced (model
 * compression): everything else (nodes, attributes, opsets, metadata)
 * stays as the file had it, so the result is the same standard model
 * with new weights.
 */
#include "onnx/npu_onnx.h"

#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

/* Make t hold x (fp32, raw little-endian data), keeping its name. */
static bool tensor_set(Onnx__TensorProto *t, const struct npu_tensor *x)
{
	int64_t *dims = malloc(sizeof(*dims) * ((size_t)x->shape.rank + 1));
	uint8_t *raw = malloc(x->nbytes + 1);

	if (!dims || !raw) {
		free(dims);
		free(raw);
		return false;
	}
	memcpy(dims, x->shape.dims, sizeof(*dims) * (size_t)x->shape.rank);
	if (x->nbytes)
		memcpy(raw, x->data, x->nbytes);
	free(t->dims);
	t->dims = dims;
	t->n_dims = (size_t)x->shape.rank;
	t->has_data_type = 1;
	t->data_type = (int32_t)x->dtype;
	free(t->float_data);
	t->float_data = NULL;
	t->n_float_data = 0;
	free(t->int32_data);
	t->int32_data = NULL;
	t->n_int32_data = 0;
	free(t->int64_data);
	t->int64_data = NULL;
	t->n_int64_data = 0;
	free(t->double_data);
	t->double_data = NULL;
	t->n_double_data = 0;
	free(t->raw_data.data);
	t->raw_data.data = raw;
	t->raw_data.len = x->nbytes;
	t->has_raw_data = 1;
	return true;
}

static Onnx__TensorProto *find_constant(Onnx__GraphProto *g, const char *name)
{
	size_t i, k;

	for (i = 0; i < g->n_initializer; i++)
		if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name))
			return g->initializer[i];
	for (i = 0; i < g->n_node; i++) {
		Onnx__NodeProto *n = g->node[i];

		if (!n->op_type || strcmp(n->op_type, "Constant") || n->n_output != 1 ||
		    strcmp(n->output[0], name))
			continue;
		for (k = 0; k < n->n_attribute; k++)
			if (!strcmp(n->attribute[k]->name, "value") && n->attribute[k]->t)
				return n->attribute[k]->t;
	}
	return NULL;
}

npu_status npu_onnx_replace_constants(const void *data, size_t size, const char *source,
				      const char *const *names,
				      const struct npu_tensor *const *tensors, size_t count,
				      const struct npu_onnx_int_attr *attrs, size_t num_attrs,
				      bool drop_value_info, void **out, size_t *out_size,
				      struct npu_error *err)
{
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
	npu_status st = NPU_OK;
	size_t i;

	*out = NULL;
	*out_size = 0;
	if (!mp || !mp->graph) {
		if (mp)
			onnx__model_proto__free_unpacked(mp, NULL);
		return npu_error_set(err, NPU_ERR_MODEL, "%s: not a valid ONNX model", source);
	}
	for (i = 0; !st && i < count; i++) {
		Onnx__TensorProto *t = find_constant(mp->graph, names[i]);

		if (!t)
			st = npu_error_set(err, NPU_ERR_MODEL,
					   "%s: '%s' is neither an initializer nor a Constant of the main graph",
					   source, names[i]);
		else if (!tensor_set(t, tensors[i]))
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; !st && i < num_attrs; i++) {
		Onnx__AttributeProto *a = NULL;
		size_t n, k;

		for (n = 0; !a && n < mp->graph->n_node; n++) {
			Onnx__NodeProto *nd = mp->graph->node[n];

			if (!nd->n_output || strcmp(nd->output[0], attrs[i].node_output))
				continue;
			for (k = 0; k < nd->n_attribute; k++)
				if (!strcmp(nd->attribute[k]->name, attrs[i].attr) &&
				    nd->attribute[k]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
					a = nd->attribute[k];
		}
		if (!a)
			st = npu_error_set(err, NPU_ERR_MODEL,
					   "%s: no node making '%s' has an INT attribute '%s'", source,
					   attrs[i].node_output, attrs[i].attr);
		else
			a->i = attrs[i].value;
	}
	/* Shapes recorded for inner values may name pruned channel counts. */
	if (!st && drop_value_info) {
		for (i = 0; i < mp->graph->n_value_info; i++)
			onnx__value_info_proto__free_unpacked(mp->graph->value_info[i], NULL);
		free(mp->graph->value_info);
		mp->graph->value_info = NULL;
		mp->graph->n_value_info = 0;
	}
	if (!st) {
		*out_size = onnx__model_proto__get_packed_size(mp);
		*out = malloc(*out_size + 1);
		if (*out)
			onnx__model_proto__pack(mp, *out);
		else
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	onnx__model_proto__free_unpacked(mp, NULL);
	return st;
}
