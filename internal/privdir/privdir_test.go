package privdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nobody owns the directories planted by "another user"; chown needs root.
const nobody = 65534

func mkdir(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

func chownNobody(t *testing.T, path string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	if err := os.Lchown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

func TestResolveCreatesPrivate(t *testing.T) {
	base := t.TempDir()
	want := filepath.Join(base, "a", "b", "cache")
	got, err := Resolve(want, NoOthersWrite)
	if err != nil || got != want {
		t.Fatalf("Resolve(%s) = %s, %v", want, got, err)
	}
	for _, d := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), want} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a directory of mode 0700", d, fi.Mode(), err)
		}
	}
	// A link to a good directory is followed, and the caller gets the
	// directory itself.
	link := filepath.Join(base, "link")
	if err := os.Symlink(want, link); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve(link, NoOthersWrite); err != nil || got != want {
		t.Errorf("Resolve(link) = %s, %v; want %s", got, err, want)
	}
	// A directory others may read but not write is a fine cache.
	shared := mkdir(t, filepath.Join(base, "shared"), 0o755)
	if _, err := Resolve(shared, NoOthersWrite); err != nil {
		t.Errorf("0755 directory: %v", err)
	}
}

func TestResolveRefuses(t *testing.T) {
	base := t.TempDir()
	cases := map[string]string{}
	open := mkdir(t, filepath.Join(base, "open"), 0o777)
	cases[open] = "others may change it; chmod go-w " + open
	group := mkdir(t, filepath.Join(base, "group"), 0o770)
	cases[group] = "others may change it"
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases[file] = "is not a directory"
	loose := mkdir(t, filepath.Join(base, "loose"), 0o777)
	cases[mkdir(t, filepath.Join(loose, "cache"), 0o700)] = "others could replace what it holds"
	cases[filepath.Join(loose, "missing")] = "others could replace what it holds"
	if os.Getuid() == 0 {
		theirs := mkdir(t, filepath.Join(base, "theirs"), 0o700)
		chownNobody(t, theirs)
		cases[theirs] = "is owned by uid 65534, not by you"
		// A parent of someone else's could rename our directory away
		// and put theirs in its place.
		parent := mkdir(t, filepath.Join(base, "parent"), 0o755)
		mine := mkdir(t, filepath.Join(parent, "cache"), 0o700)
		chownNobody(t, parent)
		cases[mine] = "is owned by uid 65534, neither you"
	}
	for dir, want := range cases {
		if got, err := Resolve(dir, NoOthersWrite); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrUnsafe) {
			t.Errorf("Resolve(%s) = %q, %v; want an ErrUnsafe saying %q", dir, got, err, want)
		}
	}
	// A directory that cannot be made is an error, not a refusal.
	if _, err := Resolve(filepath.Join(file, "cache"), NoOthersWrite); err == nil || errors.Is(err, ErrUnsafe) {
		t.Errorf("below a file: %v; want an error other than ErrUnsafe", err)
	}
	// Sticky like /tmp: only an entry's owner may remove or rename it.
	sticky := mkdir(t, filepath.Join(base, "sticky"), 0o777)
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(filepath.Join(sticky, "cache"), NoOthersWrite); err != nil {
		t.Errorf("a private directory in a sticky one: %v", err)
	}
}

func TestMakePrivate(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	if err := Make(dir, Private); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, Private); err != nil {
		t.Errorf("after Make: %v", err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := Make(dir, Private); err == nil || !strings.Contains(err.Error(), "not private; chmod 700") {
		t.Errorf("a 0750 directory: %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := Check(link, Private); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a link: %v", err)
	}
}

// TestResolveChecksLinksOnTheWay: a link is only as safe as the directory
// holding it and its owner. One that another user put, or could put, on
// the way to a good directory would choose which directory the caller
// uses: refused, though the directory it leads to passes every check.
func TestResolveChecksLinksOnTheWay(t *testing.T) {
	base := t.TempDir()
	good := mkdir(t, filepath.Join(base, "good"), 0o700)
	link := func(dir, name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loose := mkdir(t, filepath.Join(base, "loose"), 0o777)
	cases := map[string]string{
		link(loose, "cache", good):                     "others could replace what it holds",
		filepath.Join(link(loose, "up", base), "good"): "others could replace what it holds",
	}
	if os.Getuid() == 0 {
		// A sticky directory keeps others from replacing our links, not
		// from planting theirs.
		sticky := mkdir(t, filepath.Join(base, "sticky"), 0o777)
		if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		planted := link(sticky, "cache", good)
		chownNobody(t, planted)
		cases[planted] = "is a link of uid 65534"
		// Another user's home, named by HOME or XDG_CACHE_HOME.
		home := mkdir(t, filepath.Join(base, "home"), 0o755)
		chownNobody(t, home)
		cases[filepath.Join(link(home, ".cache", base), "good")] = "is owned by uid 65534, neither you"
	}
	for dir, want := range cases {
		if got, err := Resolve(dir, NoOthersWrite); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrUnsafe) {
			t.Errorf("Resolve(%s) = %q, %v; want an ErrUnsafe saying %q", dir, got, err, want)
		}
	}
	// Our own link in a sticky directory, like /tmp, is fine.
	if os.Getuid() == 0 {
		mine := link(filepath.Join(base, "sticky"), "mine", good)
		if got, err := Resolve(mine, NoOthersWrite); err != nil || got != good {
			t.Errorf("Resolve(%s) = %q, %v; want %s", mine, got, err, good)
		}
	}
}

// TestResolveRefusalCreatesNothing: a directory is only made below one
// that passed the checks, so that a refused path leaves nothing behind and
// no link another user could swap in redirects what is made.
func TestResolveRefusalCreatesNothing(t *testing.T) {
	base := t.TempDir()
	loose := mkdir(t, filepath.Join(base, "loose"), 0o777)
	elsewhere := mkdir(t, filepath.Join(base, "elsewhere"), 0o700)
	if err := os.Symlink(elsewhere, filepath.Join(loose, "link")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(loose, "sub", "cache"), filepath.Join(loose, "link", "cache")} {
		if _, err := Resolve(dir, NoOthersWrite); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Resolve(%s): %v; want ErrUnsafe", dir, err)
		}
	}
	for _, d := range []string{filepath.Join(loose, "sub"), filepath.Join(elsewhere, "cache")} {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s after a refusal: %v; want it never made", d, err)
		}
	}
}

// TestCheckHolder: a directory to make private ones in (a TMPDIR) must
// keep others from renaming what it holds: it is the user's or root's,
// and open to others' writes only when sticky.
func TestCheckHolder(t *testing.T) {
	base := t.TempDir()
	if err := CheckHolder(base); err != nil {
		t.Errorf("CheckHolder(%s), a private directory: %v", base, err)
	}
	sticky := mkdir(t, filepath.Join(base, "sticky"), 0o777)
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := CheckHolder(sticky); err != nil {
		t.Errorf("CheckHolder(%s), sticky like /tmp: %v", sticky, err)
	}
	loose := mkdir(t, filepath.Join(base, "loose"), 0o777)
	for _, dir := range []string{loose, mkdir(t, filepath.Join(loose, "below"), 0o700)} {
		if err := CheckHolder(dir); !errors.Is(err, ErrUnsafe) {
			t.Errorf("CheckHolder(%s): %v; want ErrUnsafe", dir, err)
		}
	}
}
