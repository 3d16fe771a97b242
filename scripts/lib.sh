# Shared helpers of scripts/test.sh and scripts/demo.sh; source, do not run.

# say prints a progress line.
say() { printf '==> %s\n' "$*"; }

# die prints an error and exits 1.
die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# need_go fails clearly when the go command is missing or too old for go.mod.
need_go() {
	if ! command -v go >/dev/null 2>&1; then
		die "the 'go' command is not installed or not on PATH. sshfsm needs Go $(go_wanted) or newer:
       install it from https://go.dev/dl/ (e.g. into /usr/local/go) and add /usr/local/go/bin to PATH."
	fi
}

# go_wanted prints the Go version go.mod asks for.
go_wanted() { awk '$1 == "go" { print $2; exit }' go.mod 2>/dev/null || echo "1.26"; }

# ensure_packages installs the Debian packages given that are not installed
# yet: directly as root, through sudo otherwise. apt-get update runs at most
# once per script run. A machine that serves mounts (openssh-server: the
# tests' and the demo's sshd hosts are this machine) also gets
# inotify-tools, whose inotifywait pushes the changes made on it to the
# mounts (-o watch).
ensure_packages() {
	local missing=() p want=("$@")
	case " $* " in *" openssh-server "*) want+=(inotify-tools) ;; esac
	for p in "${want[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null 2>&1 ||
		die "missing packages: ${missing[*]}; this script installs them only on Debian/Ubuntu (apt-get)"
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 ||
			die "missing packages: ${missing[*]}; run as root or install sudo"
		sudo=(sudo)
	fi
	say "installing ${missing[*]}"
	if [ -z "${SSHFSM_APT_UPDATED:-}" ]; then
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
			die "apt-get update failed"
		export SSHFSM_APT_UPDATED=1
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
		die "apt-get install ${missing[*]} failed"
}

# ensure_fuse fails clearly when FUSE mounts are impossible on this machine.
ensure_fuse() {
	[ -c /dev/fuse ] ||
		die "/dev/fuse is missing: load the fuse module (modprobe fuse) or, in a container, pass --device /dev/fuse"
	command -v fusermount3 >/dev/null 2>&1 || die "fusermount3 not found even after installing fuse3"
	# Ordinary users mount through fusermount3, which opens /dev/fuse with
	# their own permissions. Debian's default is crw-rw-rw-; containers
	# often create it 0600, and the tests of ordinary users' mounts would
	# skip. On a CI machine, restore the default.
	if [ "${CI:-}" = true ] && [ "$(stat -c %a /dev/fuse)" != 666 ] && [ "$(id -u)" = 0 ]; then
		say "CI: /dev/fuse is $(stat -c %a /dev/fuse); setting Debian's default 666 so that ordinary users can mount"
		chmod 666 /dev/fuse
	fi
}

# mounts_below DIR prints "mountpoint fstype" of every mount below DIR.
mounts_below() {
	awk -v d="$1/" '{ for (i = 7; i <= NF; i++) if ($i == "-") { if (index($5, d) == 1) print $5, $(i+1); break } }' /proc/self/mountinfo
}

# sshfsm_mounts prints the mount points of all fuse.sshfsm mounts.
sshfsm_mounts() {
	awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i+1) == "fuse.sshfsm") print $5; break } }' /proc/self/mountinfo
}

# run_procs MARKER DIR prints "pid cmdline" of the sshd, ssh, sftp-server and
# sshfsm processes of one test run: those whose environment holds MARKER
# (NAME=value) or whose command line names a file below DIR (sshd overwrites
# its environment with its process title).
run_procs() {
	local marker=$1 dir=$2 d pid comm cmd
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		[ "$pid" = "$$" ] && continue
		comm=$(cat "$d/comm" 2>/dev/null) || continue
		case $comm in sshd | sshd-session | sshd-auth | ssh | sftp-server | sshfsm) ;; *) continue ;; esac
		[ "$(awk '{ print $3 }' "$d/stat" 2>/dev/null)" = Z ] && continue
		cmd=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) || continue
		if [[ $cmd == *"$dir/"* ]] || tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qxF "$marker"; then
			printf '%s %s\n' "$pid" "$cmd"
		fi
	done
}

# ensure_fusectl mounts the FUSE control file system when root can and it is
# not mounted yet: its abort files are the only way to free a process that
# waits on a FUSE daemon that will never answer.
ensure_fusectl() {
	[ -d /sys/fs/fuse/connections ] || return 0
	mountpoint -q /sys/fs/fuse/connections && return 0
	[ "$(id -u)" = 0 ] || return 0
	mount -t fusectl fusectl /sys/fs/fuse/connections 2>/dev/null || true
}

# fuse_conns prints the numbers of the live FUSE connections, one per line.
fuse_conns() {
	local c
	for c in /sys/fs/fuse/connections/[0-9]*; do
		[ -e "$c" ] && echo "${c##*/}"
	done
	return 0
}

# fuse_conn_mount N prints the mount point of FUSE connection N, if it is
# still mounted (a FUSE mount's device minor is its connection number).
fuse_conn_mount() {
	awk -v dev="0:$1" '$3 == dev { print $5; exit }' /proc/self/mountinfo
}

# new_fuse_conns DIR BEFORE... prints, on one line, every FUSE connection
# that is not among BEFORE and is either mounted below DIR or no longer
# mounted at all (lazily unmounted, its daemon gone or stuck): what a test
# run made and left.
new_fuse_conns() {
	local dir=$1 c m out=()
	shift
	for c in $(fuse_conns); do
		[[ " $* " == *" $c "* ]] && continue
		m=$(fuse_conn_mount "$c")
		if [ -z "$m" ] || [[ $m == "$dir/"* ]]; then
			out+=("$c")
		fi
	done
	echo "${out[*]}"
}

# abort_fuse_conns N...: aborts FUSE connections: every request waiting on
# them fails with ENOTCONN, and the processes that waited go on.
abort_fuse_conns() {
	local c
	for c in "$@"; do
		echo "aborting FUSE connection $c" >&2
		echo 1 >"/sys/fs/fuse/connections/$c/abort" 2>/dev/null || true
	done
}
