#!/usr/bin/env bash
# The sshfsm demo: starts two throwaway ssh servers on 127.0.0.2 and
# 127.0.0.3 with keys of their own, fills them with sample files and mounts
# them at ./demo-mnt. Installs its own Debian dependencies; never touches
# ~/.ssh. Running it again starts afresh.
#
#   scripts/demo.sh        start (or restart) the demo
#   scripts/demo.sh stop   unmount ./demo-mnt, stop the servers, remove their files
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

REPO=$PWD
STATE=${SSHFSM_DEMO_STATE:-${TMPDIR:-/tmp}/sshfsm-demo-$(id -u)}
MNT=$REPO/demo-mnt

# is_mounted PATH: whether PATH is a mount point (mountinfo escapes blanks).
is_mounted() {
	local esc=${1// /\\040}
	esc=${esc//$'\t'/\\011}
	awk -v m="$esc" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

demo_unmount() {
	local i
	for i in 1 2 3 4 5; do
		is_mounted "$MNT" || return 0
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null ||
			{ [ "$(id -u)" -eq 0 ] && umount -l "$MNT"; } || true
	done
	is_mounted "$MNT" && die "cannot unmount $MNT; try: fusermount3 -uz $MNT"
	return 0
}

demo_stop() {
	demo_unmount
	if [ -d "$STATE" ]; then
		if command -v go >/dev/null 2>&1; then
			go run ./internal/testenv/cmd/testhosts stop -dir "$STATE"
		else
			"$STATE/testhosts" stop -dir "$STATE"
		fi || die "cannot stop the demo servers of $STATE"
	fi
	# Only the demo's own state directory is removed; the mount point is
	# removed only when empty, so nothing is ever deleted through a mount.
	rm -rf "$STATE"
	[ -d "$MNT" ] && rmdir "$MNT" 2>/dev/null || true
}

# fill_host1 DIR: a small project (a git repository when git is there).
fill_host1() {
	local d=$1
	mkdir -p "$d/project/src/util" "$d/project/docs" "$d/data"
	cat >"$d/project/README.md" <<'TXT'
# hello

A tiny project that lives on host1 and is edited through sshfsm.
TXT
	cat >"$d/project/src/main.go" <<'TXT'
package main

import "fmt"

func main() { fmt.Println("hello from host1") }
TXT
	cat >"$d/project/src/util/strings.go" <<'TXT'
package util

// Reverse returns s backwards.
func Reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
TXT
	printf 'build:\n\tgo build ./src\n' >"$d/project/Makefile"
	seq 1 500 | sed 's/^/note line /' >"$d/project/docs/notes.txt"
	head -c 8388608 /dev/urandom >"$d/data/random-8MiB.bin"
	echo "shared.txt as host1 has it" >"$d/shared.txt"
	if command -v git >/dev/null 2>&1; then
		git -C "$d/project" init -q
		git -C "$d/project" add -A
		git -C "$d/project" -c user.name=demo -c user.email=demo@example.invalid \
			commit -q -m "initial commit"
	fi
}

# fill_host2 DIR: some text.
fill_host2() {
	local d=$1 i
	mkdir -p "$d/notes/logs"
	cat >"$d/notes/todo.txt" <<'TXT'
- mount several hosts into one directory
- keep working when a link drops
TXT
	for i in $(seq 1 2000); do
		printf '2025-01-01T00:%02d:%02d host2 request %d served\n' $((i / 60 % 60)) $((i % 60)) "$i"
	done >"$d/notes/logs/app.log"
	echo "shared.txt as host2 has it" >"$d/shared.txt"
}

# mount_demo DIR1 DIR2: one mountpoint showing a union of both hosts'
# directories and, as ./demo-mnt/logs, a graft of a directory of host2.
mount_demo() {
	local d1=$1 d2=$2 err
	mkdir -p "$MNT"
	# The demo's disk cache lives in its state directory, removed on stop.
	if ! err=$(./sshfsm -F "$STATE/ssh_config" -o cache_dir="$STATE/cache" "host1:$d1" "host2:$d2" "logs=host2:$d2/notes/logs" "$MNT" 2>&1); then
		die "mounting failed: $err"
	fi
	is_mounted "$MNT" || die "sshfsm exited without mounting $MNT: $err"
}

demo_start() {
	need_go
	ensure_packages openssh-server openssh-client fuse3 git ca-certificates
	ensure_fuse
	demo_stop

	say "building sshfsm"
	go build -o sshfsm ./cmd/sshfsm || die "cannot build ./cmd/sshfsm"
	mkdir -p "$STATE"
	go build -o "$STATE/testhosts" ./internal/testenv/cmd/testhosts || die "cannot build testhosts"

	say "starting ssh servers on 127.0.0.2 and 127.0.0.3"
	"$STATE/testhosts" start -dir "$STATE" -n 2 >"$STATE/hosts.txt"
	local d1 d2
	d1=$(awk '$1 == "host1" { print $3 }' "$STATE/hosts.txt")
	d2=$(awk '$1 == "host2" { print $3 }' "$STATE/hosts.txt")
	fill_host1 "$d1"
	fill_host2 "$d2"

	say "mounting"
	mount_demo "$d1" "$d2"

	cat <<TXT

Mounted at ./demo-mnt:
  a union of host1:$d1 and host2:$d2
    (a name both hold, such as shared.txt, comes from host1, the first branch)
  and ./demo-mnt/logs, a graft of host2:$d2/notes/logs

Things to try:
  ls -la demo-mnt
  cat demo-mnt/shared.txt
  find demo-mnt | head
  cd demo-mnt/project && git status && git log --oneline; cd -
  echo hello > demo-mnt/new.txt && cat $d1/new.txt
  time cat demo-mnt/data/random-8MiB.bin > /dev/null
  ls demo-mnt/logs && tail -3 demo-mnt/logs/app.log
  ./sshfsm status demo-mnt             # hosts, requests, cache hits
  ssh -F $STATE/ssh_config host1        # a shell on a demo server

The servers' files:  $STATE
Stop the demo:       scripts/demo.sh stop   (or: make demo-stop)
TXT
}

case ${1:-start} in
start) demo_start ;;
stop)
	demo_stop
	echo "demo stopped"
	;;
*) die "usage: $0 [start|stop]" ;;
esac
