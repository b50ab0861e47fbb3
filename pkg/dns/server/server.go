package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// Listener is a bound set of DNS sockets: several UDP sockets sharing the
// port through SO_REUSEPORT (one per core, so the kernel spreads queries)
// and one TCP socket.
type Listener struct {
	udp []net.PacketConn
	tcp net.Listener
}

func reusePort(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// Listen binds addr for UDP (udpSockets sockets, at least 1) and TCP. With
// port 0, every socket gets the same kernel-chosen port (retrying when the
// UDP port's TCP twin is taken).
func Listen(addr string, udpSockets int) (*Listener, error) {
	_, port, _ := net.SplitHostPort(addr)
	tries := 1
	if port == "0" {
		tries = 20
	}
	var err error
	for i := 0; i < tries; i++ {
		var l *Listener
		l, err = listenOnce(addr, udpSockets)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, err
}

func listenOnce(addr string, udpSockets int) (*Listener, error) {
	if udpSockets < 1 {
		udpSockets = 1
	}
	lc := net.ListenConfig{Control: reusePort}
	l := &Listener{}
	first, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("dns: listening on udp %s: %w", addr, err)
	}
	l.udp = append(l.udp, first)
	bound := first.LocalAddr().String()
	for i := 1; i < udpSockets; i++ {
		pc, err := lc.ListenPacket(context.Background(), "udp", bound)
		if err != nil {
			klog.InfoS("SO_REUSEPORT unavailable, serving UDP from one socket", "err", err)
			break
		}
		l.udp = append(l.udp, pc)
	}
	// TCP without SO_REUSEPORT: a second server on the same port must fail
	// rather than share the traffic.
	l.tcp, err = net.Listen("tcp", bound)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("dns: listening on tcp %s: %w", bound, err)
	}
	return l, nil
}

// Addr is the bound address (UDP and TCP share it).
func (l *Listener) Addr() string { return l.udp[0].LocalAddr().String() }

// Close closes every socket.
func (l *Listener) Close() {
	for _, pc := range l.udp {
		_ = pc.Close()
	}
	if l.tcp != nil {
		_ = l.tcp.Close()
	}
}

// Serve answers queries on l with h until ctx ends, then shuts down. A
// *Handler gets the allocation-free UDP path (see fast.go); any other
// handler is served by miekg/dns alone.
func Serve(ctx context.Context, l *Listener, h dns.Handler) error {
	if hh, ok := h.(*Handler); ok {
		klog.InfoS("Serving DNS", "address", l.Addr(), "udpSockets", len(l.udp))
		return serveFast(ctx, l, hh, runtime.GOMAXPROCS(0))
	}
	var servers []*dns.Server
	for _, pc := range l.udp {
		servers = append(servers, &dns.Server{PacketConn: pc, Handler: h, UDPSize: 4096, ReusePort: true})
	}
	servers = append(servers, tcpServer(l, h))
	errc := make(chan error, len(servers))
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func(s *dns.Server) {
			defer wg.Done()
			errc <- s.ActivateAndServe()
		}(s)
	}
	klog.InfoS("Serving DNS", "address", l.Addr(), "udpSockets", len(l.udp))
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	for _, s := range servers {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.ShutdownContext(sctx)
		cancel()
	}
	// A shutdown that lands before a server has started is missed by
	// miekg/dns; closing the sockets ends ActivateAndServe for sure.
	l.Close()
	wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
