package fusefs

import (
	"reflect"
	"syscall"
	"testing"
)

func TestKernelFlags(t *testing.T) {
	const always = syscall.MS_NOSUID | syscall.MS_NODEV
	cases := []struct {
		given []string
		ro    bool
		bits  uintptr
		names []string
	}{
		{nil, false, always, []string{"nosuid", "nodev"}},
		{nil, true, always | syscall.MS_RDONLY, []string{"ro", "nosuid", "nodev"}},
		{[]string{"noexec", "noatime"}, false, always | syscall.MS_NOEXEC | syscall.MS_NOATIME,
			[]string{"nosuid", "nodev", "noexec", "noatime"}},
		{[]string{"noexec", "exec"}, false, always, []string{"nosuid", "nodev"}},
		{[]string{"exec", "noexec"}, false, always | syscall.MS_NOEXEC, []string{"nosuid", "nodev", "noexec"}},
		{[]string{"sync", "dirsync", "async"}, false, always | syscall.MS_DIRSYNC, []string{"nosuid", "nodev", "dirsync"}},
		{[]string{"relatime"}, false, always | syscall.MS_RELATIME, []string{"nosuid", "nodev"}},
		{[]string{"strictatime", "nodiratime", "lazytime"}, false,
			always | syscall.MS_STRICTATIME | syscall.MS_NODIRATIME | msLazyTime,
			[]string{"nosuid", "nodev", "nodiratime", "strictatime", "lazytime"}},
	}
	for _, tc := range cases {
		bits, names, err := kernelFlags(tc.given, tc.ro)
		if err != nil || bits != tc.bits || !reflect.DeepEqual(names, tc.names) {
			t.Errorf("kernelFlags(%q, %v) = %#x, %q, %v; want %#x, %q", tc.given, tc.ro, bits, names, err, tc.bits, tc.names)
		}
	}
	for _, bad := range []string{"suid", "dev", "nosymfollow", "remount", ""} {
		if _, _, err := kernelFlags([]string{bad}, false); err == nil {
			t.Errorf("flag %q accepted", bad)
		}
	}
}
