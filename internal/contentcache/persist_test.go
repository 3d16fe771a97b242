package contentcache

import (
	"bytes"
	"context"
	"io"
	"os"
	"reflect"
	"testing"
)

func TestPersistAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	size := int64(5*bs + 100)
	src := source("persist", size)
	k, part := testKey("p", size), testKey("partial", size)

	c := openCache(t, dir, nil)
	e := entry(t, c, k)
	fillAll(t, e, src)
	if _, ok := e.Verified(); !ok {
		t.Fatal("a complete entry filled in this process is not Verified")
	}
	p := entry(t, c, part)
	fillBlocks(t, p, src, 1, 4)
	waitJobs(t, c)
	e.Release()
	p.Release()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c = openCache(t, dir, nil)
	e = entry(t, c, k)
	if !e.Complete() || len(readAll(t, e, src)) != 0 {
		t.Fatal("complete entry not complete after reopening")
	}
	f, ok := e.Verified()
	if !ok {
		t.Fatal("complete entry verified during this boot is not Verified after reopening")
	}
	got, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("Verified file: %d bytes, %v; want the content", len(got), err)
	}
	if sum, ok := e.Digest(); !ok || sum != sha256Sum(src) {
		t.Error("digest not kept across reopening")
	}
	p = entry(t, c, part)
	if m := readAll(t, p, src); !reflect.DeepEqual(m, []int64{0, 2, 3, 5}) {
		t.Errorf("partial entry misses blocks %v, want [0 2 3 5]", m)
	}
	if _, ok := p.Verified(); ok {
		t.Error("a partial entry is Verified")
	}
}

// An entry made complete by fills alone (nobody asked Verified while
// this process had it) is Verified at once by the next process of the
// same boot: its blocks were written during this boot. A later mount can
// then pass it through without reading it again.
func TestVerifiedAfterFillsAlone(t *testing.T) {
	dir := t.TempDir()
	size := int64(5*bs + 100)
	src := source("fills alone", size)
	k := testKey("f", size)
	c := openCache(t, dir, nil)
	e := entry(t, c, k)
	fillBlocks(t, e, src, 4, 5)
	fillBlocks(t, e, src, 0, 1, 2, 3)
	e.Release()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openCache(t, dir, nil)
	e = entry(t, c, k)
	f, ok := e.Verified()
	if !ok {
		t.Fatal("an entry completed by fills during this boot is not Verified by the next process")
	}
	got, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("Verified file: %d bytes, %v; want the content", len(got), err)
	}
}

