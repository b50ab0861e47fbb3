package server

import (
	"context"
	"net"
	"testing"
	"time"

	dnsupstream "github.com/tpkit-dev/tpkit/pkg/dns/upstream"

	"github.com/miekg/dns"
)

func testContext(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// discardWriter is a dns.ResponseWriter that counts writes. Its addresses
// are made once, so that a benchmark counts the handler's allocations
// only, as with the real writers, whose addresses are the socket's.
type discardWriter struct {
	n             int
	local, remote net.Addr
}

func newDiscardWriter() *discardWriter {
	return &discardWriter{
		local:  &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53},
		remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353},
	}
}

func (w *discardWriter) LocalAddr() net.Addr         { return w.local }
func (w *discardWriter) RemoteAddr() net.Addr        { return w.remote }
func (w *discardWriter) WriteMsg(m *dns.Msg) error   { w.n++; return nil }
func (w *discardWriter) Write(b []byte) (int, error) { w.n++; return len(b), nil }
func (w *discardWriter) Close() error                { return nil }
func (w *discardWriter) TsigStatus() error           { return nil }
func (w *discardWriter) TsigTimersOnly(bool)         {}
func (w *discardWriter) Hijack()                     {}
func (w *discardWriter) Network() string             { return "udp" }

// newForwarder is partition-dns's forwarder (pkg/dns/upstream) to one
// server: with a cache when cache is set, with timeout per query (2 s when
// zero).
func newForwarder(t testing.TB, server string, cache bool, timeout time.Duration) Forwarder {
	t.Helper()
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	size := 0
	if cache {
		size = 10000
	}
	r, err := dnsupstream.NewResolver(dnsupstream.ResolverConfig{
		Cache:           dnsupstream.Config{SuccessCapacity: size, SuccessTTL: 30 * time.Second, DenialCapacity: size, DenialTTL: 30 * time.Second},
		Routes:          []dnsupstream.Route{{Zone: ".", Upstream: dnsupstream.NewServersUpstream([]string{server}, timeout), Label: "upstream"}},
		UpstreamTimeout: timeout,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
