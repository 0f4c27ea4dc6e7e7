// SPDX-License-Identifier: MIT
// <npu/npu.h> compiles as C++17 and its API links from C++.
#include <npu/npu.h>

#include <cstdio>
#include <cstring>

int main()
{
	struct npu_engine_options eo;
	struct npu_model_options mo;
	struct npu_model_stats st;
	struct npu_engine *e = nullptr;
	struct npu_model *m = nullptr;

	npu_engine_options_init(&eo);
	npu_model_options_init(&mo);
	npu_model_stats_init(&st);
	eo.threads = 1;
	mo.device = "cpu";
	if (npu_engine_create(&eo, &e) != NPU_OK)
		return 1;
	/* A missing file is an error naming it, and no model comes back. */
	if (npu_model_load_file(e, "/nonexistent/model.onnx", &mo, &m) == NPU_OK || m ||
	    !std::strstr(npu_last_error(), "/nonexistent/model.onnx"))
		return 1;
	std::printf("libnpu-user %s (API %d) from C++: %s\n", npu_version(), npu_api_version(),
		    npu_status_str(NPU_ERR_NOT_FOUND));
	npu_engine_destroy(e);
	return npu_api_version() == NPU_API_VERSION ? 0 : 1;
}
