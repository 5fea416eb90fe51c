# One non-recursive build for every program, test and sanitizer variant. `make help` lists the
# goals: the lines below that start with two hashes, and each goal's text after its two hashes.
## Goals (build/VARIANT/ holds everything built; VARIANT=release by default):

VARIANT ?= release
O := build/$(VARIANT)

CC ?= cc
OPT ?= -O2
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla \
        -Wpointer-arith -fno-common
ifeq ($(WERROR),1)
WARN += -Werror
endif
SAN_address := -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_thread := -fsanitize=thread
SAN_fuzz := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
SAN := $(if $(filter asan,$(VARIANT)),$(SAN_address),$(if $(filter tsan,$(VARIANT)),$(SAN_thread),))
ifneq ($(filter asan tsan,$(VARIANT)),)
OPT := -O1
endif
# The fuzz targets (tests/fuzz/) are built by clang with libFuzzer, ASan and UBSan.
ifeq ($(VARIANT),fuzz)
CC := clang
OPT := -O1
SAN := $(SAN_fuzz)
endif

PKGS := libevent libevent_pthreads hiredis libmariadb libsodium libargon2 zlib libisal jansson \
        openssl
# Without the libraries the build would stop at the first missing header: say what to run
# instead (the goals that install them first, or need nothing, are not checked).
ifneq ($(filter-out setup clean help test test-asan test-tsan uninstall,$(or $(MAKECMDGOALS),all)),)
ifneq ($(shell pkg-config --exists $(PKGS) cmocka fuse3 2>/dev/null && echo ok),ok)
$(error the libraries are not installed: run 'make setup' (scripts/setup.sh, Debian 12) first)
endif
endif
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

CFLAGS_ALL = -std=gnu11 -D_GNU_SOURCE $(OPT) -g -fno-omit-frame-pointer $(WARN) $(SAN) \
             -Icommon $(PKG_CFLAGS) -DPROJECT_VERSION='"$(VERSION)"' \
             -DPROJECT_CFLAGS='"$(OPT) $(SAN)"' -MMD -MP $(CFLAGS)
LDLIBS_ALL = $(SAN) $(PKG_LIBS) -lpthread -lm $(LDLIBS)

COMMON_SRC := $(wildcard common/*.c)
S1_SRC := $(filter-out server1/main.c server1/s1pack.c,$(wildcard server1/*.c))
S2_SRC := $(filter-out server2/main.c,$(wildcard server2/*.c))
LG_SRC := $(filter-out loadgen/main.c,$(wildcard loadgen/*.c))
UNIT_SRC := $(wildcard tests/unit/*/test_*.c)

obj = $(patsubst %.c,$(O)/obj/%.o,$(1))
PROGS := $(if $(wildcard server1/main.c),$(O)/server1) $(if $(wildcard server2/main.c),$(O)/server2) \
         $(if $(wildcard loadgen/main.c),$(O)/loadgen) $(if $(wildcard server1/s1pack.c),$(O)/s1pack)
UNIT_BINS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRC))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,build/fuzz/fuzz/%,$(FUZZ_SRC))
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
SOAK_MINUTES ?= 30

ifneq ($(V),1)
Q := @
qcc = @echo "  CC      $<";
qld = @echo "  LD      $@";
endif

.PHONY: all build asan tsan unit itest test test-asan test-tsan setup clean help crash-test \
        fuzz fuzz-short fuzz-build soak failover faultlib-test docs install uninstall flush-replay
.DEFAULT_GOAL := all
.SECONDARY:

all: $(PROGS) ## release build: build/release/{server1,server2,loadgen,s1pack} (the default)
build: all $(UNIT_BINS) $(O)/gen-flags $(O)/flushlog ## the programs, unit tests and test tools

asan: ## AddressSanitizer + UBSan build (build/asan)
	$(Q)$(MAKE) --no-print-directory VARIANT=asan build
tsan: ## ThreadSanitizer build (build/tsan)
	$(Q)$(MAKE) --no-print-directory VARIANT=tsan build

$(O)/obj/%.o: %.c
	$(Q)mkdir -p $(dir $@)
	$(qcc)$(CC) $(CFLAGS_ALL) -c $< -o $@

