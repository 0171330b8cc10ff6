# pccx — top-level build.
#
#   make            build every userspace component into build/
#   make test       install what the tests need, build, run every test (plain + ASan/UBSan)
#   make demo       install what the demo needs and run the main job
#   make bench      run the benchmarks (figures are printed, nothing passes or fails)
#   make fuzz       run each fuzz target for FUZZ_SECONDS (default 60)
#   make install    install libraries (static and shared), headers, CLI and pkg-config file
#                   under DESTDIR/PREFIX (LIBDIR: default PREFIX/lib)
#   NO_TESTS=1      leaves the test programs out of all and install (what a package build wants)
#
# Sources are discovered by directory, so adding a file needs no Makefile edit. The libraries
# are layers: each uses only those after it on this list, so they link in this order and no
# link group is needed (tests/scripts/layers.sh checks it with nm):
#   host/{runtime,compiler,text,modelfiles}/*.c -> libpccx.a  (the library applications use)
#   sim/**.c         -> libpccx_sim.a  (the cycle simulator)
#   reference/**.c   -> libpccx_ref.a  (the model's math: no file formats)
#   host/base/*.c    -> libpccx_base.a (status messages, diagnostics, reading files)
#   isa/*.c          -> libpccx_isa.a  (freestanding: also built into the kernel module and firmware)
#   isa/num/*.c      -> libpccx_num.a  (freestanding FP32 numerics shared by reference/ and sim/)
#   all of them      -> libpccx.so.VERSION (soname libpccx.so.MAJOR; exports only the public API)
#   host/cli/*.c     -> bin/pccx
#   tests/unit/test_*.c -> tests/test_*  (one Check program per file)
#   tests/fuzz/fuzz_*.c -> libFuzzer targets (make fuzz)

BUILD   ?= build
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
DESTDIR ?=
CC      ?= gcc
SAN     ?= 0
FUZZ_SECONDS ?= 60

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wvla -Wformat=2 -Wno-format-nonliteral
# Floating point is part of the contract: never contract a*b+c into an FMA, never fast-math.
FPFLAGS := -ffp-contract=off -fno-fast-math -fexcess-precision=standard
CFLAGS  ?= -O2 -g
# Every object is position-independent, so the static libraries and libpccx.so are made from
# the same objects (docs/packaging.md: with GCC's default PIE this costs nothing measurable), and
# hidden unless a public header declares it (#pragma GCC visibility in host/include/pccx/).
CFLAGS  += -fPIC -fvisibility=hidden
CFLAGS  += -std=c11 -D_GNU_SOURCE $(WARN) $(FPFLAGS) -fno-strict-aliasing \
           -Iisa -Iisa/num -Ireference -Isim -Ihost/include $(HOST_INC) -Idriver/include \
           -MMD -MP
LDLIBS  := -lm -lpthread

ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
endif

rfind = $(shell find $(1) -name '*.c' 2>/dev/null | sort)

HOST_DIRS := host/runtime host/compiler host/text host/modelfiles
HOST_INC  := $(addprefix -I,host/base $(HOST_DIRS))

