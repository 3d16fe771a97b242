package main

import "sshfsm/internal/termtext"

// printable returns s with every byte that could act on a terminal
// escaped (termtext.Printable). Everything a server names (paths, error
// text, its resolved directories) goes through it before reaching the
// user's terminal.
func printable(s string) string { return termtext.Printable(s) }
