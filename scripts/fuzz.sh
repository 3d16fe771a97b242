#!/usr/bin/env bash
# Runs every Go fuzz target of sshfsm, one at a time, each for
# SSHFSM_FUZZTIME (go test's -fuzztime: "2000x" inputs by default, so that
# the run is bounded by CPU, not by the clock; "10m" for a long run), with
# one worker. SSHFSM_FUZZ narrows the targets to the names matching an
# extended regular expression. A target that fails leaves its input in its
# package's testdata/fuzz/<FuzzName>/, where it becomes a regression test
# once committed; the script fails at the end if any target failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

FUZZTIME=${SSHFSM_FUZZTIME:-2000x}
FILTER=${SSHFSM_FUZZ:-.}

need_go

# targets prints "package-dir FuzzName" for every fuzz target.
targets() {
	grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*\(' cmd internal |
		sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($|\1 \2|' | sort -u
}

failed=()
count=0
while read -r dir name; do
	[[ $name =~ $FILTER ]] || continue
	count=$((count + 1))
	say "$name (./$dir, $FUZZTIME)"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel 1 "./$dir"; then
		failed+=("$name (./$dir)")
	fi
done < <(targets)

if ((count == 0)); then
	die "no fuzz target matches '$FILTER'"
fi
if ((${#failed[@]} > 0)); then
	printf 'FAIL: %s\n' "${failed[@]}" >&2
	exit 1
fi
say "$count fuzz targets passed"