# The version and flags that --version and the results print: the stamp is rewritten only when
# they change, and the files that print them are rebuilt then.
VERSION_STAMP := $(O)/version.stamp
$(VERSION_STAMP): FORCE
	$(Q)mkdir -p $(dir $@)
	$(Q)echo '$(VERSION) $(OPT) $(SAN)' | cmp -s - $@ || echo '$(VERSION) $(OPT) $(SAN)' >$@
$(call obj,server1/config.c server2/config.c loadgen/config.c loadgen/report.c): $(VERSION_STAMP)
.PHONY: FORCE
FORCE:

$(O)/libcommon.a: $(call obj,$(COMMON_SRC))
$(O)/libserver1.a: $(call obj,$(S1_SRC))
$(O)/libserver2.a: $(call obj,$(S2_SRC))
$(O)/libloadgen.a: $(call obj,$(LG_SRC))
$(O)/%.a:
	$(Q)mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/server1: $(O)/obj/server1/main.o $(O)/libserver1.a $(O)/libcommon.a
	$(qld)$(CC) -o $@ $^ $(LDLIBS_ALL)
# s1pack (the pack tool, docs/pack.md) shares server1's pack and name code
$(O)/s1pack: $(O)/obj/server1/s1pack.o $(O)/libserver1.a $(O)/libcommon.a
	$(qld)$(CC) -o $@ $^ $(LDLIBS_ALL)
$(O)/server2: $(O)/obj/server2/main.o $(O)/libserver2.a $(O)/libcommon.a
	$(qld)$(CC) -o $@ $^ $(LDLIBS_ALL)
$(O)/loadgen: $(O)/obj/loadgen/main.o $(O)/libloadgen.a $(O)/libcommon.a
	$(qld)$(CC) -o $@ $^ $(LDLIBS_ALL)

# A unit test links its own object and whichever program archive supplies the module it tests.
TEST_LIBS := $(O)/libserver1.a $(O)/libserver2.a $(O)/libloadgen.a $(O)/libcommon.a
$(O)/tests/%: $(O)/obj/tests/unit/%.o $(TEST_LIBS)
	$(Q)mkdir -p $(dir $@)
	$(qld)$(CC) -o $@ $^ $(LDLIBS_ALL) -lcmocka

# docs/man/PROG.1 and docs/flags/PROG.md come from the programs' flag tables (common/flagtab.h):
# `make docs` writes them; `make unit` fails while the committed ones differ from the tables.
$(O)/gen-flags: $(O)/obj/scripts/gen-flags.o $(TEST_LIBS)
	$(qld)$(CC) -o $@ $^ $(LDLIBS_ALL)
docs: $(O)/gen-flags ## write docs/man/PROG.1 and docs/flags/PROG.md from the flag tables
	$(Q)$(O)/gen-flags docs

# A fuzz target links its own object, the program archives and libFuzzer's main.
$(O)/fuzz/%: $(O)/obj/tests/fuzz/%.o $(TEST_LIBS)
	$(Q)mkdir -p $(dir $@)
	$(qld)$(CC) -fsanitize=fuzzer -o $@ $^ $(LDLIBS_ALL)

fuzz-build: ## every libFuzzer target (clang, build/fuzz)
	$(Q)$(MAKE) --no-print-directory VARIANT=fuzz $(FUZZ_BINS)
fuzz: fuzz-build ## every fuzz target for FUZZ_SECONDS (60) each; FUZZ_ONLY=NAME: one
	$(Q)bash tests/run-fuzz.sh build/fuzz/fuzz $(FUZZ_SECONDS)
fuzz-short: fuzz-build ## every fuzz target for 5 s
	$(Q)bash tests/run-fuzz.sh build/fuzz/fuzz 5

# tests/crash/flushlog: a FUSE disk that logs every write and flush (tests/crash/flushreplay.py);
# only it links libfuse3.
$(O)/flushlog: $(O)/obj/tests/crash/flushlog.o
	$(qld)$(CC) -o $@ $^ $(LDLIBS_ALL) $(shell pkg-config --libs fuse3 2>/dev/null)
$(O)/obj/tests/crash/flushlog.o: CFLAGS_ALL += $(shell pkg-config --cflags fuse3 2>/dev/null)

setup: ## install the Debian packages the project needs (scripts/setup.sh)
	$(Q)bash scripts/setup.sh

