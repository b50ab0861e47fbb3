package cache

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Servers are DNS servers on UDP and TCP for a set of addresses.
type Servers struct {
	servers []*dns.Server
}

// Listen binds UDP and TCP on every address (host:port) at once, so a bind
// error is returned before anything serves.
func Listen(addrs []string, h dns.Handler) (*Servers, error) {
	s := &Servers{}
	for _, a := range addrs {
		pc, err := net.ListenPacket("udp", a)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("listening on udp %s: %w", a, err)
		}
		s.servers = append(s.servers, &dns.Server{PacketConn: pc, Handler: h, UDPSize: 1232})
		ln, err := net.Listen("tcp", a)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("listening on tcp %s: %w", a, err)
		}
		s.servers = append(s.servers, &dns.Server{Listener: ln, Handler: h,
			ReadTimeout: 5 * time.Second, IdleTimeout: func() time.Duration { return 10 * time.Second }})
	}
	return s, nil
}

// Addrs returns the bound addresses, UDP then TCP for each listen address.
func (s *Servers) Addrs() []net.Addr {
	var out []net.Addr
	for _, srv := range s.servers {
		if srv.PacketConn != nil {
			out = append(out, srv.PacketConn.LocalAddr())
		} else {
			out = append(out, srv.Listener.Addr())
		}
	}
	return out
}

func (s *Servers) close() {
	for _, srv := range s.servers {
		if srv.PacketConn != nil {
			srv.PacketConn.Close()
		}
		if srv.Listener != nil {
			srv.Listener.Close()
		}
	}
}

// Serve serves until ctx ends, then shuts the servers down. It returns the
// first serving error other than a shutdown.
func (s *Servers) Serve(ctx context.Context) error {
	errc := make(chan error, len(s.servers))
	var wg sync.WaitGroup
	for _, srv := range s.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- srv.ActivateAndServe()
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	for _, srv := range s.servers {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = srv.ShutdownContext(sctx)
		cancel()
	}
	s.close()
	wg.Wait()
	if ctx.Err() != nil {
		// Errors after a shutdown are the shutdown's.
		return nil
	}
	return err
}
