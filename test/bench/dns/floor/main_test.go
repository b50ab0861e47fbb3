package main

import (
	"context"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/server"
)

// The floor answers any name with the canned A record, over UDP and TCP,
// through partition-dns's own listeners: what make bench-dns compares with.
func TestFloorAnswers(t *testing.T) {
	l, err := server.Listen("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = server.Serve(ctx, l, handler()) }()
	defer func() { cancel(); <-done }()
	for _, network := range []string{"udp", "tcp"} {
		m := new(dns.Msg)
		m.SetQuestion("anything.example.", dns.TypeA)
		r, _, err := (&dns.Client{Net: network}).Exchange(m, l.Addr())
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != cannedAnswer.String() || r.Answer[0].Header().Name != "anything.example." {
			t.Fatalf("%s: answer %v", network, r.Answer)
		}
	}
}
