# ibgw: one Makefile for the daemon, its tests, fuzzers, benchmarks, the test VM and the demo.
#
#   make            build build/ibgwd (installs missing Debian packages first)
#   make check      build everything (plus an ASan+UBSan build) and run every test
#   make fuzz       run the fuzz targets for FUZZ_SECONDS each
#   make bench      run the benchmarks (not part of check; BENCH_QUICK=1: the short form, < 3 min)
#   make soak       ibgwd for SOAK_MINUTES (30) under mixed load and faults in the test VM (not part of check)
#   make vm         build the cached soft-RoCE test VM image
#   make demo       the live demo (in the soft-RoCE VM when there is no IB hardware)
#   make deps       install the Debian packages the build and the tests need

SHELL := /bin/bash
BUILD ?= build
CC ?= cc
CLANG ?= clang
FUZZ_SECONDS ?= 60
V ?= 0
Q := $(if $(filter 1,$(V)),,@)

# Debian packages: what the build needs, and what the tests and the VM need.
PKGS_BUILD := build-essential pkg-config clang libclang-rt-14-dev libdpdk-dev dpdk-dev libibverbs-dev librdmacm-dev \
	libevent-dev libinih-dev libcmocka-dev
PKGS_TEST := dpdk iproute2 iputils-ping ethtool curl jq python3 python3-scapy socat iperf3 haproxy nginx-light netcat-openbsd \
	procps psmisc qemu-system-x86 busybox-static kmod cpio xz-utils zstd ibverbs-utils rdmacm-utils \
	perftest ibverbs-providers keepalived frr linux-perf strace systemd
PKGS := $(PKGS_BUILD) $(PKGS_TEST)

PC_LIBS := libdpdk libibverbs librdmacm libevent libevent_pthreads inih
WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral -Wstrict-prototypes \
	-Wmissing-prototypes -Wno-missing-field-initializers
PC_CFLAGS = $(shell pkg-config --cflags $(PC_LIBS) 2>/dev/null)
PC_LDLIBS = $(shell pkg-config --libs $(PC_LIBS) 2>/dev/null)
CFLAGS_BASE = -std=gnu11 -g -D_GNU_SOURCE $(WARN) $(PC_CFLAGS) -I.
LDLIBS_BASE = $(PC_LDLIBS) -lm -lpthread

# Variants: release (build/) and sanitized (build/asan/), used by the tests.
CFLAGS_release := -O2
CFLAGS_asan := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS_asan := -fsanitize=address,undefined

