package config

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyPath is the path of a key in a decoded document: table keys, and
// array elements as index elements (see idx).
type keyPath []string

// idx is the path element of the array element i; the prefix cannot occur
// in a TOML key that names anything the file knows.
func idx(i int) string { return "\x01" + strconv.Itoa(i) }

func (p keyPath) child(k string) keyPath {
	return append(append(keyPath{}, p...), k)
}

func (p keyPath) id() string { return strings.Join(p, "\x00") }

// String shows the path as messages name it: branch[2].hosts, with array
// elements counted from 1 as people count [[branch]] tables.
func (p keyPath) String() string {
	var b strings.Builder
	for _, k := range p {
		if i, ok := strings.CutPrefix(k, "\x01"); ok {
			n, _ := strconv.Atoi(i)
			b.WriteString("[" + strconv.Itoa(n+1) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if bareKey(k) {
			b.WriteString(k)
		} else {
			b.WriteString(strconv.Quote(k))
		}
	}
	return b.String()
}

func bareKey(k string) bool {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return k != ""
}

// keyLines finds the line of every key, table header and array element of
// a document that has already decoded without error. go-toml's decoder
// reports positions of syntax errors only; its parser gives the positions
// that messages about meaning need.
func keyLines(doc []byte) map[string]int {
	x := lineIndex{lines: map[string]int{}, tables: map[string]int{}}
	x.p.Reset(doc)
	var cur keyPath
	for x.p.NextExpression() {
		n := x.p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			cur = x.header(n)
		case unstable.KeyValue:
			x.keyValue(cur, n)
		}
	}
	return x.lines
}

type lineIndex struct {
	p      unstable.Parser
	lines  map[string]int // keyPath.id → line
	tables map[string]int // arrays of tables ([[x]]) → elements so far
}

// header records a [table] or [[array]] header and returns its path.
func (x *lineIndex) header(n *unstable.Node) keyPath {
	var path keyPath
	var last *unstable.Node
	it := n.Key()
	for it.Next() {
		if k, ok := x.tables[path.id()]; ok && len(path) > 0 {
			path = path.child(idx(k - 1)) // [[a.b]] extends the last [[a]]
		}
		last = it.Node()
		path = path.child(string(last.Data))
		x.record(path, last)
	}
	if n.Kind == unstable.ArrayTable {
		k := x.tables[path.id()]
		x.tables[path.id()] = k + 1
		path = path.child(idx(k))
		x.record(path, last)
	}
	return path
}

func (x *lineIndex) keyValue(cur keyPath, n *unstable.Node) {
	path := cur
	it := n.Key()
	var last *unstable.Node
	for it.Next() {
		last = it.Node()
		path = path.child(string(last.Data))
		x.record(path, last)
	}
	x.value(path, n.Value(), last)
}

// value records what an inline table or array holds; at is the node whose
// line stands for elements without a position of their own.
func (x *lineIndex) value(path keyPath, v, at *unstable.Node) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			x.keyValue(path, it.Node())
		}
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			el := it.Node()
			p := path.child(idx(i))
			if !x.record(p, el) {
				x.record(p, at)
			}
			x.value(p, el, at)
		}
	}
}

// record notes n's line for path unless path has one; it reports whether
// n had a position.
func (x *lineIndex) record(path keyPath, n *unstable.Node) bool {
	if n == nil || n.Raw.Length == 0 {
		return false
	}
	if _, ok := x.lines[path.id()]; !ok {
		x.lines[path.id()] = x.p.Shape(n.Raw).Start.Line
	}
	return true
}
