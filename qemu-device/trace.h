#include "trace/trace-hw_misc_npu.h"
