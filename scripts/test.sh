#!/usr/bin/env bash
# Runs every check of sshfsm, locally and in CI: gofmt, go vet, staticcheck,
# the tests with the race detector, and a final check that the tests left no
# mount and no process behind, then every fuzz target briefly. Installs its
# own Debian dependencies.
#
# SSHFSM_TEST_PKGS narrows the tests (not the other checks) to some packages;
# SSHFSM_FUZZTIME sets how long each fuzz target runs (default 500x inputs);
# SSHFSM_TEST_TIMEOUT changes go test's -timeout (default 40m); past
# SSHFSM_TEST_GUARD (default 70m) the whole test step is stopped: the FUSE
# connections the run made are aborted, which frees any process stuck on one,
# so that a hung test fails the run instead of hanging it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
TEST_TIMEOUT=${SSHFSM_TEST_TIMEOUT:-40m}
TEST_GUARD=${SSHFSM_TEST_GUARD:-70m}
read -r -a TEST_PKGS <<<"${SSHFSM_TEST_PKGS:-./...}"

need_go
# gcc and libc6-dev: the race detector needs cgo. The shells: remote
# commands are checked under every login shell a server may give its users.
ensure_packages openssh-server openssh-client fuse3 sshfs fio git ca-certificates gcc libc6-dev \
	fish zsh tcsh csh ksh mksh yash posh busybox rc
ensure_fuse
ensure_fusectl
export CGO_ENABLED=1

# Everything the tests create lives below RUN_DIR, and every process they
# start inherits RUN_MARKER: that is how leftovers are told from the rest of
# the machine (the user's own mounts, other runs).
RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sshfsm-test.XXXXXX")
RUN_DIR=$(cd "$RUN_DIR" && pwd -P)
export SSHFSM_TEST_SCRIPT_RUN="$$-$RANDOM"
RUN_MARKER="SSHFSM_TEST_SCRIPT_RUN=$SSHFSM_TEST_SCRIPT_RUN"
before_sshfsm_mounts=$(sshfsm_mounts)
before_fuse_conns=$(fuse_conns | tr '\n' ' ')

remove_run_dir() {
	# Never delete through a mount.
	if [ -z "$(mounts_below "$RUN_DIR")" ]; then
		rm -rf "$RUN_DIR"
	else
		echo "warning: $RUN_DIR kept: something is still mounted below it" >&2
	fi
}
trap remove_run_dir EXIT

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

# guard SECONDS STOPFILE: unless STOPFILE appears first, after SECONDS aborts
# the FUSE connections the run made, so that nothing waits on them forever.
guard() {
	local i
	for ((i = 0; i < $1; i += 5)); do
		sleep 5
		[ -e "$2" ] && return 0
	done
	echo "guard: the tests still run after $TEST_GUARD; aborting the FUSE connections they made" >&2
	# shellcheck disable=SC2046,SC2086 # lists of numbers
	abort_fuse_conns $(new_fuse_conns "$RUN_DIR" $before_fuse_conns)
}

# seconds DURATION converts 90s, 20m or 1h to seconds.
seconds() {
	case $1 in
	*h) echo $((${1%h} * 3600)) ;;
	*m) echo $((${1%m} * 60)) ;;
	*s) echo "${1%s}" ;;
	*) echo "$1" ;;
	esac
}

run_tests() {
	local stop=$RUN_DIR/.tests-ended rc=0 guard_pid
	guard "$(seconds "$TEST_GUARD")" "$stop" &
	guard_pid=$!
	TMPDIR=$RUN_DIR go test -race -count=1 -timeout "$TEST_TIMEOUT" "${TEST_PKGS[@]}" || rc=$?
	touch "$stop"
	wait "$guard_pid" 2>/dev/null || true
	return $rc
}

# check_leftovers reports, then removes, what the tests left behind.
check_leftovers() {
	local bad=0 m fstype pid cmd
	while read -r m fstype; do
		[ -n "$m" ] || continue
		echo "left mounted: $m ($fstype)" >&2
		bad=1
		fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done < <(mounts_below "$RUN_DIR")
	for m in $(sshfsm_mounts); do
		grep -qxF "$m" <<<"$before_sshfsm_mounts" && continue
		[[ $m == "$RUN_DIR/"* ]] && continue
		# Outside CI, another program of the user may have mounted it.
		if [ -n "${CI:-}" ]; then
			echo "left mounted: $m (fuse.sshfsm)" >&2
			bad=1
		else
			echo "warning: new fuse.sshfsm mount during the tests: $m" >&2
		fi
	done
	# A connection outlives its mount only while a daemon or a waiting
	# process still holds it; once every test process has ended, give the
	# kernel a moment to release the rest, then abort what is left: a
	# process stuck on a connection never ends by itself.
	local left
	for _ in $(seq 1 30); do
		# shellcheck disable=SC2086 # a list of numbers
		left=$(new_fuse_conns "$RUN_DIR" $before_fuse_conns)
		[ -z "$left" ] && break
		sleep 0.5
	done
	if [ -n "$left" ]; then
		echo "left behind: FUSE connections $left" >&2
		# shellcheck disable=SC2086 # a list of numbers
		abort_fuse_conns $left
		bad=1
	fi
	local pids=()
	while read -r pid cmd; do
		[ -n "$pid" ] || continue
		echo "left running: pid $pid: $cmd" >&2
		pids+=("$pid")
		bad=1
	done < <(run_procs "$RUN_MARKER" "$RUN_DIR")
	[ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
	return $bad
}

step "gofmt" check_gofmt
step "go vet" go vet ./...
step "staticcheck" go run "$STATICCHECK" ./...
step "go test -race" run_tests
# Each fuzz target briefly, bounded by inputs rather than by the clock;
# make fuzz with SSHFSM_FUZZTIME=10m is the long run.
step "fuzz (${SSHFSM_FUZZTIME:=500x} inputs per target)" env SSHFSM_FUZZTIME="$SSHFSM_FUZZTIME" TMPDIR="$RUN_DIR" bash scripts/fuzz.sh
step "no leftover mounts or processes" check_leftovers

echo
echo "summary:"
printf '  %s\n' "${results[@]}"
if [ $failed -ne 0 ]; then
	echo "FAILED" >&2
	exit 1
fi
echo "all checks passed"
