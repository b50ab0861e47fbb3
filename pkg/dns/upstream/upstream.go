package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Upstream answers queries the cache cannot.
type Upstream interface {
	// Exchange sends m and returns the answer. m must not be modified.
	Exchange(ctx context.Context, m *dns.Msg) (*dns.Msg, error)
	// String names the upstream in logs and metrics.
	String() string
}

// TCPUpstream sends every query over TCP to one address, keeping a few idle
// connections open for reuse: the KEP's link to the node-local-upstream
// service. TCP connections leave no UDP conntrack entries behind and do not
// lose answers to dropped datagrams.
type TCPUpstream struct {
	addr    string
	timeout time.Duration
	maxIdle int
	idleFor time.Duration

	mu   sync.Mutex
	idle []pooledConn
}

type pooledConn struct {
	c    *dns.Conn
	used time.Time
}

// NewTCPUpstream returns an upstream for addr (host:port). timeout bounds
// each exchange.
func NewTCPUpstream(addr string, timeout time.Duration) *TCPUpstream {
	return &TCPUpstream{addr: addr, timeout: timeout, maxIdle: 16, idleFor: 10 * time.Second}
}

func (u *TCPUpstream) String() string { return "tcp://" + u.addr }

func (u *TCPUpstream) get() (*dns.Conn, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := time.Now()
	for len(u.idle) > 0 {
		pc := u.idle[len(u.idle)-1]
		u.idle = u.idle[:len(u.idle)-1]
		if now.Sub(pc.used) < u.idleFor {
			return pc.c, true
		}
		pc.c.Close()
	}
	return nil, false
}

func (u *TCPUpstream) put(c *dns.Conn) {
	u.mu.Lock()
	if len(u.idle) < u.maxIdle {
		u.idle = append(u.idle, pooledConn{c: c, used: time.Now()})
		u.mu.Unlock()
		return
	}
	u.mu.Unlock()
	c.Close()
}

// Close closes the idle connections.
func (u *TCPUpstream) Close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, pc := range u.idle {
		pc.c.Close()
	}
	u.idle = nil
}

// Exchange implements Upstream. A reused connection that fails (the
// upstream closed it while idle) is retried once on a fresh one.
func (u *TCPUpstream) Exchange(ctx context.Context, m *dns.Msg) (*dns.Msg, error) {
	deadline := time.Now().Add(u.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for attempt := 0; ; attempt++ {
		c, reused := u.get()
		if c == nil {
			d := net.Dialer{Deadline: deadline}
			nc, err := d.DialContext(ctx, "tcp", u.addr)
			if err != nil {
				return nil, err
			}
			c = &dns.Conn{Conn: nc}
		}
		r, err := exchangeOn(c, m, deadline)
		if err == nil {
			u.put(c)
			return r, nil
		}
		c.Close()
		if !reused || attempt > 0 || ctx.Err() != nil || time.Now().After(deadline) {
			return nil, err
		}
	}
}

func exchangeOn(c *dns.Conn, m *dns.Msg, deadline time.Time) (*dns.Msg, error) {
	if err := c.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if err := c.WriteMsg(m); err != nil {
		return nil, err
	}
	for {
		r, err := c.ReadMsg()
		if err != nil {
			return nil, err
		}
		if r.Id == m.Id {
			return r, nil
		}
		// An answer to an earlier, timed-out query on this connection.
	}
}

// ServersUpstream tries a list of resolvers in turn over UDP, starting
// with the last one that answered, and retries a truncated answer over
// TCP: node-cache's host resolvers, and partition-dns's --upstream.
type ServersUpstream struct {
	servers []string
	udp     *dns.Client
	tcp     *dns.Client
	// first is the server tried first: the last one that answered, so
	// that a dead first server costs one timeout, not one per query.
	first atomic.Uint32
}

// HostPort returns server as host:port, with port 53 when it names none.
func HostPort(server string) string {
	if _, _, err := net.SplitHostPort(server); err == nil {
		return server
	}
	return net.JoinHostPort(strings.Trim(server, "[]"), "53")
}

// NewServersUpstream returns an upstream over servers (host:port each).
func NewServersUpstream(servers []string, timeout time.Duration) *ServersUpstream {
	return &ServersUpstream{
		servers: servers,
		udp:     &dns.Client{Net: "udp", Timeout: timeout, UDPSize: dns.DefaultMsgSize},
		tcp:     &dns.Client{Net: "tcp", Timeout: timeout},
	}
}

func (u *ServersUpstream) String() string { return fmt.Sprintf("udp://%v", u.servers) }

// Exchange implements Upstream.
func (u *ServersUpstream) Exchange(ctx context.Context, m *dns.Msg) (*dns.Msg, error) {
	if len(u.servers) == 0 {
		return nil, errors.New("no upstream servers")
	}
	var errs []error
	first := int(u.first.Load()) % len(u.servers)
	for i := range u.servers {
		s := u.servers[(first+i)%len(u.servers)]
		r, _, err := u.udp.ExchangeContext(ctx, m, s)
		if err == nil && r.Truncated {
			r, _, err = u.tcp.ExchangeContext(ctx, m, s)
		}
		if err == nil {
			if i > 0 {
				u.first.Store(uint32((first + i) % len(u.servers)))
			}
			return r, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// ParseResolvConf returns the nameservers of a resolv.conf as host:port,
// leaving out any of skip (the cache's own IPs: forwarding to them would
// loop).
func ParseResolvConf(r io.Reader, skip []netip.Addr) ([]string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, err
	}
	cc, err := dns.ClientConfigFromReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing resolv.conf: %w", err)
	}
	var out []string
	for _, s := range cc.Servers {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		ip = ip.Unmap().WithZone("")
		loop := false
		for _, l := range skip {
			if l.Unmap() == ip {
				loop = true
			}
		}
		if loop {
			continue
		}
		out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(portOr(cc.Port, 53))))
	}
	return out, nil
}

func portOr(s string, def int) int {
	if p, err := strconv.Atoi(s); err == nil && p > 0 && p < 65536 {
		return p
	}
	return def
}
