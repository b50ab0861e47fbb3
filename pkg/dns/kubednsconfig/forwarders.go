package kubednsconfig

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
)

// Resolver answers a query with one question; *upstream.Resolver is one.
type Resolver interface {
	Resolve(ctx context.Context, req *dns.Msg) (*dns.Msg, error)
}

// Options configure Forwarders.
type Options struct {
	// Partitions name the TPs, in index order (labels of the metrics).
	Partitions []string
	// Default answers the TPs without a configuration; nil answers their
	// names REFUSED (partition-dns's --upstream none).
	Default Resolver
	// DefaultServers are the default upstreams (host:port): the servers of
	// every other name for a configuration with stub domains only.
	DefaultServers []string
	// Cache sizes each configuration's own cache.
	Cache upstream.Config
	// ServerTimeout bounds one server's answer; QueryTimeout one query.
	ServerTimeout, QueryTimeout time.Duration
	// Registerer takes the metrics; nil keeps none.
	Registerer prometheus.Registerer
}

// Forwarders is the forwarder of names outside the cluster zones whose
// upstreams depend on the asking pod's TP: the TP's configuration when it
// has one, else the default. It is safe for concurrent use.
type Forwarders struct {
	o   Options
	tps []atomic.Pointer[configured]
	mu  sync.Mutex // serializes Apply and Remove

	inForce *prometheus.GaugeVec
	errs    *prometheus.CounterVec
}

// configured is a TP's configuration and the resolver built for it.
type configured struct {
	cfg Config
	r   *upstream.Resolver
}

// New returns Forwarders for o.Partitions, all on the default.
func New(o Options) (*Forwarders, error) {
	f := &Forwarders{o: o, tps: make([]atomic.Pointer[configured], len(o.Partitions))}
	f.inForce = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tpkit_dns_kube_dns_config",
		Help: "1 when a TP's kube-dns ConfigMap (stubDomains, upstreamNameservers) is in force for its pods' names outside the zones, 0 when they go to --upstream.",
	}, []string{"partition"})
	f.errs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tpkit_dns_kube_dns_config_errors_total",
		Help: "kube-dns ConfigMaps that did not parse, by TP; the TP kept its previous configuration.",
	}, []string{"partition"})
	for _, p := range o.Partitions {
		f.inForce.WithLabelValues(p).Set(0)
		f.errs.WithLabelValues(p)
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{f.inForce, f.errs} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// Apply makes data, TP tp's ConfigMap, the configuration of tp's pods. A
// ConfigMap that does not parse leaves tp as it was; the error says why.
func (f *Forwarders) Apply(tp int, data map[string]string) error {
	if tp < 0 || tp >= len(f.tps) {
		return nil
	}
	name := f.o.Partitions[tp]
	cfg, err := Parse(data)
	if err != nil {
		f.errs.WithLabelValues(name).Inc()
		klog.ErrorS(err, "kube-dns ConfigMap ignored: the TP keeps its previous configuration", "partition", name)
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur := f.tps[tp].Load(); cur != nil && equal(cur.cfg, cfg) || cur == nil && cfg.IsZero() {
		return nil
	}
	if cfg.IsZero() {
		f.set(tp, nil)
		return nil
	}
	r, err := f.build(cfg)
	if err != nil {
		return err
	}
	f.set(tp, &configured{cfg: cfg, r: r})
	return nil
}

// Remove returns tp to the default: its ConfigMap was deleted.
func (f *Forwarders) Remove(tp int) {
	if tp < 0 || tp >= len(f.tps) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tps[tp].Load() != nil {
		f.set(tp, nil)
	}
}

func (f *Forwarders) set(tp int, c *configured) {
	name := f.o.Partitions[tp]
	f.tps[tp].Store(c)
	if c == nil {
		f.inForce.WithLabelValues(name).Set(0)
		klog.InfoS("kube-dns ConfigMap: none; names outside the zones go to the default upstreams", "partition", name)
		return
	}
	f.inForce.WithLabelValues(name).Set(1)
	klog.InfoS("kube-dns ConfigMap in force", "partition", name, "routes", c.cfg.String())
}

// build makes cfg's resolver: a route per stub domain, and every other
// name to cfg's upstreams or else the default servers.
func (f *Forwarders) build(cfg Config) (*upstream.Resolver, error) {
	var routes []upstream.Route
	for _, s := range cfg.StubDomains {
		routes = append(routes, upstream.Route{Zone: s.Domain, Upstream: upstream.NewServersUpstream(s.Servers, f.o.ServerTimeout), Label: "stub"})
	}
	rest := cfg.Upstreams
	if len(rest) == 0 {
		rest = f.o.DefaultServers
	}
	if len(rest) > 0 {
		routes = append(routes, upstream.Route{Zone: ".", Upstream: upstream.NewServersUpstream(rest, f.o.ServerTimeout), Label: "upstream"})
	}
	return upstream.NewResolver(upstream.ResolverConfig{Cache: f.o.Cache, Routes: routes, UpstreamTimeout: f.o.QueryTimeout}, nil)
}

// Resolve answers req as for a querier of no known TP's configuration.
func (f *Forwarders) Resolve(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	return f.ResolveFor(ctx, -1, req)
}

// ResolveFor answers req for a pod of TP tp.
func (f *Forwarders) ResolveFor(ctx context.Context, tp int, req *dns.Msg) (*dns.Msg, error) {
	if tp >= 0 && tp < len(f.tps) {
		if c := f.tps[tp].Load(); c != nil {
			return c.r.Resolve(ctx, req)
		}
	}
	if f.o.Default == nil {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeRefused)
		return m, nil
	}
	return f.o.Default.Resolve(ctx, req)
}

func equal(a, b Config) bool {
	return slices.Equal(a.Upstreams, b.Upstreams) && slices.EqualFunc(a.StubDomains, b.StubDomains, func(x, y StubDomain) bool {
		return x.Domain == y.Domain && slices.Equal(x.Servers, y.Servers)
	})
}
