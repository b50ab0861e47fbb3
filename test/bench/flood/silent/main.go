// Command silent is an upstream DNS server that never answers: it reads
// every UDP datagram sent to -addr and drops it, so that the queries a DNS
// server forwards to it wait until they time out, as behind a dead
// upstream (make bench-flood, docs/benchmarks.md "Forward flood").
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "UDP address to read from")
	flag.Parse()
	pc, err := net.ListenPacket("udp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "silent:", err)
		os.Exit(1)
	}
	fmt.Println("READY", pc.LocalAddr())
	buf := make([]byte, 65536)
	for {
		if _, _, err := pc.ReadFrom(buf); err != nil {
			fmt.Fprintln(os.Stderr, "silent:", err)
			os.Exit(1)
		}
	}
}
