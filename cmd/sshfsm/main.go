// Command sshfsm mounts a remote directory over SSH (SFTP), as a drop-in for
// sshfs: same options and habits, faster, and never hanging.
package main

import "os"

func main() {
	os.Exit(int(run(os.Args[1:])))
}
