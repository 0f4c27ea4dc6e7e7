// SPDX-License-Identifier: MIT
/*
 * fuzz_onnx: libFuzzer target over the ONNX importer. Any byte string must
 * give either a checked graph or an error message, never a crash, leak or
 * undefined behaviour; a graph that imports also goes through shape
 * inference and constant folding. The same bytes are also read as a
 * tensor (string tensors checked and read as the runtime reads them), a
 * sequence and an optional data set. Seeds: tests/fuzz/corpus/onnx/.
 */
#include <stddef.h>
#include <stdint.h>

#include "graph/npu_ir.h"
#include "graph/npu_seq.h"
#include "graph/npu_str.h"
#include "onnx/npu_onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct npu_error err = { 0 };
	struct npu_graph *g = NULL;
	struct npu_tensor *t = NULL;

	if (npu_onnx_import(data, size, "fuzz.onnx", &g, &err) == NPU_OK) {
		npu_graph_infer(g, true, &err);
		npu_graph_destroy(g);
	}
	if (npu_onnx_read_tensor(data, size, "fuzz.pb", &t, NULL, &err) ==
	    NPU_OK) {
		if (t->dtype == NPU_DTYPE_STRING && npu_str_check(t, "fuzz.pb", &err) == NPU_OK) {
			volatile unsigned char sink = 0;
			size_t i, k, len;

			/* Every byte of every string: ASan sees any read out of bounds. */
			for (i = 0; i < (size_t)npu_shape_numel(&t->shape); i++) {
				const char *str = npu_str_at(t, i, &len);

				for (k = 0; k < len; k++)
					sink ^= (unsigned char)str[k];
			}
			(void)sink;
		}
		npu_tensor_destroy(t);
	}
	/* Sequence and optional data sets, packed and checked as the runtime reads them. */
	if (npu_onnx_read_value(data, size, "fuzz.pb", NPU_DTYPE_SEQUENCE, &t, NULL, &err) ==
	    NPU_OK) {
		struct npu_seq seq;

		npu_seq_open(t, &seq, &err);
		npu_tensor_destroy(t);
	}
	if (npu_onnx_read_value(data, size, "fuzz.pb", NPU_DTYPE_OPTIONAL, &t, NULL, &err) ==
	    NPU_OK)
		npu_tensor_destroy(t);
	return 0;
}
