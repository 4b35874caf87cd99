# The short commands. CMake does the building: build/ for the normal tree,
# build-asan/ for the AddressSanitizer + UndefinedBehaviorSanitizer pass.
#
#   make demo           build, then run the showcase on shared memory
#   make test           build and run the whole suite, then again under ASan+UBSan
#   make bench          flit-bench on 2 ranks: latency, bandwidth, rate, N1/2
#   make bench-compare  flit-bench beside an MPI ping-pong of Debian's Open MPI
#   make bench-udp      flit over UDP beside raw UDP: loopback, veth, under loss
#   make bench-readme   all of these, 3 runs each: the README's tables as markdown
#   make install        install under PREFIX (default /usr/local)

BUILD      ?= build
ASAN_BUILD ?= build-asan
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
GENERATOR  := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
FLITRUN     = $(BUILD)/tools/flitrun

.PHONY: all configure build demo test test-main test-asan bench bench-compare bench-udp \
        bench-readme install clean

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

test: test-main test-asan

test-main: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The same suite under the sanitizers, with message counts scaled down
# (FLITTEST_SCALE, in percent) since everything runs ~3x slower.
test-asan:
	@test -f $(ASAN_BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(ASAN_BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	        -DFLIT_WERROR=ON -DFLIT_SANITIZE=address,undefined
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	FLITTEST_SCALE=25 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -LE nosan

bench: build
	$(FLITRUN) -n 2 $(BUILD)/bench/flit-bench $(BENCH_ARGS)

bench-compare: build
	bench/compare.sh $(BUILD)

bench-udp: build
	bench/udp_bench.sh $(BUILD) $(BENCH_ARGS)

# The README's performance tables, dated and naming the machine, on stdout
# (BENCH_ARGS: --runs N, --quick, --keep DIR).
bench-readme: build
	bench/readme_tables.sh $(BUILD) $(BENCH_ARGS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
