// SPDX-License-Identifier: MIT
/*
 * cpu_isa.c - the one-time choice of the kernels' code path: the best of
 * AVX-512 / AVX2+FMA / portable the CPU (and OS) supports, capped by the
 * NPU_CPU_ISA environment variable (portable|avx2|avx512) so tests can
 * cover every path on one machine.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels_internal.h"

static pthread_once_t npu_cpu_isa_once = PTHREAD_ONCE_INIT;
static enum npu_cpu_isa npu_cpu_isa_chosen;

static enum npu_cpu_isa npu_cpu_isa_detect(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("fma"))
		return NPU_CPU_ISA_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return NPU_CPU_ISA_AVX2;
#endif
	return NPU_CPU_ISA_PORTABLE;
}

static void npu_cpu_isa_init(void)
{
	enum npu_cpu_isa isa = npu_cpu_isa_detect();
	const char *cap = getenv("NPU_CPU_ISA");

	if (cap && !strcmp(cap, "portable"))
		isa = NPU_CPU_ISA_PORTABLE;
	else if (cap && !strcmp(cap, "avx2") && isa > NPU_CPU_ISA_AVX2)
		isa = NPU_CPU_ISA_AVX2;
	npu_cpu_isa_chosen = isa;
}

enum npu_cpu_isa npu_cpu_isa_get(void)
{
	pthread_once(&npu_cpu_isa_once, npu_cpu_isa_init);
	return npu_cpu_isa_chosen;
}

const char *npu_cpu_kernels_isa(void)
{
	static const char *const names[] = {
		[NPU_CPU_ISA_PORTABLE] = "portable",
		[NPU_CPU_ISA_AVX2] = "avx2",
		[NPU_CPU_ISA_AVX512] = "avx512",
	};

	return names[npu_cpu_isa_get()];
}

const struct npu_vec_ops *npu_vec_ops_get(void)
{
	switch (npu_cpu_isa_get()) {
	case NPU_CPU_ISA_AVX512:
		return &npu_vec_ops_avx512;
	case NPU_CPU_ISA_AVX2:
		return &npu_vec_ops_avx2;
	default:
		return &npu_vec_ops_portable;
	}
}
