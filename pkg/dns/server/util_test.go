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

type discardWriter struct{ n int }

func (w *discardWriter) LocalAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
}
func (w *discardWriter) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}
}
func (w *discardWriter) WriteMsg(m *dns.Msg) error   { w.n++; return nil }
func (w *discardWriter) Write(b []byte) (int, error) { w.n++; return len(b), nil }
func (w *discardWriter) Close() error                { return nil }
func (w *discardWriter) TsigStatus() error           { return nil }
func (w *discardWriter) TsigTimersOnly(bool)         {}
func (w *discardWriter) Hijack()                     {}
func (w *discardWriter) Network() string             { return "udp" }
