// SPDX-License-Identifier: MIT
/* npu: the command-line front end of libnpu-user. */
#include <stdio.h>
#include <string.h>

#include "npu_cli.h"

struct npu_cli_command {
	const char *name;
	const char *summary;
	npu_cli_fn run;
};

static int cmd_help(int argc, char **argv);

/* Subcommands, in the order `npu help` lists them. */
static const struct npu_cli_command commands[] = {
	{ "help", "list the commands", cmd_help },
#ifdef NPU_CLI_HAVE_INFO
	{ "info", "show the device, firmware and capabilities", npu_cmd_info },
#endif
#ifdef NPU_CLI_HAVE_SUBMIT
	{ "submit", "run a command-stream file as jobs", npu_cmd_submit },
#endif
#ifdef NPU_CLI_HAVE_TRACE
	{ "trace", "record jobs of a command as a Chrome-trace JSON", npu_cmd_trace },
#endif
#ifdef NPU_CLI_HAVE_RUN
	{ "run", "run an ONNX model and write its outputs as .npy", npu_cmd_run },
#endif
#ifdef NPU_CLI_HAVE_COMPILE
	{ "compile", "compile a model for the NPU; explain placement; save .npub", npu_cmd_compile },
#endif
#ifdef NPU_CLI_HAVE_BENCH
	{ "bench", "latency, throughput and NPU utilization of a model", npu_cmd_bench },
#endif
#ifdef NPU_CLI_HAVE_SERVE
	{ "serve", "serve models over HTTP and gRPC (KServe v2 / Triton protocol)", npu_cmd_serve },
#endif
#ifdef NPU_CLI_HAVE_SPLIT
	{ "split", "cut a model into a head (device) and a tail (server)", npu_cmd_split },
#endif
#ifdef NPU_CLI_HAVE_COMPRESS
	{ "compress", "prune a model with reconstruction from calibration data", npu_cmd_compress },
#endif
#ifdef NPU_CLI_HAVE_ONNX_TEST
	{ "onnx-test", "run ONNX backend test directories", npu_cmd_onnx_test },
#endif
};

#define NUM_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "usage: npu COMMAND [ARGS...]\n\ncommands:\n");
	for (i = 0; i < NUM_COMMANDS; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n`npu COMMAND --help` describes a command.\n");
}

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	usage(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("npu %s\n", NPU_VERSION_STRING);
		return 0;
	}
	for (i = 0; i < NUM_COMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "npu: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
