// SPDX-License-Identifier: MIT
/*
 * npu serve: runs the inference server, the separate program npu-serve
 * (userspace/serve/), with the same arguments. It is looked for next to
 * this binary (installed), in the build tree (../serve/), then in PATH.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu_cli.h"

int npu_cmd_serve(int argc, char **argv)
{
	static const char *const rel[] = { "npu-serve", "../serve/npu-serve" };
	char self[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t i;

	(void)argc;
	argv[0] = "npu-serve";
	if (n > 0) {
		self[n] = '\0';
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			memcpy(dir, self, (size_t)n + 1);	/* dirname() writes in it */
			snprintf(path, sizeof(path), "%s/%s", dirname(dir), rel[i]);
			if (access(path, X_OK) == 0) {
				execv(path, argv);
				fprintf(stderr, "npu serve: %s: %s\n", path, strerror(errno));
				return 1;
			}
		}
	}
	execvp("npu-serve", argv);
	fprintf(stderr, "npu serve: npu-serve not found next to npu or in PATH: %s\n",
		strerror(errno));
	return 1;
}
