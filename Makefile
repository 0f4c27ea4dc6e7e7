# Top-level build. `make` builds everything buildable on the host (userspace
# programs land in build/bin/), `make check` runs every test suite and ends
# with one line "N passed, N failed, N skipped". Both install what they need
# first (tools/setup-deps), so a newcomer never runs apt by hand.

BUILD      ?= build
MESON_DIR  := $(BUILD)/meson
ASAN_DIR   := $(BUILD)/asan
TSAN_DIR   := $(BUILD)/tsan
FUZZ_DIR   := $(BUILD)/fuzz
BIN        := $(BUILD)/bin

.PHONY: all deps userspace install asan tsan fuzz driver check kselftest vm-check demo clean help

all: userspace

help:
	@echo "make            build userspace, firmware-sim and the CLI (build/bin/npu)"
	@echo "make install    install into PREFIX (default /usr/local), DESTDIR staged"
	@echo "make check      run every test suite (unit, ASan+UBSan, fuzz, conformance, VM)"
	@echo "make kselftest  run the driver kselftests in the VM"
	@echo "make kselftest-debug  the VM suite on a KASAN/lockdep/kmemleak kernel"
	@echo "make soak       the same with 1e6 fuzzer operations and a long fault campaign"
	@echo "make soak-serve the hostile-client soak of npu serve (SOAK_SECS, default 600)"
	@echo "make demo       the main job: a real model end to end on the simulator"

deps:
	@tools/setup-deps

$(MESON_DIR)/build.ninja: | deps
	meson setup $(MESON_DIR) --buildtype=debugoptimized

# Programs a user runs, linked into build/bin/.
BIN_PROGRAMS := userspace/cli/npu userspace/serve/npu-serve firmware-sim/npu-fwgen tools/render-text \
	examples/ocr/npu-ocr

userspace: deps $(MESON_DIR)/build.ninja
	ninja -C $(MESON_DIR)
	@mkdir -p $(BIN)
	@for p in $(BIN_PROGRAMS); do ln -sf "../meson/$$p" $(BIN)/; done

# Install (meson install): libraries, headers, pkg-config files, npu,
# npu-serve, man pages, bash completion, the firmware image, under PREFIX,
# staged under DESTDIR when it is set. Debian packages: dpkg-buildpackage
# (debian/, README "Install").
PREFIX ?= /usr/local
install: userspace
	meson configure $(MESON_DIR) -Dprefix=$(PREFIX)
	meson install -C $(MESON_DIR) $(if $(DESTDIR),--destdir "$(DESTDIR)")

$(ASAN_DIR)/build.ninja: | deps
	meson setup $(ASAN_DIR) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

asan: deps $(ASAN_DIR)/build.ninja
	ninja -C $(ASAN_DIR)

# ThreadSanitizer: the suites that share objects between threads run here.
$(TSAN_DIR)/build.ninja: | deps
	meson setup $(TSAN_DIR) --buildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false

tsan: deps $(TSAN_DIR)/build.ninja
	ninja -C $(TSAN_DIR)

$(FUZZ_DIR)/build.ninja: | deps
	CC=clang meson setup $(FUZZ_DIR) --buildtype=debugoptimized -Dfuzzers=true \
		-Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false

fuzz: deps $(FUZZ_DIR)/build.ninja
	ninja -C $(FUZZ_DIR)

check: userspace
	@tools/check

# The README's main job: PP-OCRv4 text detection on the NPU simulator.
demo:
	@tools/demo-ocr

clean:
	rm -rf $(BUILD)

# --- kernel driver and its kselftests (driver/, tests/kselftest/) ----------
# The module builds out of tree against Debian's pinned 6.12 headers
# (tools/fetch-kernel); objects stay in driver/ (driver/.gitignore).
KSELFTEST_DIR := $(BUILD)/kselftest

.PHONY: driver-lint

driver:
	@kh=$$(tools/fetch-kernel --print headers) && \
		$(MAKE) -C "$$kh" M=$(CURDIR)/driver modules

