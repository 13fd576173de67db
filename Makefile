# ppc — the two commands: `make run` and `make test`. Both install missing Debian packages first.
SWIFT ?= swift
OUT ?= out
BIN := .build/debug

.PHONY: run test bench deps build check-architecture clean

deps:
	@scripts/install-deps

build: deps
	$(SWIFT) build

## make run: build, then run the default pipeline on the built-in synthetic source and say where its output went.
run: build
	$(BIN)/ppc-tool run Manifests/default.json --out $(OUT)

## make test: the architecture check, then every test target (Specs included). The V4L2 tests boot a small VM with
## the kernel's vivid driver and run a statically linked ppc-tool inside it (the VM has no Swift runtime).
STATIC_TOOL := .build/static/debug/ppc-tool
test: deps check-architecture
	$(SWIFT) build --build-tests
	$(SWIFT) build --static-swift-stdlib --product ppc-tool --scratch-path .build/static
	PPC_STATIC_TOOL=$(CURDIR)/$(STATIC_TOOL) $(SWIFT) test --skip-build

## make bench: release build, then every benchmark as JSON (figures are measured, with date and machine).
bench: deps
	$(SWIFT) build -c release --product ppc-tool
	.build/release/ppc-tool bench index --json
	.build/release/ppc-tool bench ring --json
	.build/release/ppc-tool bench encode --json
	.build/release/ppc-tool bench detect --json
	.build/release/ppc-tool bench link --json

check-architecture:
	@scripts/check-architecture-selftest
	@scripts/check-architecture

clean:
	rm -rf .build $(OUT)
