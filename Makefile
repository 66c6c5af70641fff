# glowc: build, test, demo. `make demo` and `make test` do everything on a
# fresh Debian machine, starting with the Debian packages that are missing.

CC       := clang-19
LLVM_BIN := /usr/lib/llvm-19/bin
PYTHON   := /usr/bin/python3
BUILD    ?= build
GEN      := $(BUILD)/gen
ONNX_PROTO := /usr/include/onnx/onnx.proto

WARN   := -Wall -Wextra -Werror -Wno-unused-parameter -Wmissing-prototypes \
          -Wstrict-prototypes -Wimplicit-fallthrough -Wvla
CFLAGS_BASE := -std=c17 $(WARN) -D_GNU_SOURCE -I. -I$(GEN) -MMD -MP
ifeq ($(SAN),1)
  OPTFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined
else ifeq ($(SAN),fuzz)
  OPTFLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined
else
  OPTFLAGS := -O2 -g
endif
CFLAGS  := $(CFLAGS_BASE) $(OPTFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(OPTFLAGS)
LIBS    := -lprotobuf-c -lm

# Debian packages the build, the tests and the model scripts need.
PACKAGES := clang-19 llvm-19-dev llvm-19-tools lld-19 libclang-rt-19-dev \
            libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata \
            libgraphviz-dev graphviz libncurses-dev libcmocka-dev tmux librsvg2-bin \
            python3 python3-numpy python3-onnx python3-torch python3-torchvision \
            python3-sklearn

LIB_SRCS := $(wildcard core/*.c core/onnx/*.c backends/*.c backends/interp/*.c \
                       passes/*.c passes/graph/*.c passes/lir/*.c dot/*.c)
TUI_SRCS := $(wildcard tui/*.c)
PB_SRC   := $(GEN)/onnx/onnx.pb-c.c
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/onnx/onnx.pb-c.o
TUI_OBJS := $(TUI_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps demo test test-unit test-lit test-conform test-models test-san clean \
        fuzz fuzz-bins fuzz-corpus test-fuzz-regress
.DEFAULT_GOAL := all

all: $(BUILD)/glowc

# ---- Debian packages (apt-get once; sudo when not root) --------------------
DEPS_STAMP := build/.deps-ok
deps: $(DEPS_STAMP)
$(DEPS_STAMP): Makefile
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends $$missing || exit 1; \
	fi
	@mkdir -p build && touch $@

# ---- generated protobuf-c code from the installed onnx.proto ---------------
$(GEN)/onnx/onnx.pb-c.c $(GEN)/onnx/onnx.pb-c.h: $(ONNX_PROTO) | $(DEPS_STAMP)
	@mkdir -p $(GEN)
	protoc-c --c_out=$(GEN) -I/usr/include $(ONNX_PROTO)

$(BUILD)/gen/onnx/onnx.pb-c.o: $(GEN)/onnx/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -w $(OPTFLAGS) -I$(GEN) -c $< -o $@

# Every object waits for the generated header.
$(BUILD)/%.o: %.c $(GEN)/onnx/onnx.pb-c.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libglowc.a: $(LIB_OBJS)
	@rm -f $@
	$(LLVM_BIN)/llvm-ar rcs $@ $^

$(BUILD)/glowc: $(TUI_OBJS) $(BUILD)/libglowc.a
	$(CC) $(LDFLAGS) $(TUI_OBJS) $(BUILD)/libglowc.a $(LIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libglowc.a $(LIBS) -lcmocka -o $@

# ---- demo: the bundled digits model ----------------------------------------
demo: $(BUILD)/glowc
	@$(PYTHON) fixtures/models/digits_demo.py $(BUILD)/glowc

# ---- tests -----------------------------------------------------------------
SAN_BUILD := build/asan
LIT := $(PYTHON) $(LLVM_BIN)/../build/utils/lit/lit.py

test: $(DEPS_STAMP)
	$(MAKE) test-san
	$(MAKE) test-conform
	$(MAKE) test-models
	$(MAKE) test-fuzz-regress
	@echo "make test: all passed"

# Unit and fixture tests under AddressSanitizer + UndefinedBehaviorSanitizer.
test-san:
	$(MAKE) BUILD=$(SAN_BUILD) SAN=1 test-unit test-lit

test-unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

test-lit: $(BUILD)/glowc
	PATH="$(LLVM_BIN):$$PATH" $(LIT) -sv --param glowc=$(abspath $(BUILD)/glowc) fixtures

CONFORM_DIRS := $(addprefix /usr/share/libonnx-testdata/data/,node pytorch-converted pytorch-operator simple)
test-conform: $(BUILD)/glowc
	tests/conform/check_floor.sh $(BUILD)/glowc $(CONFORM_DIRS)

test-models: $(BUILD)/glowc
	$(PYTHON) tests/models/run_models.py $(BUILD)/glowc

# ---- fuzzing (libFuzzer; tests/fuzz) -----------------------------------------
# One binary per input reader, built with its own sanitized library in
# build/fuzz. `make fuzz FUZZ_SECONDS=N` runs each target for N seconds, one
# at a time, and stops at the first crash, leak, timeout or out-of-memory;
# the finding is saved under build/fuzz/artifacts/TARGET/.
FUZZ_BUILD   := build/fuzz
FUZZ_TARGETS := onnx hl lir npy tensor
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -timeout=2 -rss_limit_mb=2048
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libglowc.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer $< $(BUILD)/libglowc.a $(LIBS) -o $@

fuzz-bins: $(FUZZ_BINS)

fuzz-corpus: $(BUILD)/glowc
	tests/fuzz/make_corpus.sh $(BUILD)/glowc $(FUZZ_BUILD)/seeds

fuzz: $(DEPS_STAMP)
	$(MAKE) BUILD=$(FUZZ_BUILD) SAN=fuzz fuzz-bins
	$(MAKE) fuzz-corpus
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t; \
	  dict=$(FUZZ_BUILD)/seeds/$$t.dict; [ -f $$dict ] && dict=-dict=$$dict || dict=; \
	  regress=tests/fuzz/regress/$$t; [ -d $$regress ] || regress=; \
	  $(FUZZ_BUILD)/fuzz_$$t $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SECONDS) $$dict \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ \
	    $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/seeds/$$t $$regress \
	    2>$(FUZZ_BUILD)/fuzz_$$t.log || { tail -60 $(FUZZ_BUILD)/fuzz_$$t.log; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec' $(FUZZ_BUILD)/fuzz_$$t.log; \
	done

# Every input a fuzzer once crashed on is replayed (tests/fuzz/regress/TARGET/).
test-fuzz-regress: $(DEPS_STAMP)
	$(MAKE) BUILD=$(FUZZ_BUILD) SAN=fuzz fuzz-bins
	@set -e; for t in $(FUZZ_TARGETS); do \
	  files=$$(find tests/fuzz/regress/$$t -type f 2>/dev/null | sort); \
	  [ -z "$$files" ] && continue; \
	  echo "== fuzz regressions: $$t ($$(echo "$$files" | wc -l) inputs)"; \
	  $(FUZZ_BUILD)/fuzz_$$t $(FUZZ_FLAGS) $$files 2>$(FUZZ_BUILD)/regress_$$t.log || \
	    { tail -60 $(FUZZ_BUILD)/regress_$$t.log; exit 1; }; \
	done

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
