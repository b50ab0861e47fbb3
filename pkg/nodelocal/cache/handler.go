package cache

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
)

// HandlerConfig configures a Handler.
type HandlerConfig struct {
	Cache upstream.Config
	// Routes map zones to upstreams; the longest matching zone wins. The
	// cluster routes set ClientSubnet: the pod's address goes with the
	// query, replacing any ECS option the pod sent.
	Routes []upstream.Route
	// Identity answers CHAOS TXT id.server. and hostname.bind.
	Identity string
	// UpstreamTimeout bounds one upstream exchange (default 2 s).
	UpstreamTimeout time.Duration
	// MaxPrefetches bounds concurrent background refreshes (default 16).
	MaxPrefetches int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Handler is the cache's dns.Handler: the shared upstream.Resolver (cache,
// routes, prefetch, serve-stale, client subnets) behind the node's
// addresses, the identity probe, and a hit path that copies packed answers.
type Handler struct {
	cfg      HandlerConfig
	resolver *upstream.Resolver
	probes   prometheus.Counter // identity queries answered
	draining atomic.Bool
	bufs     sync.Pool // *[]byte answer buffers for the hit path
}

// NewHandler returns a handler and registers its metrics on reg (when not
// nil).
func NewHandler(cfg HandlerConfig, reg prometheus.Registerer) (*Handler, error) {
	r, err := upstream.NewResolver(upstream.ResolverConfig{
		Cache: cfg.Cache, Routes: cfg.Routes, UpstreamTimeout: cfg.UpstreamTimeout, MaxPrefetches: cfg.MaxPrefetches,
		Now: cfg.Now, MetricsPrefix: "tpkit_nodelocal",
	}, reg)
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, resolver: r, probes: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tpkit_nodelocal_cache_identity_queries_total",
		Help: "CHAOS id.server./hostname.bind. queries answered (the watcher's probes).",
	})}
	if reg != nil {
		if err := reg.Register(h.probes); err != nil {
			return nil, err
		}
	}
	h.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	return h, nil
}

// Store returns the handler's cache, for inspection.
func (h *Handler) Store() *upstream.Store { return h.resolver.Store() }

// SetDraining makes the identity probe fail (REFUSED) while every other
// query is still answered: a stopping cache tells the watcher to move the
// traffic away before its sockets close.
func (h *Handler) SetDraining(d bool) { h.draining.Store(d) }

// Wait waits for background prefetches to finish.
func (h *Handler) Wait() { h.resolver.Wait() }

// ServeDNS implements dns.Handler.
func (h *Handler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if req == nil || req.Response || req.Opcode != dns.OpcodeQuery || len(req.Question) != 1 {
		h.fail(w, req, dns.RcodeFormatError)
		return
	}
	q := req.Question[0]
	if q.Qclass == dns.ClassCHAOS {
		h.chaos(w, req)
		return
	}
	do := false
	if opt := req.IsEdns0(); opt != nil {
		do = opt.Do()
	}
	a, err := h.resolver.Lookup(context.Background(), q, do, addrOf(w.RemoteAddr()))
	switch {
	case err != nil:
		h.fail(w, req, dns.RcodeServerFailure)
	case a.Entry != nil:
		_, udp := w.RemoteAddr().(*net.UDPAddr)
		if !h.writeFast(w, req, a.Entry, a.TTL, udp) {
			h.write(w, req, a.Entry, a.TTL)
		}
	default:
		h.writeUpstream(w, req, a.Msg)
	}
}

// addrOf is the IP address of a client's socket address.
func addrOf(a net.Addr) netip.Addr {
	var ip net.IP
	switch a := a.(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap()
}

// write answers req from a cache entry, every record with TTL ttl.
func (h *Handler) write(w dns.ResponseWriter, req *dns.Msg, e *upstream.Entry, ttl uint32) {
	m := new(dns.Msg)
	m.SetRcode(req, e.Rcode)
	m.RecursionAvailable = true
	m.Answer = upstream.CopyRecords(e.Answer, ttl)
	m.Ns = upstream.CopyRecords(e.Ns, ttl)
	m.Extra = upstream.CopyRecords(e.Extra, ttl)
	h.send(w, req, m)
}

// writeUpstream relays an answer that was not cached.
func (h *Handler) writeUpstream(w dns.ResponseWriter, req *dns.Msg, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetRcode(req, r.Rcode)
	m.RecursionAvailable = true
	m.AuthenticatedData = r.AuthenticatedData
	m.Answer, m.Ns = r.Answer, r.Ns
	for _, rr := range r.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			m.Extra = append(m.Extra, rr)
		}
	}
	h.send(w, req, m)
}

// send adds EDNS when the client used it, truncates to what a UDP client
// can take, and writes.
func (h *Handler) send(w dns.ResponseWriter, req, m *dns.Msg) {
	size := dns.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		if s := int(opt.UDPSize()); s > size {
			size = s
		}
		m.SetEdns0(1232, opt.Do())
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		if size > 1232 {
			size = 1232
		}
		m.Truncate(size)
	} else {
		m.Truncate(dns.MaxMsgSize)
	}
	if err := w.WriteMsg(m); err != nil {
		klog.V(3).InfoS("Writing answer failed", "client", w.RemoteAddr().String(), "err", err)
	}
}

func (h *Handler) fail(w dns.ResponseWriter, req *dns.Msg, rcode int) {
	m := new(dns.Msg)
	if req == nil {
		return
	}
	m.SetRcode(req, rcode)
	if len(req.Question) > 1 {
		m.Question = nil
	}
	m.RecursionAvailable = true
	h.send(w, req, m)
}

// chaos answers the identity queries; other CHAOS queries are refused.
func (h *Handler) chaos(w dns.ResponseWriter, req *dns.Msg) {
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	if q.Qtype != dns.TypeTXT || (name != "id.server." && name != "hostname.bind.") || h.draining.Load() {
		h.fail(w, req, dns.RcodeRefused)
		return
	}
	h.probes.Inc()
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.Answer = []dns.RR{&dns.TXT{
		Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassCHAOS, Ttl: 0},
		Txt: []string{h.cfg.Identity},
	}}
	h.send(w, req, m)
}
