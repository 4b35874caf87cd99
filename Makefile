# SPDX-License-Identifier: BSD-3-Clause
# The short commands. CMake does the building: build/ for the normal tree,
# build-asan/ for the AddressSanitizer + UndefinedBehaviorSanitizer pass,
# build-tsan/ for the ThreadSanitizer one (BUILD, ASAN_BUILD, TSAN_BUILD).
#
#   make demo           build, then run the showcase on shared memory
#   make test           install the Debian packages the suite uses (as root;
#                       FLIT_NO_APT=1: never), build and run the whole suite,
#                       then again under ASan+UBSan, the threaded tests under
#                       TSan, and check the format of the changed lines
#   make test-tsan      the tests labelled threads, under ThreadSanitizer
#   make format-check   the C lines changed (git) follow .clang-format
#   make bench          flit-bench on 2 ranks: latency, bandwidth, rate, N1/2
#   make bench-compare  flit-bench beside Open MPI's ping-pong and UCX's
#                       ucx_perftest, run by run (BENCH_ARGS='--rounds 5')
#   make bench-mpi      flit-mpi beside Open MPI: the same MPI program built
#                       with each, alternated (compat/bench/mpi_compare.sh;
#                       BENCH_ARGS='--ranks 4': the collectives of 4 ranks)
#   make bench-udp      flit over UDP beside raw UDP: loopback, veth, under loss
#   make bench-xdp      flit over AF_XDP beside flit over UDP, raw UDP and raw
#                       AF_XDP, across veth between network namespaces (root;
#                       BENCH_ARGS: --rounds N, --quick, --csv DIR)
#   make bench-rails    1 MiB bandwidth over one UDP rail vs two, and the
#                       fail-over pause (root; BENCH_ARGS: --rounds N,
#                       --transport xdp: the same over AF_XDP)
#   make bench-ofi      flit over libfabric (FLIT_TRANSPORT=ofi) beside fi_pingpong and ofi_flood
#                       on each provider, alternated (BENCH_ARGS: --runs N,
#                       --providers LIST)
#   make bench-scale    N ranks on this host: creation, memory, latency, barrier
#   make bench-readme   all of these, 3 runs each: docs/performance.md's tables
#   make bench-launch   start-up cost under flitrun, srun --mpi=pmix and pmi2,
#                       1 to 64 ranks, flit's own share beside the launcher's
#   make apps           the applications on shared objects on 1 and 2 ranks:
#                       times, speedups, object operations and messages
#   make install        build what is installed (build-install/: no tests,
#                       examples or benchmarks, no -Werror) and install it
#                       under PREFIX (default /usr/local)

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
INSTALL_BUILD ?= build-install
TSAN_CC    ?= clang
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
# Looked up when a recipe uses it: after `make test` may have installed ninja.
GENERATOR   = $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
FLITRUN     = $(BUILD)/tools/flitrun

.PHONY: all configure build demo deps test test-main test-asan test-tsan format-check \
        bench bench-compare bench-mpi bench-udp bench-xdp bench-rails bench-ofi bench-readme bench-launch apps install clean

all: build