DIRS := gateway ib_side eth_side translate conf
SRCS := $(foreach d,$(DIRS),$(wildcard $(d)/*.c))
LIB_SRCS := $(filter-out gateway/main.c,$(SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
TOOL_SRCS := $(wildcard tests/tools/*.c)

obj = $(patsubst %.c,$(BUILD)/$(1)/obj/%.o,$(2))

DEPS_STAMP := $(BUILD)/.deps-ok

.PHONY: all deps check fuzz bench soak vm demo demo-pair clean format format-check
all: $(BUILD)/ibgwd

# `make deps`: idempotent and quick when everything is there (one dpkg-query per package). The test
# peers' daemons (nginx, haproxy, keepalived, frr) are installed but neither started (policy-rc.d during the
# install) nor enabled at boot: the tests run their own instances in namespaces and in the VM, and the
# machine gets no web server on its port 80. The stamp,
# which every object depends on, is touched only when it is new or something was installed: touched on
# every run, `make check` (and the demo's make) rebuilt the whole tree each time.
deps:
	@missing=""; for p in $(PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		pol=; if [ ! -e /usr/sbin/policy-rc.d ]; then \
			pol=/usr/sbin/policy-rc.d; printf '#!/bin/sh\nexit 101\n' >$$pol && chmod 755 $$pol; \
		fi; \
		apt-get update -q >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null; \
		rc=$$?; [ -z "$$pol" ] || rm -f $$pol; \
		[ $$rc = 0 ] || { echo "make deps: apt-get install failed"; exit 1; }; \
		if [ -d /run/systemd/system ]; then for s in nginx haproxy keepalived frr; do \
			case " $$missing " in *" $$s "* | *" $$s-"*) systemctl disable --quiet $$s 2>/dev/null || true ;; esac; \
		done; fi; \
	fi; \
	mkdir -p $(BUILD); \
	if [ -n "$$missing" ] || [ ! -e $(DEPS_STAMP) ] || [ Makefile -nt $(DEPS_STAMP) ]; then touch $(DEPS_STAMP); fi

$(DEPS_STAMP): Makefile
	@$(MAKE) --no-print-directory deps

# (flags are escaped with $$: pkg-config must run after `make deps` installed the libraries, not
# when this is parsed)
define variant
$(BUILD)/$(1)/obj/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $$(@D)
	$(Q)$(CC) $$(CFLAGS_BASE) $(CFLAGS_$(1)) -MMD -MP -c $$< -o $$@
	@$(if $(Q),echo "  CC [$(1)] $$<")

$(BUILD)/$(1)/libibgw.a: $(call obj,$(1),$(LIB_SRCS))
	@rm -f $$@
	$(Q)ar rcs $$@ $$^

$(BUILD)/$(1)/ibgwd: $(call obj,$(1),gateway/main.c) $(BUILD)/$(1)/libibgw.a
	@$(if $(Q),echo "  LD [$(1)] $$@")
	$(Q)$(CC) $(LDFLAGS_$(1)) -o $$@ $$^ $$(LDLIBS_BASE)

$(BUILD)/$(1)/tests/%: $(BUILD)/$(1)/obj/tests/unit/%.o $(BUILD)/$(1)/libibgw.a
	@mkdir -p $$(@D)
	@$(if $(Q),echo "  LD [$(1)] $$@")
	$(Q)$(CC) $(LDFLAGS_$(1)) -o $$@ $$^ $$(LDLIBS_BASE) -lcmocka

$(BUILD)/$(1)/tools/%: $(BUILD)/$(1)/obj/tests/tools/%.o $(BUILD)/$(1)/libibgw.a
	@mkdir -p $$(@D)
	@$(if $(Q),echo "  LD [$(1)] $$@")
	$(Q)$(CC) $(LDFLAGS_$(1)) -o $$@ $$^ $$(LDLIBS_BASE)

-include $(patsubst %.o,%.d,$(call obj,$(1),$(SRCS) $(UNIT_SRCS) $(TOOL_SRCS)))
endef
$(eval $(call variant,release))
$(eval $(call variant,asan))

$(BUILD)/ibgwd: $(BUILD)/release/ibgwd
	@cp $< $@

UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/asan/tests/%,$(UNIT_SRCS))
TOOL_BINS := $(patsubst tests/tools/%.c,$(BUILD)/release/tools/%,$(TOOL_SRCS))

# Fuzz targets: libFuzzer + ASan with clang; each links the sources its header comment names.
FUZZ_CFLAGS = -std=gnu11 -g -O1 -D_GNU_SOURCE -I. $(PC_CFLAGS) -fsanitize=fuzzer,address,undefined
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
# (no .d files here: every header counts)
$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB_SRCS) $(wildcard */*.h tests/fuzz/*.h) $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZ $@")
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $$(sed -n 's/^ \* fuzz-sources: //p' $<) $(LDLIBS_BASE)

check: deps all $(BUILD)/asan/ibgwd $(UNIT_BINS) $(TOOL_BINS) $(FUZZ_BINS)
	@BUILD=$(BUILD) tests/run

fuzz: $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do \
		n=$$(basename $$f); mkdir -p $(BUILD)/fuzz-corpus/$$n; \
		echo "fuzzing $$n for $(FUZZ_SECONDS)s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(BUILD)/fuzz-corpus/$$n tests/fuzz/corpus/$$n \
			2>$(BUILD)/fuzz-$$n.log || { tail -40 $(BUILD)/fuzz-$$n.log; exit 1; }; \
		tail -1 $(BUILD)/fuzz-$$n.log; \
	done

bench: deps all $(TOOL_BINS)
	@BUILD=$(BUILD) tests/bench/run

SOAK_MINUTES ?= 30
soak: deps all $(TOOL_BINS)
	@BUILD=$(BUILD) SOAK_MINUTES=$(SOAK_MINUTES) tests/soak/run

demo: deps
	@tests/demo/run

# two gateways on the host: keepalived (VRRP) on their exception TAPs, then FRR (BGP, ECMP)
demo-pair: deps all build/asan/ibgwd
	@tests/ha/test_ha_vrrp.sh && tests/ha/test_ha_bgp.sh

vm: deps
	tests/vm/mkimage $(BUILD)/vm

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $(SRCS) $(wildcard $(addsuffix /*.h,$(DIRS))) $(UNIT_SRCS) $(FUZZ_SRCS) $(TOOL_SRCS)
