/* SPDX-License-Identifier: MIT */
/*
 * device_env.h - the device the device-layer tests run on: NPU_DEVICE
 * (sim|accel|auto|/dev/accel/accelN, as npu --device takes it) or auto.
 * The library reads no environment; the tests honour it themselves, so
 * the VM runs the same binaries on accel (tests/vm/guest.d).
 */
#ifndef NPU_TEST_DEVICE_ENV_H
#define NPU_TEST_DEVICE_ENV_H

#include <stdio.h>
#include <stdlib.h>

#include "npu/npu_device.h"

static inline const struct npu_device_options *test_device_options(void)
{
	static struct npu_device_options o;
	const char *env = getenv("NPU_DEVICE");

	npu_device_options_init(&o);
	if (env && *env && npu_device_options_parse(&o, env) != NPU_OK) {
		fprintf(stderr, "NPU_DEVICE='%s' is not sim, accel, auto or a /dev/accel/accelN path\n",
			env);
		exit(1);
	}
	return &o;
}

#endif /* NPU_TEST_DEVICE_ENV_H */
