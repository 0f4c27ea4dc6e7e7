// SPDX-License-Identifier: MIT
/*
 * cpu_isa.c - the one-time choice of the kernels' code path: the best of
 * AVX-512 / AVX2+FMA / portable the CPU (and OS) supports, capped by
 * npu_cpu_kernels_cap_isa() (the engine's npu_engine_options.cpu_isa) so
 * tests can cover every path on one machine.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels_internal.h"

static pthread_mutex_t npu_cpu_isa_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int npu_cpu_isa_chosen = -1;	/* enum npu_cpu_isa once chosen */

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

/* Choose 'want' capped at the CPU's best if nothing is chosen yet; the choice. */
static enum npu_cpu_isa npu_cpu_isa_choose(enum npu_cpu_isa cap)
{
	int isa;

	pthread_mutex_lock(&npu_cpu_isa_lock);
	isa = atomic_load(&npu_cpu_isa_chosen);
	if (isa < 0) {
		isa = npu_cpu_isa_detect();
		if (isa > (int)cap)
			isa = cap;
		atomic_store(&npu_cpu_isa_chosen, isa);
	}
	pthread_mutex_unlock(&npu_cpu_isa_lock);
	return (enum npu_cpu_isa)isa;
}

enum npu_cpu_isa npu_cpu_isa_get(void)
{
	int isa = atomic_load_explicit(&npu_cpu_isa_chosen, memory_order_acquire);

	return isa >= 0 ? (enum npu_cpu_isa)isa : npu_cpu_isa_choose(NPU_CPU_ISA_AVX512);
}

int npu_cpu_kernels_cap_isa(const char *name)
{
	enum npu_cpu_isa cap, want;

	if (!strcmp(name, "portable"))
		cap = NPU_CPU_ISA_PORTABLE;
	else if (!strcmp(name, "avx2"))
		cap = NPU_CPU_ISA_AVX2;
	else if (!strcmp(name, "avx512"))
		cap = NPU_CPU_ISA_AVX512;
	else
		return -EINVAL;
	want = npu_cpu_isa_detect();
	if (want > cap)
		want = cap;
	return npu_cpu_isa_choose(cap) == want ? 0 : -EBUSY;
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
