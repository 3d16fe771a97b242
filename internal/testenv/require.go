package testenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Two things a test may need are missing on some machines: OpenSSH (sshd,
// sftp-server and the ssh client) for throwaway hosts, and a usable
// /dev/fuse for real mounts. The Require functions skip a test that needs
// one of them, naming the reason, in two cases:
//
//   - under go test -short, the quick tier: it runs the unit tests over the
//     in-process SFTP server and leaves out every host, mount and long run;
//   - where the thing is missing.
//
// Under CI (see InCI) a missing one fails the test instead, so that a runner
// that lost FUSE or sshd cannot pass by skipping everything.

// InCI reports whether the tests run in CI: the CI variable is set (.ci/run
// sets CI=true, as most CI services do) and not "false" or "0".
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// Short reports whether this is a test binary run with -short. It is false
// outside tests (the benchmark and the demo use this package too) and
// before the test flags are parsed.
func Short() bool {
	return testing.Testing() && flag.Parsed() && testing.Short()
}

// SkipShort skips the test under -short; why says what it does that the
// quick tier leaves out, e.g. "a fault run of 2000 operations".
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if Short() {
		t.Skip("-short: skipping " + why)
	}
}

// RequireSSHD skips the test under -short, and where sshd, sftp-server or
// ssh is missing (failing it under CI instead). StartHost, StartHostWith
// and StartHosts call it; a test that calls Start itself calls it first.
func RequireSSHD(t testing.TB) {
	t.Helper()
	SkipShort(t, "a test that starts OpenSSH hosts")
	require(t, "sshd", sshdMissing())
}

// RequireFUSE skips the test under -short, and where FUSE mounts are
// impossible (no usable /dev/fuse or no fusermount3), failing it under CI
// instead. Every test helper that mounts calls it first.
func RequireFUSE(t testing.TB) {
	t.Helper()
	SkipShort(t, "a test that mounts FUSE")
	require(t, "FUSE", fuseMissing())
}

// RequireFUSEDevice skips the test where /dev/fuse cannot be opened
// (failing it under CI instead), but runs it under -short: it is for tests
// that run sshfsm past its check of the device without mounting anything,
// e.g. to see a connection fail.
func RequireFUSEDevice(t testing.TB) {
	t.Helper()
	require(t, "FUSE", fuseDeviceMissing())
}

// require fails (under CI) or skips the test when why is not empty.
func require(t testing.TB, what, why string) {
	t.Helper()
	if why == "" {
		return
	}
	if InCI() {
		t.Fatalf("%s required under CI: %s", what, why)
	}
	t.Skipf("skipping %s test: %s", what, why)
}

// sshdMissing says what of OpenSSH that Start needs is missing here, "" if
// nothing is.
func sshdMissing() string {
	if err := executable(SSHD); err != nil {
		return fmt.Sprintf("%v: install openssh-server (scripts/test.sh does)", err)
	}
	if _, err := findSFTPServer(); err != nil {
		return err.Error()
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		return "ssh not found: install openssh-client"
	}
	return ""
}

// fuseMissing says why FUSE mounts are impossible here, "" if they are
// possible.
func fuseMissing() string {
	if why := fuseDeviceMissing(); why != "" {
		return why
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		return "fusermount3 not found (install fuse3)"
	}
	return ""
}

func fuseDeviceMissing() string {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Sprintf("/dev/fuse is not usable: %v", err)
	}
	f.Close()
	return ""
}

// executable fails unless path is a regular file with an execute bit.
func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return errors.New(path + " is not an executable file")
	}
	return nil
}
