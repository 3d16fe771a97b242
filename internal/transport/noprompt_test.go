package transport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The first channel may prompt unless NoPrompt says otherwise.
func TestNoPromptBatchesFirstChannel(t *testing.T) {
	for _, noPrompt := range []bool{false, true} {
		dir := t.TempDir()
		argsFile := filepath.Join(dir, "args")
		script := filepath.Join(dir, "fake-ssh")
		body := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argsFile + "\nexit 255\n"
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := Dial(ctx, Options{Host: "h", SSHCommand: []string{script}, Conns: 1,
			Timeout: 2 * time.Second, NoPrompt: noPrompt, SSHArgs: []string{"-oCiphers=aes128-ctr"}})
		cancel()
		if err == nil {
			t.Fatal("dial through a failing ssh succeeded")
		}
		args, err := os.ReadFile(argsFile)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(args), "-oBatchMode=yes"); got != noPrompt {
			t.Errorf("NoPrompt=%v: BatchMode in first channel's argv = %v:\n%s", noPrompt, got, args)
		}
	}
}
