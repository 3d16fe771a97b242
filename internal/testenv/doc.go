// Package testenv provides throwaway OpenSSH hosts on loopback, an
// in-process SFTP server and FUSE mount hygiene for tests, the benchmark and
// the demo.
package testenv
