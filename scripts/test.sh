#!/usr/bin/env bash
# Runs every check of sshfsm, locally and in CI: gofmt, go vet, staticcheck,
# the tests with the race detector, and a final check that the tests left no
# mount and no process behind. Installs its own Debian dependencies.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
TEST_TIMEOUT=${SSHFSM_TEST_TIMEOUT:-20m}

need_go
# gcc and libc6-dev: the race detector needs cgo.
ensure_packages openssh-server openssh-client fuse3 sshfs fio git ca-certificates gcc libc6-dev
ensure_fuse
export CGO_ENABLED=1

# Mounts and processes that existed before, e.g. the user's own sshfsm
# mounts, are not the tests' doing.
before_mounts=$(sshfsm_mounts)
before_procs=$(test_procs | awk '{ print $1 }')

results=()
failed=0
# step NAME CMD...: runs one check, records PASS/FAIL and its duration.
step() {
	local name=$1 start rc
	shift
	say "$name"
	start=$SECONDS
	set +e
	"$@"
	rc=$?
	set -e
	if [ $rc -eq 0 ]; then
		results+=("PASS  $name ($((SECONDS - start))s)")
	else
		results+=("FAIL  $name ($((SECONDS - start))s)")
		failed=1
	fi
}

check_gofmt() {
	local out
	out=$(gofmt -l .)
	[ -z "$out" ] && return 0
	echo "not gofmt-ed (run gofmt -w):" >&2
	echo "$out" >&2
	return 1
}

check_leftovers() {
	local bad=0 m pid line
	for m in $(sshfsm_mounts); do
		if ! grep -qxF "$m" <<<"$before_mounts"; then
			echo "left mounted: $m (unmount with: fusermount3 -uz $m)" >&2
			bad=1
		fi
	done
	while read -r pid line; do
		[ -n "$pid" ] || continue
		if ! grep -qx "$pid" <<<"$before_procs"; then
			echo "left running: pid $pid: $line" >&2
			bad=1
		fi
	done < <(test_procs)
	return $bad
}

step "gofmt" check_gofmt
step "go vet" go vet ./...
step "staticcheck" go run "$STATICCHECK" ./...
step "go test -race" go test -race -count=1 -timeout "$TEST_TIMEOUT" ./...
step "no leftover mounts or processes" check_leftovers

echo
echo "summary:"
printf '  %s\n' "${results[@]}"
if [ $failed -ne 0 ]; then
	echo "FAILED" >&2
	exit 1
fi
echo "all checks passed"
