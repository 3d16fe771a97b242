// Command testhosts starts and stops throwaway sshd hosts on loopback that
// outlive it, for the demo and for manual testing.
//
//	testhosts start -dir STATE [-n 2] [-alias host]
//	testhosts stop -dir STATE
//
// start stops hosts a previous start left in STATE, then starts n hosts on
// 127.0.0.2, 127.0.0.3, … with aliases host1, host2, … Each host lives in
// STATE/hostN (keys, sshd_config, sshd.pid, and srv/, the directory to
// serve); STATE/ssh_config reaches all of them (ssh -F STATE/ssh_config
// host1). It prints one line per host: alias, address:port, served directory.
// stop kills the hosts' sshd processes with their sessions.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"sshfsm/internal/testenv"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testhosts start|stop -dir STATE [-n N] [-alias PREFIX]")
		os.Exit(2)
	}
	fl := flag.NewFlagSet("testhosts "+os.Args[1], flag.ExitOnError)
	dir := fl.String("dir", "", "state directory (required)")
	n := fl.Int("n", 2, "number of hosts (at most 3: 127.0.0.2 to 127.0.0.4)")
	alias := fl.String("alias", "host", "alias prefix; hosts are PREFIX1, PREFIX2, …")
	_ = fl.Parse(os.Args[2:])
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "testhosts: -dir is required")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "start":
		err = start(*dir, *n, *alias)
	case "stop":
		err = stop(*dir)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testhosts:", err)
		os.Exit(1)
	}
}

func start(dir string, n int, alias string) error {
	if n < 1 || n > 3 {
		return errors.New("-n must be 1, 2 or 3")
	}
	if err := stop(dir); err != nil {
		return err
	}
	var hosts []*testenv.Host
	for i := 1; i <= n; i++ {
		h, err := testenv.Start(testenv.Options{
			Addr:   fmt.Sprintf("127.0.0.%d", i+1),
			Alias:  fmt.Sprintf("%s%d", alias, i),
			Root:   filepath.Join(dir, fmt.Sprintf("host%d", i)),
			Detach: true,
		})
		if err != nil {
			_ = stop(dir)
			return err
		}
		hosts = append(hosts, h)
	}
	if err := testenv.WriteSSHConfig(filepath.Join(dir, "ssh_config"), hosts...); err != nil {
		_ = stop(dir)
		return err
	}
	for _, h := range hosts {
		fmt.Printf("%s %s:%d %s\n", h.Alias, h.Addr, h.Port, h.Dir)
	}
	return nil
}

func stop(dir string) error {
	hostDirs, _ := filepath.Glob(filepath.Join(dir, "host[0-9]*"))
	var errs []error
	for _, d := range hostDirs {
		errs = append(errs, testenv.KillSSHD(filepath.Join(d, "sshd.pid"), filepath.Join(d, "sshd_config")))
	}
	return errors.Join(errs...)
}
