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
else
  OPTFLAGS := -O2 -g
endif
CFLAGS  := $(CFLAGS_BASE) $(OPTFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(OPTFLAGS)
# Graphviz (DOT and SVG in dot/) and ncurses (the explorer) as pkg-config says;
# expanded late, once `make deps` has installed them.
GUI_PKGS := libcgraph libgvc ncursesw
LIBS     = -lprotobuf-c -lm $(shell pkg-config --libs $(GUI_PKGS) 2>/dev/null)

# Debian packages the build, the tests and the model scripts need.
PACKAGES := clang-19 llvm-19-dev llvm-19-tools lld-19 libclang-rt-19-dev \
            libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata \
            libgraphviz-dev graphviz libncurses-dev libcmocka-dev tmux librsvg2-bin pkg-config \
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

.PHONY: all deps demo test test-unit test-lit test-conform test-models test-san test-tui clean
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
	$(MAKE) test-tui
	@echo "make test: all passed"

# Unit and fixture tests under AddressSanitizer + UndefinedBehaviorSanitizer.
test-san:
	$(MAKE) BUILD=$(SAN_BUILD) SAN=1 test-unit test-lit

test-unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

test-lit: $(BUILD)/glowc
	PATH="$(LLVM_BIN):$$PATH" LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) \
	  $(LIT) -sv --param glowc=$(abspath $(BUILD)/glowc) fixtures

CONFORM_DIRS := $(addprefix /usr/share/libonnx-testdata/data/,node pytorch-converted pytorch-operator simple)
test-conform: $(BUILD)/glowc
	tests/conform/check_floor.sh $(BUILD)/glowc $(CONFORM_DIRS)

# The terminal explorer under tmux: keys in, screen content checked.
test-tui: $(BUILD)/glowc
	tests/tui/explore_test.sh $(BUILD)/glowc

test-models: $(BUILD)/glowc
	$(PYTHON) tests/models/run_models.py $(BUILD)/glowc

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
