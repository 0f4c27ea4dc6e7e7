/* SPDX-License-Identifier: MIT */
/*
 * onnx_builder.h - tiny helpers to build ONNX ModelProtos in unit tests
 * with the generated protobuf-c structs (static storage, test-only).
 */
#ifndef NPU_TEST_ONNX_BUILDER_H
#define NPU_TEST_ONNX_BUILDER_H

#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

#define TB_MAX 16

struct tb_model {
	Onnx__ModelProto model;
	Onnx__GraphProto graph;
	Onnx__OperatorSetIdProto opset[2], *opset_ptr[2];
	Onnx__NodeProto nodes[TB_MAX], *node_ptr[TB_MAX];
	char *node_in[TB_MAX][4], *node_out[TB_MAX][2];
	Onnx__AttributeProto attrs[TB_MAX], *attr_ptr[TB_MAX][1];
	Onnx__ValueInfoProto vi[TB_MAX], *in_ptr[TB_MAX], *out_ptr[TB_MAX];
	Onnx__TypeProto types[TB_MAX];
	Onnx__TypeProto__Tensor ttypes[TB_MAX];
	Onnx__TensorShapeProto shapes[TB_MAX];
	Onnx__TensorShapeProto__Dimension dims[TB_MAX][4], *dim_ptr[TB_MAX][4];
	Onnx__TensorProto inits[TB_MAX], *init_ptr[TB_MAX];
	size_t n_vi;
};

static inline void tb_init(struct tb_model *m, int64_t opset)
{
	memset(m, 0, sizeof(*m));
	onnx__model_proto__init(&m->model);
	onnx__graph_proto__init(&m->graph);
	onnx__operator_set_id_proto__init(&m->opset[0]);
	m->model.has_ir_version = 1;
	m->model.ir_version = 8;
	m->opset[0].domain = "";
	m->opset[0].has_version = 1;
	m->opset[0].version = opset;
	m->opset_ptr[0] = &m->opset[0];
	m->model.n_opset_import = 1;
	m->model.opset_import = m->opset_ptr;
	m->model.graph = &m->graph;
	m->graph.name = "g";
	m->graph.node = m->node_ptr;
	m->graph.input = m->in_ptr;
	m->graph.output = m->out_ptr;
	m->graph.initializer = m->init_ptr;
}

/* A float tensor value info "name" with up to 4 dims (-1: symbolic "N"). */
static inline Onnx__ValueInfoProto *tb_vi(struct tb_model *m, const char *name,
					  int rank, const int64_t *d)
{
	size_t k = m->n_vi++;
	int i;

	onnx__value_info_proto__init(&m->vi[k]);
	onnx__type_proto__init(&m->types[k]);
	onnx__type_proto__tensor__init(&m->ttypes[k]);
	onnx__tensor_shape_proto__init(&m->shapes[k]);
	m->vi[k].name = (char *)name;
	m->vi[k].type = &m->types[k];
	m->types[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	m->types[k].tensor_type = &m->ttypes[k];
	m->ttypes[k].has_elem_type = 1;
	m->ttypes[k].elem_type = 1;
	m->ttypes[k].shape = &m->shapes[k];
	m->shapes[k].n_dim = (size_t)rank;
	m->shapes[k].dim = m->dim_ptr[k];
	for (i = 0; i < rank; i++) {
		onnx__tensor_shape_proto__dimension__init(&m->dims[k][i]);
		if (d[i] >= 0) {
			m->dims[k][i].value_case =
				ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			m->dims[k][i].dim_value = d[i];
		} else {
			m->dims[k][i].value_case =
				ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			m->dims[k][i].dim_param = "N";
		}
		m->dim_ptr[k][i] = &m->dims[k][i];
	}
	return &m->vi[k];
}

static inline void tb_input(struct tb_model *m, const char *name, int rank,
			    const int64_t *d)
{
	m->in_ptr[m->graph.n_input++] = tb_vi(m, name, rank, d);
}

static inline void tb_output(struct tb_model *m, const char *name, int rank,
			     const int64_t *d)
{
	m->out_ptr[m->graph.n_output++] = tb_vi(m, name, rank, d);
}

/* A node with up to 4 inputs ("" = omitted) and one output. */
static inline Onnx__NodeProto *tb_node(struct tb_model *m, const char *op,
				       const char *name, const char *out,
				       int n_in, const char *in0,
				       const char *in1)
{
	size_t k = m->graph.n_node++;
	Onnx__NodeProto *n = &m->nodes[k];

	onnx__node_proto__init(n);
	n->op_type = (char *)op;
	n->name = (char *)name;
	m->node_in[k][0] = (char *)in0;
	m->node_in[k][1] = (char *)in1;
	n->n_input = (size_t)n_in;
	n->input = m->node_in[k];
	m->node_out[k][0] = (char *)out;
	n->n_output = 1;
	n->output = m->node_out[k];
	m->node_ptr[k] = n;
	return n;
}

static inline Onnx__AttributeProto *tb_attr_int(struct tb_model *m,
						Onnx__NodeProto *n,
						const char *name, int64_t v)
{
	size_t k = (size_t)(n - m->nodes);
	Onnx__AttributeProto *a = &m->attrs[k];

	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	a->has_i = 1;
	a->i = v;
	m->attr_ptr[k][0] = a;
	n->n_attribute = 1;
	n->attribute = m->attr_ptr[k];
	return a;
}

static inline Onnx__TensorProto *tb_init_tensor(struct tb_model *m,
						const char *name, int32_t type,
						int rank, int64_t *dims)
{
	Onnx__TensorProto *t = &m->inits[m->graph.n_initializer];

	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->has_data_type = 1;
	t->data_type = type;
	t->n_dims = (size_t)rank;
	t->dims = dims;
	m->init_ptr[m->graph.n_initializer++] = t;
	return t;
}

/* Serialize; the caller frees. */
static inline void *tb_pack(struct tb_model *m, size_t *size)
{
	void *buf;

	*size = onnx__model_proto__get_packed_size(&m->model);
	buf = malloc(*size ? *size : 1);
	if (buf)
		onnx__model_proto__pack(&m->model, buf);
	return buf;
}

#endif /* NPU_TEST_ONNX_BUILDER_H */
