package e2e

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// helperEnv makes the test binary act as a small reader process: it catches
// SIGINT (so an interrupted system call returns EINTR instead of the process
// dying), reads the file named by the variable once with raw system calls and
// prints what each call returned.
const helperEnv = "SSHFSM_E2E_READ_HELPER"

// helperMain runs the helper and reports whether it did.
func helperMain() bool {
	path := os.Getenv(helperEnv)
	if path == "" {
		return false
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT)
	fmt.Println("ready")
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		fmt.Printf("open: %s\n", errnoName(err))
		return true
	}
	buf := make([]byte, 1<<20)
	n, err := syscall.Read(fd, buf)
	if err != nil {
		fmt.Printf("read: %s\n", errnoName(err))
	} else {
		fmt.Printf("read: %d bytes\n", n)
	}
	syscall.Close(fd)
	return true
}

func errnoName(err error) string {
	if e, ok := err.(syscall.Errno); ok {
		switch e {
		case syscall.EINTR:
			return "EINTR"
		case syscall.EIO:
			return "EIO"
		case syscall.ETIMEDOUT:
			return "ETIMEDOUT"
		}
		return fmt.Sprintf("errno %d (%v)", int(e), e)
	}
	return err.Error()
}