ISA_SRC  := $(wildcard isa/*.c)
NUM_SRC  := $(wildcard isa/num/*.c)
REF_SRC  := $(call rfind,reference)
SIM_SRC  := $(call rfind,sim)
BASE_SRC := $(wildcard host/base/*.c)
HOST_SRC := $(call rfind,$(HOST_DIRS))
CLI_SRC  := $(wildcard host/cli/*.c)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TSUP_SRC := $(wildcard tests/unit/support/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# Quiet by default; V=1 shows the full command lines.
ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2)
endif
NPROC := $(shell nproc 2>/dev/null || echo 2)

LIB_ISA  := $(BUILD)/lib/libpccx_isa.a
LIB_NUM  := $(BUILD)/lib/libpccx_num.a
LIB_REF  := $(BUILD)/lib/libpccx_ref.a
LIB_SIM  := $(BUILD)/lib/libpccx_sim.a
LIB_BASE := $(BUILD)/lib/libpccx_base.a
LIB_HOST := $(BUILD)/lib/libpccx.a
# the layer order (above): a library may use only those after it
LIBS     := $(LIB_HOST) $(LIB_SIM) $(LIB_REF) $(LIB_BASE) $(LIB_ISA) $(LIB_NUM)
LINKLIBS := $(LIBS)

CLI      := $(BUILD)/bin/pccx
TESTS    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
ifeq ($(NO_TESTS),1)
TESTS    :=
endif

CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)

.SECONDARY:
.PHONY: all test test-plain test-asan demo bench fuzz install clean deps-test deps-demo qemu-test
all: $(CLI) $(TESTS)

.PHONY: FORCE
FORCE:

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) $(CHECK_CFLAGS) -Itests/unit -c $< -o $@

# An archive is made afresh when its list of sources changes (a file moved away must not
# linger in it): $(1).srcs holds the list and is rewritten only when it differs.
define mklib
$(1).srcs: FORCE
	@mkdir -p $$(dir $$@)
	@echo '$(2)' | cmp -s - $$@ || echo '$(2)' >$$@
$(1): $(call obj,$(2)) $(1).srcs
	@mkdir -p $$(dir $$@)
	$$(call say,AR,$$@)
	$(Q)rm -f $$@
	$(Q)ar rcs $$@ $$(filter %.o,$$^) $(if $(2),,$(BUILD)/obj/.empty.o)
endef

$(BUILD)/obj/.empty.o:
	@mkdir -p $(dir $@)
	$(Q)echo 'typedef int pccx_empty_unit;' | $(CC) $(CFLAGS) -x c -c - -o $@

$(foreach L,ISA NUM BASE REF SIM HOST,$(eval $(call mklib,$(LIB_$(L)),$($(L)_SRC))))
$(LIBS): | $(BUILD)/obj/.empty.o

# pccx serve's HTTP server is libmicrohttpd (Debian's libmicrohttpd-dev); only the CLI links it.
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS   := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
$(call obj,host/cli/cmd_serve.c): CFLAGS += $(MHD_CFLAGS)

$(CLI): $(call obj,$(CLI_SRC)) $(LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $(call obj,$(CLI_SRC)) $(LINKLIBS) $(LDLIBS) $(MHD_LIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(call obj,$(TSUP_SRC)) $(LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $< $(call obj,$(TSUP_SRC)) $(filter $(BUILD)/obj/host/cli/%.o,$^) \
		$(LINKLIBS) $(CHECK_LIBS) $(LDLIBS) -o $@

$(call obj,$(TSUP_SRC)): CFLAGS += $(CHECK_CFLAGS) -Itests/unit

# Unit tests of CLI code link the CLI sources they test (the CLI is not a library).
$(BUILD)/tests/test_gen_show: $(call obj,host/cli/gen_show.c)
$(BUILD)/obj/tests/unit/test_gen_show.o: CFLAGS += -Ihost/cli

# ---------------------------------------------------------------------------
# test: everything, plain and under ASan+UBSan; the last line is "N passed, N failed".
test: deps-test
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@$(MAKE) --no-print-directory -j$(NPROC) all SAN=1 BUILD=$(BUILD)/asan
	@scripts/run-tests.sh $(BUILD) $(BUILD)/asan

test-plain: all
	@scripts/run-tests.sh $(BUILD)

deps-test:
	@scripts/deps.sh test

deps-demo:
	@scripts/deps.sh demo

demo: deps-demo
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@scripts/demo.sh $(BUILD)

bench: all
	@scripts/bench.sh $(BUILD)

fuzz: deps-test
	@scripts/fuzz.sh $(BUILD)/fuzz $(FUZZ_SECONDS)

# qemu-test: the kernel driver in Debian's kernel under QEMU (scripts/qemu/run.sh)
qemu-test:
	@scripts/qemu/run.sh $(BUILD)

install: all
	scripts/install.sh "$(BUILD)" "$(DESTDIR)" "$(PREFIX)" "$(LIBDIR)"

clean:
	rm -rf $(BUILD)

# ---- BEGIN shlib: libpccx.so, the whole stack with only the public API exported ----
# The version is pccx.pc's; the version script lists the functions the public headers declare
# (scripts/public-symbols.sh), so a new public function is exported without an edit here
# (tests/scripts/layers.sh compares the exports with the headers and the static libraries).
# Not built under the sanitizers (nothing installs or links those builds' library).
VERSION   := $(shell sed -n 's/^Version: *//p' scripts/pccx.pc.in)
SONAME    := libpccx.so.$(firstword $(subst ., ,$(VERSION)))
SHLIB     := $(BUILD)/lib/libpccx.so.$(VERSION)
PUBLIC_H  := $(wildcard host/include/pccx/*.h)
ifneq ($(SAN),1)
all: $(SHLIB)
endif
$(BUILD)/lib/libpccx.map: $(PUBLIC_H) scripts/public-symbols.sh
	@mkdir -p $(dir $@)
	$(Q)scripts/public-symbols.sh --map $(PUBLIC_H) >$@.tmp && mv $@.tmp $@
$(SHLIB): $(LIBS) $(BUILD)/lib/libpccx.map
	$(call say,LD,$@)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-soname,$(SONAME) -Wl,--version-script=$(BUILD)/lib/libpccx.map \
		-Wl,-z,defs -Wl,--whole-archive $(LIBS) -Wl,--no-whole-archive $(LDLIBS) -o $@
	$(Q)ln -sfn $(notdir $@) $(BUILD)/lib/$(SONAME)
	$(Q)ln -sfn $(SONAME) $(BUILD)/lib/libpccx.so
# ---- END shlib ----

# ---- BEGIN sim: device tree for the simulator (sim/kv260.dts -> $(BUILD)/sim/kv260.dtb) ----
LDLIBS  += -lfdt
SIM_DTB := $(BUILD)/sim/kv260.dtb
all: $(SIM_DTB)
$(SIM_DTB): sim/kv260.dts
	@mkdir -p $(dir $@)
	$(Q)dtc -I dts -O dtb -o $@ $<
# ---- END sim ----

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---- BEGIN man: manual pages (man/*.in -> $(BUILD)/man/; man/expand.sh) ----
# pccx(1) takes each command's synopsis and options from the binary's --help; libpccx(3)
# includes docs/example.c.
$(BUILD)/man/libpccx.3: docs/example.c
MAN_PAGES := $(patsubst man/%.in,$(BUILD)/man/%,$(wildcard man/*.in))
all: $(MAN_PAGES)
$(BUILD)/man/pccx.1: $(CLI)
$(BUILD)/man/%: man/%.in man/expand.sh man/help2roff.awk scripts/pccx.pc.in
	@mkdir -p $(dir $@)
	$(call say,MAN,$@)
	$(Q)man/expand.sh $(CLI) $< >$@.tmp || { rm -f $@.tmp; exit 1; }; mv $@.tmp $@
# ---- END man ----

# ---- BEGIN link: the host link (docs/link.md): firmware/core, the hosted board, cmocka ----
# firmware/core is the board runtime's freestanding core (libpccx_fw.a); libpccx.a carries its
# wire code (link_wire.c) for the link backends. pccx-board is the core and the cycle simulator
# serving the protocol on a Unix socket. The board side's unit tests are cmocka programs
# tests/cmocka/test_*.c -> BUILD/cmocka/test_* (scripts/run-tests.sh counts their tests).
CFLAGS        += -Ifirmware/core -Ifirmware/hosted
FW_SRC        := $(wildcard firmware/core/*.c)
HOSTED_SRC    := $(filter-out firmware/hosted/main.c,$(wildcard firmware/hosted/*.c))
LIB_FW        := $(BUILD)/lib/libpccx_fw.a
BOARD         := $(BUILD)/bin/pccx-board
CMOCKA_SRC    := $(wildcard tests/cmocka/test_*.c)
CMOCKA_TESTS  := $(patsubst tests/cmocka/%.c,$(BUILD)/cmocka/%,$(CMOCKA_SRC))
CMOCKA_CFLAGS := $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS   := $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)
# pccx-board is a test tool (a board on the build machine): a package build leaves it out
ifeq ($(NO_TESTS),1)
CMOCKA_TESTS  :=
BOARD_ALL     :=
else
BOARD_ALL     := $(BOARD)
endif
$(call obj,$(FW_SRC)): CFLAGS += -ffreestanding -DPCCX_FREESTANDING
$(eval $(call mklib,$(LIB_FW),$(FW_SRC)))
$(LIB_FW): | $(BUILD)/obj/.empty.o
$(LIB_HOST): $(call obj,firmware/core/link_wire.c)
all: $(BOARD_ALL) $(CMOCKA_TESTS)
$(BOARD): $(call obj,firmware/hosted/main.c $(HOSTED_SRC)) $(LIB_FW) $(LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $(call obj,firmware/hosted/main.c $(HOSTED_SRC)) $(LIB_FW) \
		$(LINKLIBS) $(LDLIBS) -o $@
$(BUILD)/obj/tests/cmocka/%.o: tests/cmocka/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) $(CMOCKA_CFLAGS) -c $< -o $@
$(BUILD)/cmocka/%: $(BUILD)/obj/tests/cmocka/%.o $(call obj,$(HOSTED_SRC)) $(LIB_FW) $(LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $< $(call obj,$(HOSTED_SRC)) $(LIB_FW) $(LINKLIBS) $(CMOCKA_LIBS) \
		$(LDLIBS) -o $@
# the serial backend against the hosted board, in process (tests/unit/test_link.c)
$(BUILD)/tests/test_link: $(call obj,$(HOSTED_SRC)) $(LIB_FW)
$(BUILD)/tests/test_link: LINKLIBS := $(call obj,$(HOSTED_SRC)) $(LIB_FW) $(LIBS)
# The bare-metal AArch64 firmware (docs/firmware.md): its own makefile, the cross compiler
# (gcc-aarch64-linux-gnu) and Debian's arm64 libfdt, downloaded into BUILD/fw.
firmware:
	$(MAKE) -C firmware/baremetal BUILD=$(abspath $(BUILD)) all dtbs
.PHONY: firmware
# ---- END link ----