configure:
	@test -f $(BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLIT_WERROR=ON

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Only what the showcase runs, so that a fresh machine is there in seconds.
demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target flitrun flit-demo
	$(FLITRUN) -n 2 --timeout 60 $(BUILD)/examples/flit-demo latency
	$(FLITRUN) -n 4 --timeout 60 $(BUILD)/examples/flit-demo alltoall

# The Debian packages the suite uses, where missing (scripts/deps.sh).
deps:
	@scripts/deps.sh

# In this order, each timed; sub-makes, so that even under -j one part
# ends before the next starts, and the build sees what deps installed.
test: deps
	@$(call timed,test-main)
	@$(call timed,test-asan)
	@$(call timed,test-tsan)
	@$(call timed,format-check)

timed = t0=$$(date +%s); $(MAKE) --no-print-directory $(1); rc=$$?; \
	echo "make test: $(1) took $$(($$(date +%s) - t0)) s"; exit $$rc

test-main: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The same suite under the sanitizers, with message counts scaled down
# (FLITTEST_SCALE, in percent) since everything runs ~3x slower. Not the
# tests labelled nosan (no flit code in them, or programs built outside the
# build), nor the libFuzzer ones: those are ASan+UBSan builds in every tree,
# run once by test-main; nor those labelled big (hundreds of processes).
test-asan:
	@test -f $(ASAN_BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(ASAN_BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	        -DFLIT_WERROR=ON -DFLIT_SANITIZE=address,undefined -DFLIT_FUZZ=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	FLITTEST_SCALE=25 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -LE 'nosan|fuzz|big'

# The tests with several threads in a process (label threads) under
# ThreadSanitizer, built with clang. tests/tsan.supp lists the races that
# are there by design, each with why. Skipped, saying so, where clang
# cannot build with -fsanitize=thread (Debian: clang, libclang-rt-dev).
test-tsan:
	@probe=$$(mktemp) && \
	  echo 'int main(void) { return 0; }' | \
	    $(TSAN_CC) -fsanitize=thread -x c - -o $$probe >/dev/null 2>&1; ok=$$?; \
	  rm -f $$probe; \
	  if [ $$ok -ne 0 ]; then \
	    echo "test-tsan: skipped: $(TSAN_CC) cannot build with -fsanitize=thread" \
	         "(Debian: clang libclang-rt-dev)"; exit 0; fi; \
	  test -f $(TSAN_BUILD)/CMakeCache.txt || \
	    CC=$(TSAN_CC) cmake -S . -B $(TSAN_BUILD) $(GENERATOR) \
	      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLIT_WERROR=ON -DFLIT_SANITIZE=thread \
	      -DFLIT_FUZZ=OFF || exit 1; \
	  cmake --build $(TSAN_BUILD) -j $(JOBS) || exit 1; \
	  FLITTEST_SCALE=50 \
	  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp \
	    ctest --test-dir $(TSAN_BUILD) --output-on-failure -j $(JOBS) -L threads

format-check:
	@scripts/check-format.sh

bench: build
	$(FLITRUN) -n 2 $(BUILD)/bench/flit-bench $(BENCH_ARGS)

bench-compare: build
	bench/compare.sh $(BUILD) $(BENCH_ARGS)

bench-mpi: build
	compat/bench/mpi_compare.sh $(BUILD) $(BENCH_ARGS)

bench-udp: build
	bench/udp_bench.sh $(BUILD) $(BENCH_ARGS)

bench-xdp: build
	bench/xdp_bench.sh $(BUILD) $(BENCH_ARGS)

bench-rails: build
	bench/rails_bench.sh $(BUILD) $(BENCH_ARGS)

bench-ofi: build
	bench/ofi_bench.sh $(BUILD) $(BENCH_ARGS)

# N ranks on this host, over shm and udp: creation time, memory, /dev/shm,
# latency beside idle ranks, barrier (BENCH_ARGS: --plot FILE.png, --shm
# "2 8 ...", --udp "...", --iters K); with --hosts "1 2 4 8" (root) over
# namespace hosts, --ranks "2 64 ...", --mpi for Open MPI's mpirun beside.
bench-scale: build
	bench/scale.sh $(BUILD) $(BENCH_ARGS)

# docs/performance.md's tables, dated and naming the machine, written into
# it between its bench-readme markers (BENCH_ARGS: --runs N, --quick, --keep DIR).
bench-readme: build
	bench/readme_tables.sh $(BUILD) --write docs/performance.md $(BENCH_ARGS)

# SIZES (default 1 2 4 8 16 32 64) and RUNS (default 3) from the environment.
bench-launch: build
	bench/launch.sh $(BUILD)

# Jacobi, ASP, Water and TSP at their larger size, 1 and 2 ranks alternated
# RUNS times (default 3), each run checked against its sequential one: a
# markdown table of the medians (APPS: a subset).
apps: configure
	cmake --build $(BUILD) -j $(JOBS) --target flitrun jacobi asp water tsp
	examples/apps/apps.sh $(BUILD) $(APPS)

# Its own tree (INSTALL_BUILD): only what is installed is built (no tests,
# examples or benchmarks but flit-bench), without -Werror (a newer
# compiler's new warning must not break a user's install).
install:
	@test -f $(INSTALL_BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(INSTALL_BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	        -DBUILD_TESTING=OFF -DFLIT_BUILD_EXTRAS=OFF
	cmake --build $(INSTALL_BUILD) -j $(JOBS)
	cmake --install $(INSTALL_BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(INSTALL_BUILD)
