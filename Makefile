# zvisor: build the freestanding kernel image build/zvisor, run the tests.
CC      ?= gcc
BUILD   := build
# The kernel is freestanding: no libc, no TLS, no vector registers (so the
# syscall path never has to save extended state), linked at a fixed address so
# that a seccomp filter keyed on its text range stays valid across execve, in
# two segments (kernel/zvisor.ld).
# The address is above 4 GiB, so the code is position-independent (-fpie)
# even though the image is not.
KCFLAGS := -std=gnu11 -O2 -g -ffreestanding -fno-builtin -nostdinc -isystem $(shell $(CC) -print-file-name=include) \
           -I/usr/include/x86_64-linux-gnu -I/usr/include -Ikernel \
           -fno-stack-protector -fpie -fvisibility=hidden -fcf-protection=none -mgeneral-regs-only \
           -fno-asynchronous-unwind-tables -fno-omit-frame-pointer -fno-strict-aliasing -fno-delete-null-pointer-checks \
           -include kernel/lib/visibility.h -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -MMD -MP
KLDS    := kernel/zvisor.ld
KLDFLAGS := -static -nostdlib -no-pie -Wl,-T,$(KLDS) -Wl,-z,noexecstack \
            -Wl,--build-id=none -Wl,-e,_start
KSRC    := $(sort $(wildcard kernel/*.c kernel/*/*.c kernel/*/*.S))
KOBJ    := $(patsubst kernel/%,$(BUILD)/obj/%.o,$(KSRC))
GEN     := $(BUILD)/gen/sysnames.h

all: $(BUILD)/zvisor

$(GEN): scripts/gen-sysnames.sh /usr/include/x86_64-linux-gnu/asm/unistd_64.h
	@mkdir -p $(dir $@)
	sh scripts/gen-sysnames.sh /usr/include/x86_64-linux-gnu/asm/unistd_64.h > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.c.o: kernel/%.c $(GEN) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(KCFLAGS) -I$(BUILD)/gen -c $< -o $@

$(BUILD)/obj/%.S.o: kernel/%.S Makefile
	@mkdir -p $(dir $@)
	$(CC) $(KCFLAGS) -c $< -o $@

$(BUILD)/zvisor: $(KOBJ) $(KLDS)
	$(CC) $(KLDFLAGS) -o $@ $(KOBJ)
	@# the bounce page (intercept/fastentry.S) must end all code (kernel text ends
	@# where it begins: main.c's text_end), and the image must be two
	@# segments, the second with no part past its file size (kernel/zvisor.ld)
	@x=$$(readelf -SW $@ | sed 's/^ *\[ *[0-9]*\]//' | awk '$$7 ~ /X/ { print $$3, $$5 }' | \
	     while read a n; do echo $$((0x$$a + 0x$$n)); done | sort -n | tail -1); \
	 b=$$(nm $@ | awk '$$3 == "zv_bounce_page" { print $$1 }'); \
	 if [ -z "$$b" ] || [ -z "$$x" ] || [ $$x -ne $$((0x$$b + 4096)) ]; then \
	   echo "zvisor: the bounce page is not the last page of code (code ends at 0x$$(printf %x "$$x"); page at 0x$$b)" >&2; rm -f $@; exit 1; fi; \
	 l=$$(readelf -lW $@ | awk '$$1 == "LOAD" { n++; if ($$5 != $$6) bss++ } END { print n + 0, bss + 0 }'); \
	 if [ "$$l" != "2 0" ]; then echo "zvisor: the image is not two segments held whole in the file ($$l)" >&2; rm -f $@; exit 1; fi

# Unit tests of kernel sources (tests/unit, run by tests/test_unit.py): each
# tests/unit/NAME.c includes the kernel .c file it tests, and is linked
# freestanding with the unit runtime and the kernel's string and format code.
# UNIT_SRC_NAME: further kernel files a unit needs (parts split off the one
# it includes).
UNIT       := bpf vtime regex cr_fds
UNIT_SRC_vtime := $(wildcard kernel/sys/vtime_*.c)
UNIT_SRC_cr_fds := $(wildcard kernel/cr/fd*.c) kernel/cr/timers.c kernel/cr/procfile.c kernel/cr/resutil.c kernel/lib/kmem.c \
		   kernel/cr/census.c kernel/cr/sockdiag.c kernel/cr/objects.c kernel/cr/sockmake.c
UNIT_CFLAGS := $(filter-out -MMD -MP,$(KCFLAGS)) -Itests/unit -I$(BUILD)/gen
UNIT_LDFLAGS := -static -nostdlib -no-pie -Wl,-z,noexecstack -Wl,--build-id=none -Wl,-e,_start

unit: $(addprefix $(BUILD)/unit/,$(UNIT))

$(BUILD)/unit/%: tests/unit/%.c tests/unit/unit.c tests/unit/unit.h tests/unit/stubs.h \
		kernel/lib/string.c kernel/lib/fmt.c $(GEN) $(wildcard kernel/*.h kernel/*/*.h kernel/*/*.c) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(UNIT_LDFLAGS) -o $@ tests/unit/$*.c tests/unit/unit.c \
		kernel/lib/string.c kernel/lib/fmt.c $(UNIT_SRC_$*)

# Test dependencies (gcc, musl-tools, busybox-static, strace, Go, pytest) are
# installed by the script when missing; CI runs as root without stdin.
# With pytest-xdist the tests run in TEST_JOBS processes (default: one per
# core; TEST_JOBS=1 runs them in one).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
XDIST = $$(python3 -c 'import xdist' 2>/dev/null && [ $(TEST_JOBS) -gt 1 ] && printf -- '-n %s' $(TEST_JOBS))
check:
	sh scripts/install-deps.sh
	$(MAKE) rootfs
	$(MAKE) all unit
	python3 scripts/check-deps.py
	PATH="$$PATH:/usr/local/go/bin" $(MAKE) -C tests/guests
	python3 -m pytest -q $(XDIST) tests
	$(MAKE) check-rootless

# The differential tests again (guests, LTP-class guests, the load storm,
# real programs, --count against strace, the vDSO and time, checkpoint and
# restore, the fds in checkpoints), natively and under the default platform, as the
# ordinary user nobody with the host's default sysctls (the pass refuses a
# lowered vm.mmap_min_addr), and as nobody has it: HOME=/nonexistent and no
# XDG_CACHE_HOME (zvisor's cache is then /tmp/zvisor-UID). Run by root: as
# another user `make check` was rootless already.
ROOTLESS_USER ?= nobody
ROOTLESS_TESTS := tests/test_guests.py tests/test_fastpath.py tests/test_sigsys_zero.py tests/test_ltpclass.py \
	tests/test_load.py tests/test_real_programs.py tests/test_count.py tests/test_vdso_time.py \
	tests/test_checkpoint.py tests/test_cr_fds.py tests/test_cr_socks.py tests/test_cr_tree.py tests/test_cr_ids.py \
	tests/test_sudoff.py
check-rootless:
	@if [ "$$(id -u)" != 0 ]; then \
		echo "check-rootless: not root: the main pass ran as $$(id -un) already"; \
	else \
		echo "check-rootless: as $(ROOTLESS_USER), HOME=/nonexistent, vm.mmap_min_addr=$$(cat /proc/sys/vm/mmap_min_addr)"; \
		ZV_TEST_USER=$(ROOTLESS_USER) ZV_TEST_HOME=/nonexistent ZV_TEST_PLATFORMS=stubs \
			python3 -m pytest -q $(XDIST) -p no:cacheprovider \
			$(ROOTLESS_TESTS); \
	fi

# The Debian root filesystem of the --root tests (tests/test_rootfs*.py),
# built once into its cache (scripts/rootfs.sh; about three minutes, as root). A
# failed build does not stop `make check`: those tests then fail with its log.
rootfs:
	@if [ "$$(id -u)" = 0 ]; then sh scripts/rootfs.sh build || \
		echo "rootfs: the build failed: the --root tests will fail" >&2; \
	else echo "rootfs: not root: the --root tests need root and are skipped"; fi

# The kernel's dependency direction (docs/DESIGN.md, "Source layout"):
# any include or symbol against it fails.
check-deps: all
	python3 scripts/check-deps.py

# Third-party suites natively and under each platform (not in `check`: it
# takes long). SUITES_ARGS passes options, e.g. SUITES_ARGS=--quick or
# SUITES_ARGS="--suite ltp --ltp-root /opt/ltp".
check-suites: all
	sh scripts/install-suites.sh
	PATH="$$PATH:/usr/local/go/bin" python3 suites/run.py $(SUITES_ARGS)

# Microbenchmarks (not tests): native vs every platform, strace and gVisor.
bench: all
	$(MAKE) -C bench

# Whole-program workloads (not tests): native vs zvisor, zvisor trace, strace
# and gVisor on python3, sqlite3, gcc, git, find, tar, Go, redis and nginx.
bench-workloads: all
	$(MAKE) -C bench workloads

# Installs zvisor and its man page as users of a C tool expect:
# make install [PREFIX=/usr/local] [DESTDIR=staging root].
PREFIX  ?= /usr/local
BINDIR  := $(DESTDIR)$(PREFIX)/bin
MANDIR  := $(DESTDIR)$(PREFIX)/share/man/man1

install: all
	install -d $(BINDIR) $(MANDIR)
	install -m 755 $(BUILD)/zvisor $(BINDIR)/zvisor
	install -m 644 docs/zvisor.1 $(MANDIR)/zvisor.1

uninstall:
	rm -f $(BINDIR)/zvisor $(MANDIR)/zvisor.1

clean:
	rm -rf $(BUILD)
	$(MAKE) -C tests/guests clean

.PHONY: all unit check check-deps check-rootless check-suites rootfs clean bench bench-workloads install uninstall
-include $(KOBJ:.o=.d)
