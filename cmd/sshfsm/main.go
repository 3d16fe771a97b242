// Command sshfsm mounts a remote directory over SSH (SFTP), as a drop-in for
// sshfs: same options and habits, faster, and never hanging.
package main

import "os"

func main() {
	if code, ok := runAskpass(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(int(run(os.Args[1:])))
}