unit: build ## cmocka unit tests and the source, document and results checks
	$(Q)python3 scripts/check-includes.py
	$(Q)python3 scripts/check-includes.py --readme docs/design/server1.md
	$(Q)python3 scripts/check-links.py
	$(Q)python3 scripts/gen-metrics-doc.py --check docs/operate.md
	$(Q)$(O)/gen-flags --check docs
	$(Q)python3 scripts/results-index.py --check
	$(Q)bash scripts/check-commits.sh
	$(Q)bash tests/run-unit.sh $(O)

faultlib-test: ## unit tests of tests/faultlib (the crash, soak and cluster loads' library)
	$(Q)cd tests && python3 -m unittest discover -s faultlib -t . -p 'test_*.py'

itest: all ## integration tests only
	$(Q)BIN_DIR=$(O) bash tests/run-integration.sh

test: setup ## install what is missing, build, unit + short fuzz + integration tests
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) build
	$(Q)$(MAKE) --no-print-directory unit
	$(Q)$(MAKE) --no-print-directory faultlib-test
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) fuzz-build
	$(Q)$(MAKE) --no-print-directory fuzz-short
	$(Q)$(MAKE) --no-print-directory itest

test-asan: setup ## the unit and integration tests against the ASan build
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) VARIANT=asan build
	$(Q)ASAN_OPTIONS="detect_leaks=1 $(ASAN_OPTIONS)" ITEST_HTTPS=0 \
	    $(MAKE) --no-print-directory VARIANT=asan unit itest
test-tsan: setup ## the unit and integration tests against the TSan build
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) VARIANT=tsan build
	$(Q)TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 $(TSAN_OPTIONS)" ITEST_HTTPS=0 \
	    $(MAKE) --no-print-directory VARIANT=tsan unit itest

# The long crash-consistency run (tests/crash/crash.py): 20 SIGKILL rounds per backend and
# server2 process model; CRASH_FLAGS adds harness flags (e.g. --seed N).
crash-test: all ## the long crash-consistency run (20 SIGKILL rounds per backend)
	$(Q)for cfg in "redis threads" "redis processes" "mysql threads" "mysql processes"; do \
	    set -- $$cfg; echo "== crash-test: $$1, server2 $$2"; \
	    python3 tests/crash/crash.py --bin-dir $(O) --backend $$1 --mode $$2 --rounds 20 \
	        $(CRASH_FLAGS) || exit 1; \
	done

# The flush-by-flush replay (tests/crash/flushreplay.py) on ext4 and XFS: 400 flush marks
# spread over 20 s of uploads on each (about 8 minutes each); `make test` checks 20 marks of
# 3 s on each (tests/integration/test_flush_replay.sh). REPLAY_MARKS=0: every mark (hours).
REPLAY_MARKS ?= 400
flush-replay: build ## replay the store's disk at REPLAY_MARKS flush marks, ext4 and XFS (root)
	$(Q)rc=0; for fs in ext4 xfs; do echo "== flush-replay: $$fs"; \
	    python3 tests/crash/flushreplay.py --bin-dir $(O) --fs $$fs --seconds 20 \
	        --marks $(REPLAY_MARKS) || rc=1; done; exit $$rc

# The long soak under faults (scripts/soak.sh); `make test` runs a 2-minute one.
soak: all ## scripts/soak.sh for SOAK_MINUTES (30); VARIANT=asan: the ASan build
	$(Q)bash scripts/soak.sh --minutes $(SOAK_MINUTES) --bin-dir $(O)

# The long failover run under load (scripts/cluster-failover.sh: every fault twice, 10 s each);
# `make test` runs the short one (tests/integration/test_cluster.sh, Redis + Sentinel).
FAILOVER_BACKENDS ?= redis-sentinel galera
failover: all ## scripts/cluster-failover.sh for each of FAILOVER_BACKENDS (needs root)
	$(Q)rc=0; for b in $(FAILOVER_BACKENDS); do echo "== failover: $$b"; \
	    BIN_DIR=$(O) bash scripts/cluster-failover.sh --backend $$b \
	        $(if $(FAILOVER_OUT),--out $(FAILOVER_OUT)) || rc=1; \
	done; exit $$rc

