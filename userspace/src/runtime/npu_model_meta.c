// SPDX-License-Identifier: MIT
/*
 * npu_model_meta.c - a model's metadata (npu/npu_model.h): what its
 * ModelProto says about itself, kept by the importer (onnx/npu_onnx_meta.c).
 */
#include "runtime/npu_api.h"

#include <stdlib.h>
#include <string.h>

#include "onnx/npu_onnx.h"

/* Here, not in the importer: a compiled file's reader makes them too. */
void npu_onnx_meta_free(struct npu_onnx_meta *m)
{
	size_t i;

	if (!m)
		return;
	free(m->producer_name);
	free(m->producer_version);
	free(m->domain);
	free(m->doc_string);
	free(m->graph_name);
	free(m->graph_doc_string);
	for (i = 0; i < m->num_props; i++) {
		free(m->keys[i]);
		free(m->values[i]);
	}
	free(m->keys);
	free(m->values);
	free(m);
}

NPU_API npu_status npu_model_get_metadata(const struct npu_model *m,
					  struct npu_model_metadata *out)
{
	struct npu_model_metadata md = { .struct_size = sizeof(md) };

	if (!m || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_get_metadata: %s is NULL",
				    !m ? "model" : "metadata");
	md.producer_name = m->meta->producer_name;
	md.producer_version = m->meta->producer_version;
	md.domain = m->meta->domain;
	md.model_version = m->meta->model_version;
	md.doc_string = m->meta->doc_string;
	md.graph_name = m->meta->graph_name;
	md.graph_doc_string = m->meta->graph_doc_string;
	md.num_props = m->meta->num_props;
	return npu_api_copy_stats(out, &md, sizeof(md), "npu_model_metadata");
}

NPU_API npu_status npu_model_metadata_prop(const struct npu_model *m, size_t index,
					   const char **key, const char **value)
{
	if (!m)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_metadata_prop: model is NULL");
	if (index >= m->meta->num_props)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_model_metadata_prop: %s has %zu metadata_props entries, not %zu",
				    m->source, m->meta->num_props, index + 1);
	if (key)
		*key = m->meta->keys[index];
	if (value)
		*value = m->meta->values[index];
	return NPU_OK;
}

NPU_API npu_status npu_model_metadata_find(const struct npu_model *m, const char *key,
					   const char **value)
{
	size_t i;

	if (!m || !key || !value)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_metadata_find: %s is NULL",
				    !m ? "model" : !key ? "key" : "value");
	*value = NULL;
	for (i = 0; i < m->meta->num_props; i++)
		if (!strcmp(m->meta->keys[i], key)) {
			*value = m->meta->values[i];
			return NPU_OK;
		}
	return npu_api_fail(NPU_ERR_NOT_FOUND,
			    "npu_model_metadata_find: %s has no metadata_props key '%s'",
			    m->source, key);
}
