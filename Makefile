# Top-level build. `make` builds everything buildable on the host (userspace
# programs land in build/bin/), `make check` runs every test suite and ends
# with one line "N passed, N failed, N skipped". Both install what they need
# first (tools/setup-deps), so a newcomer never runs apt by hand.

BUILD      ?= build
MESON_DIR  := $(BUILD)/meson
ASAN_DIR   := $(BUILD)/asan
FUZZ_DIR   := $(BUILD)/fuzz
BIN        := $(BUILD)/bin

.PHONY: all deps userspace asan fuzz driver check kselftest vm-check demo clean help

all: userspace

help:
	@echo "make            build userspace, firmware-sim and the CLI (build/bin/npu)"
	@echo "make check      run every test suite (unit, ASan+UBSan, fuzz, conformance, VM)"
	@echo "make kselftest  run the driver kselftests in the VM"
	@echo "make demo       the main job: a real model end to end on the simulator"

deps:
	@tools/setup-deps

$(MESON_DIR)/build.ninja: | deps
	meson setup $(MESON_DIR) --buildtype=debugoptimized

userspace: deps $(MESON_DIR)/build.ninja
	ninja -C $(MESON_DIR)
	@mkdir -p $(BIN)
	@for p in $$(find $(MESON_DIR) -maxdepth 3 -type f -perm -u+x -path '*/cli/*' ! -name '*.so*' ! -name '*.p'); do \
		ln -sf "$$(realpath --relative-to=$(BIN) $$p)" $(BIN)/; done
	@for p in $$(find $(MESON_DIR)/tools -maxdepth 2 -type f -perm -u+x ! -name '*.so*' 2>/dev/null); do \
		ln -sf "$$(realpath --relative-to=$(BIN) $$p)" $(BIN)/; done

$(ASAN_DIR)/build.ninja: | deps
	meson setup $(ASAN_DIR) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

asan: deps $(ASAN_DIR)/build.ninja
	ninja -C $(ASAN_DIR)

$(FUZZ_DIR)/build.ninja: | deps
	CC=clang meson setup $(FUZZ_DIR) --buildtype=debugoptimized -Dfuzzers=true \
		-Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false

fuzz: deps $(FUZZ_DIR)/build.ninja
	ninja -C $(FUZZ_DIR)

check: userspace
	@tools/check

clean:
	rm -rf $(BUILD)
