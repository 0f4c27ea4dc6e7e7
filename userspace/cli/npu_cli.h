/* SPDX-License-Identifier: MIT */
/* The npu CLI: one file per subcommand (cmd_<name>.c), listed in npu.c. */
#ifndef NPU_CLI_H
#define NPU_CLI_H

/* argv[0] is the subcommand name; returns the process exit status. */
typedef int (*npu_cli_fn)(int argc, char **argv);

int npu_cmd_info(int argc, char **argv);
int npu_cmd_submit(int argc, char **argv);
int npu_cmd_trace(int argc, char **argv);
int npu_cmd_run(int argc, char **argv);
int npu_cmd_onnx_test(int argc, char **argv);
int npu_cmd_compile(int argc, char **argv);
int npu_cmd_bench(int argc, char **argv);
int npu_cmd_serve(int argc, char **argv);
int npu_cmd_split(int argc, char **argv);
int npu_cmd_compress(int argc, char **argv);

#endif /* NPU_CLI_H */
