# The two commands: `make run` and `make test`. Both install what is missing first.
JOBS      ?= $(shell nproc)
BUILD     ?= build/release
ASAN      ?= build/asan
TSAN      ?= build/tsan
CMAKE_GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
# Every tree compiles in unity batches of 8 files (LAGPILOT_UNITY_BUILD): about half the CPU of
# a cold build, which CI pays three times. `make build UNITY=OFF` compiles file by file, so that
# an edit recompiles one file rather than its batch.
UNITY ?= ON
# Sanitizer builds: -O1 with line tables only (enough for symbolized reports) compiles much
# faster than -O2 -g, and keeps asserts (Eigen's among them) switched on.
SANITIZER_FLAGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DLAGPILOT_BUILD_BENCH=OFF -DLAGPILOT_UNITY_BUILD=$(UNITY)

.PHONY: all deps build install run test test-release test-asan test-tsan test-fuzz bench format clean

all: build

deps:
	@./scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release \
	  -DLAGPILOT_UNITY_BUILD=$(UNITY) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The package (headers, static libraries, the binary, find_package(lagpilot) files) under PREFIX.
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

run: build
	@./scripts/run-demo.sh $(BUILD)/cli/lagpilot

test: test-release test-asan test-tsan test-fuzz

# ctest -j: the broker and CLI suites mostly wait on sockets, brokers' group joins and child
# processes, so one more suite than there are cores runs at a time, and the CPU-bound suites
# run beside them (the long ones start first: their COST in tests/).
TEST_JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
test-release: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(TEST_JOBS)

# Unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer, in the clang tree that
# also builds the libFuzzer targets (fuzz/fuzzing.cmake): every library is compiled once,
# instrumented, for both steps. clang compiles this tree in about 80 % of GCC's time.
# (A build/asan left by an older GCC configuration is removed first: CMake cannot switch compilers.)
ASAN_CONFIG = grep -qs 'CMAKE_CXX_COMPILER:.*clang' $(ASAN)/CMakeCache.txt || rm -rf $(ASAN); \
  CC=clang CXX=clang++ cmake -S . -B $(ASAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLAGPILOT_BUILD_FUZZERS=ON -DLAGPILOT_BUILD_BENCH=OFF -DLAGPILOT_UNITY_BUILD=$(UNITY) >/dev/null
test-asan: deps
	@$(ASAN_CONFIG)
	@cmake --build $(ASAN) -j $(JOBS) --target policies_test sim_test pool_test controller_test \
	  kafka_test block_pipeline_test
	@ctest --test-dir $(ASAN) --output-on-failure -L unit -j $(TEST_JOBS)

# The worker pool, the runtime's threaded parts without a broker (HTTP API against a ticking
# controller, metrics, offset tracking), the simulator's block scheduler and its multi-threaded
# runs (sim_test's Determinism and Tune cases) under ThreadSanitizer. kafka_test cannot run
# under it: Debian's librdkafka starts its threads with C11 thrd_create, which GCC's TSan does not
# intercept, so TSan crashes in the first librdkafka thread (docs/testing.md).
test-tsan: deps
	@cmake -S . -B $(TSAN) $(CMAKE_GEN) $(SANITIZER_FLAGS) -DLAGPILOT_SANITIZE=thread >/dev/null
	@cmake --build $(TSAN) -j $(JOBS) --target pool_test controller_test block_pipeline_test \
	  sim_test
	@ctest --test-dir $(TSAN) --output-on-failure -j $(TEST_JOBS) \
	  -R '^(pool|controller|block_pipeline|sim_threads)_test$$'

# libFuzzer targets (clang + ASan + UBSan, the test-asan tree): their kept regression inputs,
# then 20 s of fuzzing each from a temporary copy of their seed corpus (docs/fuzzing.md).
test-fuzz: deps
	@$(ASAN_CONFIG)
	@cmake --build $(ASAN) -j $(JOBS) --target lagpilot_fuzzers
	@./scripts/run-fuzzers.sh $(ASAN)

bench: build
	@./scripts/run-benchmarks.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf build
