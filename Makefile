# ppc — the two commands: `make run` and `make test`. Both install missing Debian packages first.
SWIFT ?= swift
OUT ?= out
BIN := .build/debug

.PHONY: run studio test bench deps build check-architecture format lint clean fuzz fuzz-smoke tsan

deps:
	@scripts/install-deps

build: deps
	$(SWIFT) build

## make run: build, then run the default pipeline on the built-in synthetic source and say where its output went.
run: build
	$(BIN)/ppc-tool run Manifests/default.json --out $(OUT)

## make studio: ppc Studio (the host's web pages) on the library `make run` fills — runs it first if OUT has no clips —
## at http://127.0.0.1:$(STUDIO_PORT)/ ; devices on this machine may deliver to it too (127.0.0.1:7600, loopback only).
STUDIO_PORT ?= 8080
studio: build
	@[ -d $(OUT)/clips ] || $(BIN)/ppc-tool run Manifests/default.json --out $(OUT)
	$(BIN)/ppc-host --library $(OUT) --http 127.0.0.1:$(STUDIO_PORT) --listen 127.0.0.1:7600 --insecure-loopback-only

## make format: the tree formatted as .swift-format says (120 columns); make lint: what `make test` holds it to. The
## architecture fixtures are left as they are: their line numbers are what the self-test expects.
SWIFT_SOURCES = $(shell git ls-files '*.swift' 2>/dev/null | grep -v '^Tests/Fixtures/' || find Modules Plugins Tools Tests Specs -name '*.swift' -not -path 'Tests/Fixtures/*')
format:
	@$(SWIFT) format format -i --parallel Package.swift $(filter-out Package.swift,$(SWIFT_SOURCES))
lint:
	@echo "swift format lint --strict (every Swift file but the architecture fixtures)"; $(SWIFT) format lint --strict --parallel Package.swift $(filter-out Package.swift,$(SWIFT_SOURCES))

## make test: the format lint and the architecture check, then every test target (Specs included), the concurrency tests again under
## ThreadSanitizer, and every fuzzer for 10 s. The V4L2 tests boot a small VM with
## the kernel's vivid driver and run a statically linked ppc-tool inside it (the VM has no Swift runtime).
STATIC_TOOL := .build/static/debug/ppc-tool
test: deps lint check-architecture
	$(SWIFT) build --build-tests
	$(SWIFT) build --static-swift-stdlib --product ppc-tool --scratch-path .build/static
	PPC_STATIC_TOOL=$(CURDIR)/$(STATIC_TOOL) $(SWIFT) test --skip-build
	$(MAKE) tsan
	$(MAKE) fuzz-smoke

## make fuzz-smoke: every libFuzzer harness (Tests/Fuzz) for 10 s from its seed corpus, two at a time; fails on any crash.
fuzz-smoke: deps
	scripts/fuzz 10

## make fuzz: the same harnesses for FUZZ_SECONDS each (default 600), the corpus kept in .build/fuzz-corpus.
FUZZ_SECONDS ?= 600
fuzz: deps
	FUZZ_CORPUS=$(CURDIR)/.build/fuzz-corpus scripts/fuzz $(FUZZ_SECONDS)

## make tsan: the audio read-ahead, link, transfer, session (through the built tools) and studio tests under
## ThreadSanitizer. Shared state then sits behind pthread mutexes TSan can see (PPC_THREAD_SANITIZER: the toolchain's
## Synchronization is not built with TSan, so it cannot see a Mutex's lock and reports false races).
TSAN_TESTS ?= AudioReadAheadTests|StopSignalTests|DeliveryTests|LinkTests|PairingTests|TransferTests|HostToolTests|HostAwayTests|IntegrityToolTests|RunToolTests|KillTests|PolicyToolTests|StudioTests|WebServerTests
# Run at camera pace for tens of seconds each, or lean on minting being done within a connect timeout (slower under TSan);
# the threads they drive are covered by DeliveryTests, StudioPagesTests and the other host tests.
TSAN_SKIP ?= aHostThatIsDownWhileShotsKeepComingCostsNoShot|clipsOwedWhileTheHostWasDownArriveWhenItComesBackMidSession|aHostThatNeverAnswersCostsOneConnectTimeoutNotOnePerClip|aLivePageThatStopsReadingNeverCostsADeviceItsLink
tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread -Xswiftc -DPPC_THREAD_SANITIZER --scratch-path .build/tsan
	TSAN_OPTIONS=halt_on_error=1 SWIFT_BACKTRACE=enable=no $(SWIFT) test --skip-build --sanitize=thread -Xswiftc -DPPC_THREAD_SANITIZER \
		--scratch-path .build/tsan --filter '$(TSAN_TESTS)' --skip '$(TSAN_SKIP)'

## make bench: release build, then every benchmark as JSON (figures are measured, with date and machine).
bench: deps
	$(SWIFT) build -c release --product ppc-tool
	.build/release/ppc-tool bench index --json
	.build/release/ppc-tool bench ring --json
	.build/release/ppc-tool bench encode --json
	.build/release/ppc-tool bench detect --json
	.build/release/ppc-tool bench link --json
	.build/release/ppc-tool bench studio --json

check-architecture:
	@scripts/check-architecture-selftest
	@scripts/check-architecture

clean:
	rm -rf .build $(OUT)
