// SPDX-License-Identifier: MIT
/*
 * cpu_options.c - the "key=value,..." form of struct npu_cpu_options
 * (npu_model_options.cpu, npu --cpu).
 */
#include <string.h>

#include "cpu/cpu_options.h"

#define NPU_CPU_KEYS "fuse, nchwc, winograd"

/* "auto", the off word or the on word; 'on' names the on value for nchwc / winograd. */
static bool parse_choice(const char *v, const char *on, enum npu_cpu_choice *c)
{
	if (!strcmp(v, "auto"))
		*c = NPU_CPU_AUTO;
	else if (!strcmp(v, "0") || !strcmp(v, "off"))
		*c = NPU_CPU_OFF;
	else if (!strcmp(v, on))
		*c = NPU_CPU_ON;
	else
		return false;
	return true;
}

npu_status npu_cpu_options_parse(struct npu_cpu_options *o, const char *spec,
				 struct npu_error *err)
{
	struct npu_cpu_options n = *o;
	const char *p = spec;
	char item[64];

	while (p && *p) {
		size_t len = strcspn(p, ",");
		const char *expect;
		char *v;
		bool ok;

		if (len >= sizeof(item) || !(v = memchr(p, '=', len)))
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "'%.*s' is not key=value (keys: " NPU_CPU_KEYS ")",
					     (int)len, p);
		memcpy(item, p, len);
		item[len] = '\0';
		v = item + (v - p);
		*v++ = '\0';
		if (!strcmp(item, "fuse")) {
			ok = !strcmp(v, "0") || !strcmp(v, "1");
			n.no_fuse = !strcmp(v, "0");
			expect = "0 or 1";
		} else if (!strcmp(item, "nchwc")) {
			ok = parse_choice(v, "1", &n.nchwc);
			expect = "auto, 0 or 1";
		} else if (!strcmp(item, "winograd")) {
			ok = parse_choice(v, "all", &n.winograd);
			expect = "auto, 0 or all";
		} else {
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "unknown option '%s' (" NPU_CPU_KEYS ")", item);
		}
		if (!ok)
			return npu_error_set(err, NPU_ERR_INVALID_ARG, "%s cannot be '%s' (%s)",
					     item, v, expect);
		p += len;
		if (*p == ',')
			p++;
	}
	*o = n;
	return NPU_OK;
}
