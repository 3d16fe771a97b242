package watch

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"sshfsm/internal/namespace"
)

func chg(p string, k namespace.ChangeKind) namespace.Change {
	return namespace.Change{Path: p, Kind: k}
}

func TestCoalescerMerges(t *testing.T) {
	b := newCoalescer(time.Hour)
	b.add(chg("b/x", namespace.ChangeData), "")
	b.add(chg("a", namespace.ChangeAttr), "")
	b.add(chg("b/x", namespace.ChangeAttr), "")
	b.add(chg("b", namespace.ChangeCreated), "")
	b.add(chg("b", namespace.ChangeRemoved), "")
	b.add(chg("a-b", namespace.ChangeData), "")
	want := []namespace.Change{chg("a", namespace.ChangeAttr), chg("a-b", namespace.ChangeData),
		chg("b", namespace.ChangeRemoved), chg("b/x", namespace.ChangeData)}
	if got := b.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got := b.take(); len(got) != 0 {
		t.Fatalf("taken twice: %+v", got)
	}
}

// A changed tree covers every path below it, those pending and those to
// come.
func TestCoalescerTreeCovers(t *testing.T) {
	b := newCoalescer(time.Hour)
	b.add(chg("g/a/x", namespace.ChangeData), "g")
	b.add(chg("g/ab", namespace.ChangeData), "g")
	b.add(chg("h/a", namespace.ChangeData), "h")
	b.add(namespace.Change{Path: "g/a", Kind: namespace.ChangeTree, Dir: true}, "g")
	b.add(chg("g/a/y", namespace.ChangeCreated), "g")
	b.add(chg("g/a", namespace.ChangeAttr), "g")
	want := []namespace.Change{{Path: "g/a", Kind: namespace.ChangeTree, Dir: true},
		chg("g/ab", namespace.ChangeData), chg("h/a", namespace.ChangeData)}
	if got := b.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// Past maxPending paths, the tree being added to is changed as a whole;
// other trees keep their paths.
func TestCoalescerBound(t *testing.T) {
	b := newCoalescer(time.Hour)
	b.add(chg("other", namespace.ChangeData), "")
	for i := range maxPending + 10 {
		b.add(chg(fmt.Sprintf("g/f%d", i), namespace.ChangeCreated), "g")
	}
	want := []namespace.Change{{Path: "g", Kind: namespace.ChangeTree, Dir: true}, chg("other", namespace.ChangeData)}
	if got := b.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %d changes, first %+v", len(got), got[:min(len(got), 3)])
	}
}

// Batches go out a window after their first change; adding never waits
// for the reader.
func TestCoalescerWindow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newCoalescer(50 * time.Millisecond)
	go b.run(ctx)
	start := time.Now()
	b.add(chg("a", namespace.ChangeData), "")
	b.add(chg("b", namespace.ChangeData), "")
	batch := <-b.out
	if d := time.Since(start); d < 40*time.Millisecond || len(batch) != 2 {
		t.Fatalf("first batch after %v: %+v", d, batch)
	}
	// Nobody reads: adds still return at once.
	added := time.Now()
	for i := range 1000 {
		b.add(chg(fmt.Sprint(i), namespace.ChangeData), "")
	}
	if d := time.Since(added); d > time.Second {
		t.Fatalf("adding waited %v", d)
	}
	time.Sleep(300 * time.Millisecond) // the second batch is taken, waiting for us
	b.add(chg("late", namespace.ChangeData), "")
	batch = <-b.out
	if len(batch) != 1000 {
		t.Fatalf("second batch has %d changes", len(batch))
	}
	if batch = <-b.out; len(batch) != 1 || batch[0].Path != "late" {
		t.Fatalf("third batch %+v", batch)
	}
}
