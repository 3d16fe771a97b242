package mountinfo

import "testing"

func TestParse(t *testing.T) {
	cases := []struct {
		line string
		want Mount
		ok   bool
	}{
		{`36 35 98:0 / /mnt/my\040dir rw,nosuid shared:1 - fuse.sshfsm h:/a\134b rw,user_id=0`,
			Mount{Point: "/mnt/my dir", Dev: "98:0", Options: "rw,nosuid", FSType: "fuse.sshfsm", Source: `h:/a\b`, Super: "rw,user_id=0"}, true},
		{`36 35 98:0 / /x ro - ext4 /dev/vda`, Mount{Point: "/x", Dev: "98:0", Options: "ro", FSType: "ext4", Source: "/dev/vda"}, true},
		{`36 35 98:0 / /x ro ext4 /dev/vda`, Mount{}, false},
		{``, Mount{}, false},
	}
	for _, c := range cases {
		got, ok := parse(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("parse(%q) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

func TestAllSeesRoot(t *testing.T) {
	ms, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := At("/"); !ok || len(ms) == 0 {
		t.Errorf("no mount at / among %d mounts", len(ms))
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/plain`:         "/mnt/plain",
		`/mnt/with\040space`: "/mnt/with space",
		`/mnt/tab\011x`:      "/mnt/tab\tx",
		`/mnt/back\134sl`:    `/mnt/back\sl`,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Unescape(`/mnt/a\040b\134c\011`); got != "/mnt/a b\\c\t" {
		t.Errorf("unescape = %q", got)
	}
	if got := Unescape(`/x\04`); got != `/x\04` {
		t.Errorf("short escape = %q", got)
	}
	if m, ok := At("/proc"); !ok || m.FSType != "proc" {
		t.Errorf("At(/proc) = %+v, %v", m, ok)
	}
	if _, ok := At("/proc/self"); ok {
		t.Error("At(/proc/self) = true")
	}
}
