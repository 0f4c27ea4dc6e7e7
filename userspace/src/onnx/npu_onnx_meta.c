// SPDX-License-Identifier: MIT
/*
 * npu_onnx_meta.c - what a ModelProto says about itself: producer, domain,
 * model version, doc strings and metadata_props (npu_model_get_metadata).
 */
#include "onnx/npu_onnx_internal.h"

#include <stdlib.h>
#include <string.h>

/* A copy of an optional proto string ("" when absent); false on ENOMEM. */
static bool dup_str(char **dst, const char *src)
{
	*dst = strdup(src ? src : "");
	return *dst != NULL;
}

npu_status npu_onnx_meta_from_proto(const Onnx__ModelProto *mp, const char *source,
				    struct npu_onnx_meta **out, struct npu_error *err)
{
	struct npu_onnx_meta *m = calloc(1, sizeof(*m));
	size_t i, j, n = mp->n_metadata_props;
	bool ok;

	*out = NULL;
	if (!m)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	m->model_version = mp->has_model_version ? mp->model_version : 0;
	ok = dup_str(&m->producer_name, mp->producer_name) &&
	     dup_str(&m->producer_version, mp->producer_version) &&
	     dup_str(&m->domain, mp->domain) &&
	     dup_str(&m->doc_string, mp->doc_string) &&
	     dup_str(&m->graph_name, mp->graph ? mp->graph->name : NULL) &&
	     dup_str(&m->graph_doc_string, mp->graph ? mp->graph->doc_string : NULL);
	m->keys = calloc(n + 1, sizeof(*m->keys));
	m->values = calloc(n + 1, sizeof(*m->values));
	if (!ok || !m->keys || !m->values) {
		npu_onnx_meta_free(m);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < n; i++) {
		const Onnx__StringStringEntryProto *e = mp->metadata_props[i];

		/* A key is what a lookup finds: it must exist and be unique. */
		if (!e || !e->key || !e->key[0]) {
			npu_onnx_meta_free(m);
			return npu_error_set(err, NPU_ERR_MODEL,
					     "%s: metadata_props entry %zu has no key", source, i);
		}
		for (j = 0; j < i; j++)
			if (!strcmp(m->keys[j], e->key)) {
				npu_error_set(err, NPU_ERR_MODEL,
					      "%s: metadata_props key '%s' appears twice (entries %zu and %zu)",
					      source, e->key, j, i);
				npu_onnx_meta_free(m);
				return NPU_ERR_MODEL;
			}
		m->num_props = i + 1;
		if (!dup_str(&m->keys[i], e->key) || !dup_str(&m->values[i], e->value)) {
			npu_onnx_meta_free(m);
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		}
	}
	*out = m;
	return NPU_OK;
}
