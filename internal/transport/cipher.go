package transport

import (
	"os"
	"strings"
)

// gcmCiphers are put first when the CPU has AES instructions. Measured on
// loopback (OpenSSH 9.2, 2 cores, 256 MiB read, 4 reads in flight, MB/s,
// conns=1/2): ssh's default order 242–327/303–328, chacha20-poly1305
// 140–171/133–150, aes128-gcm 402–424/371–403.
var gcmCiphers = []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com"}

// preferredCiphers returns the cipher list to prefer, nil when ssh's own
// order is best.
func preferredCiphers() []string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "flags") {
			for _, f := range strings.Fields(line) {
				if f == "aes" {
					return gcmCiphers
				}
			}
			return nil
		}
	}
	return nil
}

// cipherList puts prefer in front of ssh's default list, keeping only
// ciphers that ssh supports. Spelled out rather than "^list" so that any
// ssh understands it. "" when nothing would change.
func cipherList(prefer []string, def string) string {
	if len(prefer) == 0 || def == "" {
		return ""
	}
	all := strings.Split(def, ",")
	var head, tail []string
	for _, p := range prefer {
		for _, c := range all {
			if c == p {
				head = append(head, c)
			}
		}
	}
	for _, c := range all {
		if !contains(head, c) {
			tail = append(tail, c)
		}
	}
	if len(head) == 0 || strings.HasPrefix(def, strings.Join(head, ",")) {
		return ""
	}
	return strings.Join(append(head, tail...), ",")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
