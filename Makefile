# Targets: build, install, test, test-short, lint, fuzz, bench, demo, demo-stop, man, docs, clean.
# `make test` is scripts/test.sh: the same checks run locally and in CI.

GO ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build install test test-short lint fuzz bench demo demo-stop man docs clean

# Where make install puts things; DESTDIR is prepended (packaging).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share

all: build

build:
	$(GO) build -o sshfsm ./cmd/sshfsm

# The binary, the manual page and the shell completions. No mount helper
# is needed: for fstab's fuse.sshfsm, mount(8) runs mount.fuse3, which
# runs sshfsm from the PATH mount(8) gives (BINDIR is on it by default).
# It builds only a missing binary, so that `make build && sudo make install`
# needs no Go toolchain on root's PATH.
# BIN installs another binary instead (the tests give the one they built).
install:
	@test -n "$(BIN)" || test -x sshfsm || $(MAKE) build
	install -D -m 0755 $(or $(BIN),sshfsm) $(DESTDIR)$(BINDIR)/sshfsm
	install -D -m 0644 docs/sshfsm.1 $(DESTDIR)$(MANDIR)/man1/sshfsm.1
	install -D -m 0644 docs/completions/sshfsm.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/sshfsm
	install -D -m 0644 docs/completions/_sshfsm $(DESTDIR)$(DATADIR)/zsh/site-functions/_sshfsm
	install -D -m 0644 docs/completions/sshfsm.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/sshfsm.fish

test:
	bash scripts/test.sh

# The quick tier, in about a minute: the unit tests over the in-process
# SFTP server, without sshd, FUSE mounts, long fault runs or the race
# detector, and without installing anything.
test-short:
	$(GO) test -short -count=1 ./...

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

# docs/sshfsm.1, docs/options.md, docs/sshfs-compat.md and
# docs/completions, from the option declarations.
docs:
	$(GO) test ./internal/config -run TestDocs -update

clean:
	-bash scripts/demo.sh stop
	rm -f sshfsm
	$(GO) clean -testcache
