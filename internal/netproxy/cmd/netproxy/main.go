// Command netproxy forwards a loopback TCP port to another with added
// latency and an optional rate cap, to try sshfsm (or sshfs) behind a slow
// link by hand:
//
//	netproxy -listen 127.0.0.1:2222 -target 127.0.0.2:22 -delay 2ms
//
// -delay is one way: 2ms gives a 4 ms round trip. It runs until interrupted.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"sshfsm/internal/netproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	target := flag.String("target", "", "address to forward to (loopback)")
	delay := flag.Duration("delay", 0, "one-way delay added in each direction")
	rate := flag.Int64("rate", 0, "bytes per second in each direction (0: no cap)")
	flag.Parse()
	if *target == "" {
		fmt.Fprintln(os.Stderr, "netproxy: -target is required")
		os.Exit(2)
	}
	p, err := netproxy.Listen(*listen, *target, netproxy.Symmetric(*delay, *rate))
	if err != nil {
		fmt.Fprintln(os.Stderr, "netproxy:", err)
		os.Exit(1)
	}
	fmt.Println(p.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	p.Close()
}
