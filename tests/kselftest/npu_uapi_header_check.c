// SPDX-License-Identifier: GPL-2.0-only
/*
 * A user program needs only <drm/npu_accel.h> and libdrm: this file is
 * built with no include path but libdrm's and uapi/ (not the hardware
 * contract's firmware-sim/include), with -Werror, and uses every kind of
 * name the header must define on its own. Running it prints the values a
 * program would compare with GET_PARAM's.
 */
#include <stdio.h>
#include <xf86drm.h>

#include <drm/npu_accel.h>

int main(void)
{
	struct drm_npu_submit s = { .context_id = 1, .cmd_offset = 1ull << 40,
				    .in_sync_size = sizeof(struct drm_npu_sync) };
	struct drm_npu_context_create c = {
		.priority = DRM_NPU_CONTEXT_PRIORITY_HIGH,
	};
	struct drm_npu_uring_submit u = { .submit_size = sizeof(s) };
	unsigned int status = DRM_NPU_JOB_STATUS_MMU_PERM;
	unsigned int caps = DRM_NPU_CAP_INT8 | DRM_NPU_CAP_ARRAY_MODES;
	unsigned int ops = DRM_NPU_OP_BIT(DRM_NPU_OP_CONV2D) |
			   DRM_NPU_OP_BIT(DRM_NPU_OP_REDUCE);

	printf("abi %d submit %zu ctx %u uring %u status %u caps %#x ops %#x ioctl %#lx\n",
	       DRM_NPU_ABI_MAJOR, sizeof(s), c.priority, u.submit_size, status,
	       caps, ops, (unsigned long)DRM_IOCTL_NPU_CONTEXT_CREATE);
	return drmIoctl(-1, DRM_IOCTL_NPU_SUBMIT, &s) == -1 ? 0 : 1;
}
