# Targets: build, test, lint, fuzz, bench, demo, demo-stop, man, docs, clean.
# `make test` is scripts/test.sh: the same checks run locally and in CI.

GO ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build test lint fuzz bench demo demo-stop man docs clean

all: build

build:
	$(GO) build -o sshfsm ./cmd/sshfsm

test:
	bash scripts/test.sh

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "not gofmt-ed (run gofmt -w):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Every fuzz target, one at a time: SSHFSM_FUZZTIME each (default 2000x
# inputs; e.g. SSHFSM_FUZZTIME=10m for a long run), SSHFSM_FUZZ to narrow.
fuzz:
	bash scripts/fuzz.sh

bench:
	$(GO) run ./bench

demo:
	bash scripts/demo.sh

demo-stop:
	bash scripts/demo.sh stop

man: build
	./sshfsm --man > docs/sshfsm.1.tmp && mv docs/sshfsm.1.tmp docs/sshfsm.1

# docs/sshfsm.1 and docs/options.md, from the option declarations.
docs:
	$(GO) test ./internal/config -run TestDocs -update

clean:
	-bash scripts/demo.sh stop
	rm -f sshfsm
	$(GO) clean -testcache