# checkpatch --strict, sparse (C=2 checks every file) and W=1; any finding fails.
driver-lint:
	@cp=$$(tools/fetch-kernel --print checkpatch) && \
		"$$cp" --strict --no-tree --terse --show-types -f \
			$$(ls driver/*.[ch] | grep -v '\.mod\.c$$') Kbuild driver/Kbuild driver/Kconfig \
			> $(BUILD)/driver-checkpatch.log 2>&1; \
		grep -E '^[^ ]+:[0-9]+: (ERROR|WARNING|CHECK):' $(BUILD)/driver-checkpatch.log && \
		{ echo "driver-lint: checkpatch findings above"; exit 1; }; \
		echo "driver-lint: checkpatch --strict clean"
	@kh=$$(tools/fetch-kernel --print headers) && mkdir -p $(BUILD) && \
		$(MAKE) -C "$$kh" M=$(CURDIR)/driver C=2 W=1 modules > $(BUILD)/driver-sparse.log 2>&1 || \
		{ cat $(BUILD)/driver-sparse.log; exit 1; }; \
		grep -E '(warning|error):' $(BUILD)/driver-sparse.log && \
		{ echo "driver-lint: sparse/W=1 findings above"; exit 1; }; \
		echo "driver-lint: sparse (C=2) and W=1 clean"

kselftest: driver
	@$(MAKE) -C tests/kselftest OUT=$(CURDIR)/$(KSELFTEST_DIR)
	@tests/kselftest/run-in-vm $(CURDIR)/$(KSELFTEST_DIR)

# The driver's part of the VM suite (device, hostile guest, kselftests,
# uAPI fuzzer at 1e5 operations, fault campaign, kmemleak scan) on the
# debug kernel: KASAN, lockdep, kmemleak, debugobjects, DMA-API debug. The first
# run builds that kernel (tools/build-debug-kernel, about an hour on 2
# cores, then cached). Not part of `make check` (see Documentation/vm.md).
.PHONY: kselftest-debug soak
DEBUG_SUITE := 00 10 20 50 60 90
kselftest-debug: userspace
	@tools/setup-deps --debug-kernel
	@tests/vm/run-debug --only "$(DEBUG_SUITE)"

# The same with the fuzzer at 1e6 operations and a 10-minute fault campaign,
# and beside it the serve soak below, then 10 minutes of each device and
# server libFuzzer target (all run; any failing fails).
soak: userspace
	@tools/setup-deps --debug-kernel
	@# The VM part is bound by its operation count, the host parts by time:
	@# side by side, the soak lasts as long as the VM part, not the sum.
	@tests/vm/run-debug --soak --only "$(DEBUG_SUITE)" & vm=$$!; st=0; \
		trap 'kill $$vm 2>/dev/null' INT TERM; \
		$(MAKE) --no-print-directory soak-serve || st=1; \
		NPU_FUZZ_SECONDS=$(SOAK_FUZZ_SECS) NPU_FUZZ_ONLY="$(SOAK_FUZZERS)" \
			tests/fuzz/run-short || st=1; \
		wait $$vm || st=1; exit $$st

# The device model and the server's request paths under libFuzzer, longer.
SOAK_FUZZ_SECS ?= 600
SOAK_FUZZERS := fuzz_device fuzz_serve_http fuzz_serve_grpc

# The hostile-client soak of `npu serve` (tests/serve/hostile.py through
# tests/serve/test_hardening_soak.py) for SOAK_SECS of attack against the
# release and the ASan+UBSan builds; the reports (JSON) land in $(BUILD)/.
.PHONY: soak-serve
SOAK_SECS ?= 600
soak-serve: userspace asan
	@mkdir -p $(BUILD); w=$$(mktemp -d "$${TMPDIR:-/tmp}/npu-soak-serve.XXXXXX"); \
		cleanup() { \
			if [ -f "$$w/pids" ]; then \
				while read -r p; do kill -KILL "$$p" 2>/dev/null; done <"$$w/pids"; \
			fi; \
			cp "$$w"/soak-*.json $(BUILD)/ 2>/dev/null; rm -rf "$$w"; \
		}; \
		trap cleanup EXIT; \
		SOAK_SECS=$(SOAK_SECS) ASAN_SOAK_SECS=$(SOAK_SECS) NPU=$(BIN)/npu \
		/usr/bin/python3 tests/serve/test_hardening_soak.py "$$w"
