// Command floor is the canned-answer DNS server of make bench-dns: every
// query gets the same one A record, built with miekg/dns the ordinary way
// (unpack, SetReply, pack). It serves with the same sockets as
// partition-dns (SO_REUSEPORT, one UDP socket per core), so the ratio of
// the two throughputs measures partition-dns's own work.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/server"
	"github.com/tpkit-dev/tpkit/pkg/ops"
)

// cannedAnswer is the one record every query gets.
var cannedAnswer = net.ParseIP("10.0.0.1").To4()

// handler answers every query with cannedAnswer, for the name asked.
func handler() dns.Handler {
	return dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		if len(r.Question) == 1 {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: cannedAnswer}}
		}
		_ = w.WriteMsg(m)
	})
}

func main() {
	listen := flag.String("listen", "127.0.0.1:25400", "DNS address (UDP and TCP).")
	sockets := flag.Int("udp-sockets", runtime.GOMAXPROCS(0), "UDP sockets sharing the port.")
	flag.Parse()
	h := handler()
	l, err := server.Listen(*listen, *sockets)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := ops.SignalContext(context.Background())
	defer cancel()
	if err := server.Serve(ctx, l, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
