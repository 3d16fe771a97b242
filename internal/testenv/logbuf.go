package testenv

import (
	"strings"
	"sync"
)

// LogBuffer collects what a logger writes, safe for the concurrent writes
// of a mount's goroutines and for reading while they go on.
type LogBuffer struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Count returns how often s occurs in what was written.
func (l *LogBuffer) Count(s string) int { return strings.Count(l.String(), s) }