# `make install`: the release build and what goes with it, in the FHS places under PREFIX, all
# below DESTDIR (a staging tree for a package). The daemons go to sbin, as Debian installs
# nginx, haproxy and mariadbd (programs the administrator starts, not users); loadgen to bin.
# The units (scripts/systemd/*.in, @sbindir@ and @sysconfdir@ filled in) go to UNITDIR; a
# server's config file to SYSCONFDIR/PROG/PROG.conf only if there is none (it is the
# administrator's), and always to DOCDIR/examples. `make uninstall` removes what install put,
# and a config file only while it is the example unchanged (as dpkg keeps a changed conffile).
# Nothing is written under build/, so `sudo make install` leaves no file of root's there.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/fileserver
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
INSTALL ?= install
DAEMONS := server1 server2
# subst_paths FILE.in: the file with the install's paths, on stdout
subst_paths = sed -e 's|@sbindir@|$(SBINDIR)|g' -e 's|@sysconfdir@|$(SYSCONFDIR)|g' $(1)

install: all ## install the programs, man pages and systemd units (PREFIX, DESTDIR)
	$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)/examples
	$(INSTALL) -m 0755 $(O)/server1 $(O)/server2 $(DESTDIR)$(SBINDIR)/
	$(INSTALL) -m 0755 $(O)/loadgen $(O)/s1pack $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 0644 docs/man/server1.1 docs/man/server2.1 docs/man/loadgen.1 \
	    docs/man/s1pack.1 $(DESTDIR)$(MANDIR)/man1/
	$(Q)set -e; for d in $(DAEMONS); do \
	    echo "$$d.service -> $(DESTDIR)$(UNITDIR)/"; \
	    $(call subst_paths,scripts/systemd/$$d.service.in) >$(DESTDIR)$(UNITDIR)/$$d.service; \
	    chmod 0644 $(DESTDIR)$(UNITDIR)/$$d.service; \
	    $(call subst_paths,scripts/systemd/$$d.conf.in) >$(DESTDIR)$(DOCDIR)/examples/$$d.conf; \
	    chmod 0644 $(DESTDIR)$(DOCDIR)/examples/$$d.conf; \
	    f=$(DESTDIR)$(SYSCONFDIR)/$$d/$$d.conf; \
	    if [ -e "$$f" ]; then echo "kept $$f (not overwritten)"; \
	    else $(INSTALL) -d "$${f%/*}" && \
	        $(INSTALL) -m 0644 $(DESTDIR)$(DOCDIR)/examples/$$d.conf "$$f" && \
	        echo "installed $$f"; fi; \
	done

uninstall: ## remove what `make install` put (same PREFIX, DESTDIR)
	rm -f $(addprefix $(DESTDIR)$(SBINDIR)/,$(DAEMONS)) $(DESTDIR)$(BINDIR)/loadgen \
	    $(DESTDIR)$(BINDIR)/s1pack \
	    $(addprefix $(DESTDIR)$(MANDIR)/man1/,server1.1 server2.1 loadgen.1 s1pack.1) \
	    $(addprefix $(DESTDIR)$(UNITDIR)/,server1.service server2.service) \
	    $(addprefix $(DESTDIR)$(DOCDIR)/examples/,server1.conf server2.conf)
	$(Q)rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	$(Q)for d in $(DAEMONS); do \
	    f=$(DESTDIR)$(SYSCONFDIR)/$$d/$$d.conf; \
	    if [ ! -e "$$f" ]; then :; \
	    elif $(call subst_paths,scripts/systemd/$$d.conf.in) | cmp -s - "$$f"; then \
	        rm -f "$$f" && echo "removed $$f"; \
	    else echo "kept $$f (changed from the example)"; fi; \
	    rmdir "$${f%/*}" 2>/dev/null || true; \
	done

clean: ## remove build/
	rm -rf build

help: ## this list
	@awk '/^## / { sub(/^## /, ""); print; next } \
	    /^[a-z][a-z-]*:.*## / { t = $$0; sub(/:.*/, "", t); d = $$0; sub(/.*## /, "", d); \
	        printf "  make %-13s %s\n", t, d }' $(firstword $(MAKEFILE_LIST))
## Variables: V=1 full commands; WERROR=1 warnings are errors; VARIANT=asan|tsan one sanitizer
##   build; JOBS=N parallel compiles in the test goals (default: the number of CPUs; the tests
##   themselves run one at a time); FUZZ_SECONDS, FUZZ_ONLY=NAME, SOAK_MINUTES, CRASH_FLAGS,
##   FAILOVER_BACKENDS, FAILOVER_OUT=DIR: see the goal they belong to; PREFIX (/usr/local),
##   DESTDIR, BINDIR, SBINDIR, MANDIR, DOCDIR, UNITDIR, SYSCONFDIR: where install puts things.

-include $(shell find build -name '*.d' 2>/dev/null)
