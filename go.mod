module sshfsm

go 1.26.8

require (
	github.com/hanwen/go-fuse/v2 v2.12.1 // indirect
	github.com/kr/fs v0.1.0 // indirect
	github.com/pkg/sftp v1.13.12 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
