package arktoslab

import (
	"io"
	"net"
	"sync/atomic"
)

// Forwarder accepts TCP connections on an address of the lab's namespace
// and joins each to a target: hack/arktos-lab.sh binds every API server to
// loopback, which pods on a bridge cannot reach, and the node lab uses it to
// stand for an API server at another address.
type Forwarder struct {
	ln    net.Listener
	conns atomic.Int64
}

// Forward listens on host at a free port and forwards to target.
func Forward(host, target string) (*Forwarder, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	f := &Forwarder{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			go func() {
				defer c.Close()
				t, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer t.Close()
				go func() { _, _ = io.Copy(t, c) }()
				_, _ = io.Copy(c, t)
			}()
		}
	}()
	return f, nil
}

// Port is the port the forwarder listens on.
func (f *Forwarder) Port() int { return f.ln.Addr().(*net.TCPAddr).Port }

// Conns is how many connections it has accepted.
func (f *Forwarder) Conns() int64 { return f.conns.Load() }

// Close stops accepting; open connections run out by themselves.
func (f *Forwarder) Close() { _ = f.ln.Close() }