func TestCorruption(t *testing.T) {
	size := int64(5*bs + 100)
	src := source("corrupt", size)
	other := source("other", size)
	all := []int64{0, 1, 2, 3, 4, 5}
	cases := []struct {
		name   string
		mutate func(t *testing.T, d, r string)
		miss   []int64 // blocks that must miss afterwards
	}{
		{"flip a data byte", flip(0, 2*bs+17), []int64{2}},
		{"flip the last data byte", flip(0, size-1), []int64{5}},
		{"flip a slot byte", flip(1, slotsOff+slotLen+2), []int64{1}},
		{"flip a slot's checksum", flip(1, slotsOff+3*slotLen+13), []int64{3}},
		{"flip the header", flip(1, 20), all},
		{"flip the digest record", flip(1, digestOff+9), nil},
		{"zero the marker", zero(1, markerOff, recordLen), nil},
		{"truncate the data", truncate(0, 2*bs+bs/2), []int64{2, 3, 4, 5}},
		{"truncate the data to nothing", truncate(0, 0), all},
		{"truncate the record in the slots", truncate(1, slotsOff+2*slotLen+5), []int64{2, 3, 4, 5}},
		{"truncate the record in the header", truncate(1, 10), all},
		{"delete the data", remove(0), all},
		{"delete the record", remove(1), all},
		{"replace the data with other content", func(t *testing.T, d, r string) {
			if err := os.WriteFile(d, other, 0o600); err != nil {
				t.Fatal(err)
			}
		}, all},
		{"zero a data block", zero(0, 4*bs, bs), []int64{4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			k := testKey("c", size)
			c := openCache(t, dir, nil)
			e := entry(t, c, k)
			fillAll(t, e, src)
			waitJobs(t, c)
			e.Release()
			_ = c.Close()
			tc.mutate(t, dataFile(c, k), recFile(c, k))

			c = openCache(t, dir, nil)
			e = entry(t, c, k)
			if got := readAll(t, e, src); !reflect.DeepEqual(got, tc.miss) {
				t.Errorf("missed blocks %v, want %v", got, tc.miss)
			}
			if _, ok := e.Verified(); ok != (len(tc.miss) == 0) {
				t.Errorf("Verified = %v with blocks %v missing", ok, tc.miss)
			}
			if err := e.VerifyAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			// Fetching again what is missing repairs it. A block whose
			// slot is lost in shared content starts the entry afresh, so
			// the first round may not be the last.
			for range 2 {
				for _, r := range e.Missing(0, size) {
					if err := e.Fill(src[r.Off:r.Off+r.Len], r.Off); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := readAll(t, e, src); len(got) != 0 {
				t.Fatalf("blocks %v still missing after refilling", got)
			}
			if _, ok := e.Verified(); !ok {
				t.Error("not Verified after repair")
			}
		})
	}
}

// Mutations of file 0 (data) or 1 (record).
func pick(i int, d, r string) string { return [2]string{d, r}[i] }

func flip(i int, off int64) func(*testing.T, string, string) {
	return func(t *testing.T, d, r string) {
		f, err := os.OpenFile(pick(i, d, r), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, 1)
		if _, err := f.ReadAt(b, off); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x40
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
}

func zero(i int, off, n int64) func(*testing.T, string, string) {
	return func(t *testing.T, d, r string) {
		f, err := os.OpenFile(pick(i, d, r), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(make([]byte, n), off); err != nil {
			t.Fatal(err)
		}
	}
}

func truncate(i int, size int64) func(*testing.T, string, string) {
	return func(t *testing.T, d, r string) {
		if err := os.Truncate(pick(i, d, r), size); err != nil {
			t.Fatal(err)
		}
	}
}

func remove(i int) func(*testing.T, string, string) {
	return func(t *testing.T, d, r string) {
		if err := os.Remove(pick(i, d, r)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBootID(t *testing.T) {
	dir := t.TempDir()
	size := int64(3*bs + 5)
	src := source("boot", size)
	k := testKey("boot", size)
	reopen := func(boot [16]byte) *Entry {
		c := openCache(t, dir, func(o *Options) { o.boot = boot })
		e := entry(t, c, k)
		t.Cleanup(func() { e.Release(); _ = c.Close() })
		return e
	}
	e := reopen(bootA)
	fillAll(t, e, src)
	if _, ok := e.Verified(); !ok {
		t.Fatal("not Verified right after filling")
	}
	// The hasher of this "boot" must be done before the next one starts.
	waitJobs(t, e.s.c)

	e = reopen(bootA)
	if _, ok := e.Verified(); !ok {
		t.Fatal("not Verified in a later process of the same boot")
	}

	e = reopen(bootB)
	if !e.Complete() {
		t.Fatal("not complete after a reboot")
	}
	if _, ok := e.Verified(); ok {
		t.Fatal("Verified after a reboot without VerifyAll")
	}
	if err := e.VerifyAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	f, ok := e.Verified()
	if !ok {
		t.Fatal("not Verified after VerifyAll")
	}
	got, _ := io.ReadAll(f)
	_ = f.Close()
	if !bytes.Equal(got, src) {
		t.Fatal("Verified file holds other bytes than the content")
	}

	e = reopen(bootB)
	if _, ok := e.Verified(); !ok {
		t.Fatal("VerifyAll's result not kept for the rest of the boot")
	}

	// Data lost in a "power cut": after the next boot VerifyAll finds it.
	c := e.s.c
	zero(0, bs, 10)(t, dataFile(c, k), recFile(c, k))
	e = reopen(bootA)
	if _, ok := e.Verified(); ok {
		t.Fatal("Verified after a reboot without VerifyAll")
	}
	if err := e.VerifyAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Verified(); ok || e.Complete() {
		t.Fatal("a damaged block survived VerifyAll")
	}
	if m := e.Missing(0, size); !reflect.DeepEqual(m, []Range{{bs, bs}}) {
		t.Fatalf("Missing = %v after VerifyAll dropped block 1", m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.VerifyAll(ctx); err == nil {
		t.Error("VerifyAll with a cancelled context succeeded")
	}
}
