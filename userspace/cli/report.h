/* SPDX-License-Identifier: MIT */
/*
 * report: `npu bench --report` and `npu compile --explain --report`, one
 * offline HTML file: the figures as JSON, Chart.js (MIT, Debian's
 * libjs-chart.js, read from /usr/share/javascript/chart.js/chart.min.js
 * or NPU_CHARTJS) and the script that draws them, all inline.
 */
#ifndef NPU_CLI_REPORT_H
#define NPU_CLI_REPORT_H

#include <stdio.h>

#include "npu/npu_model.h"

/* A JSON array of the plan's placements (node, op_type, on_npu, segment, macs, reason). */
void npu_cli_report_placement(FILE *f, const struct npu_plan *plan);
/*
 * Write the report to 'path': 'title' and 'data_json' (an object whose
 * "kind" is "bench" or "compile"). 0, or -1 with a message on stderr
 * naming 'cmd'.
 */
int npu_cli_report_write(const char *cmd, const char *path, const char *title,
			 const char *data_json);

#endif /* NPU_CLI_REPORT_H */
