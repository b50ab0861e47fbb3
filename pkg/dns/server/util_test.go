package server

import (
	"context"
	"net"
	"testing"

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
