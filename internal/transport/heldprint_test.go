package transport

import (
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

func TestHeldPrinter(t *testing.T) {
	const refused = "ssh: connect to host h port 22: Connection refused"
	for _, tc := range []struct {
		name   string
		lines  []string
		detail string // "" flushes instead of settling
		want   string
	}{
		{"repeated line dropped", []string{refused}, refused, ""},
		{"earlier lines shown", []string{"Warning: banner", refused}, refused, "Warning: banner\n"},
		{"case and punctuation", []string{"Host key verification failed."}, "host key verification failed", ""},
		{"other detail shows it", []string{"some warning"}, "Permission denied (publickey)", "some warning\n"},
		{"success flushes", []string{"Warning: Permanently added"}, "", "Warning: Permanently added\n"},
		{"server's bytes escaped", []string{"motd \x1b]0;owned\x07"}, "", `motd \x1b]0;owned\a` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out testenv.LogBuffer
			p := &heldPrinter{w: &out}
			for _, l := range tc.lines {
				p.print(l)
			}
			if tc.detail == "" {
				p.flush()
			} else {
				p.settle(tc.detail)
			}
			time.Sleep(holdLine + 100*time.Millisecond) // a late timer must not print again
			if got := out.String(); got != tc.want {
				t.Errorf("printed %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHeldPrinterShowsLineLate: a line ssh writes while it waits at a
// prompt reaches the terminal by itself, holdLine later.
func TestHeldPrinterShowsLineLate(t *testing.T) {
	var out testenv.LogBuffer
	p := &heldPrinter{w: &out}
	p.print("Enter the code sent to your phone")
	if got := out.String(); got != "" {
		t.Fatalf("printed at once: %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for out.String() == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := out.String(); got != "Enter the code sent to your phone\n" {
		t.Errorf("printed %q", got)
	}
}
