package nodelocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/dns/server"
	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
	"github.com/tpkit-dev/tpkit/pkg/nodelocal/cache"
	"github.com/tpkit-dev/tpkit/pkg/nodelocal/netif"
	"github.com/tpkit-dev/tpkit/pkg/nodelocal/rules"
	"github.com/tpkit-dev/tpkit/pkg/ops"
)

// CacheOptions are the node-cache flags, parsed.
type CacheOptions struct {
	LocalIPs        []netip.Addr
	DNSPort         int
	UpstreamSvcIP   netip.Addr
	UpstreamSvcPort int
	ClusterZones    []string
	UpstreamServers []string // host resolvers; empty means none
	Cache           upstream.Config
	UpstreamTimeout time.Duration
	// ClientSubnet sends each pod's address with its cluster-zone queries
	// (EDNS Client Subnet), so that partition-dns answers as to the pod.
	ClientSubnet   bool
	SetupInterface bool
	InterfaceName  string
	FallbackIface  string
	SetupIptables  bool
	IptablesBinary string
	SyncInterval   time.Duration
	SkipTeardown   bool
	HealthPort     int
	MetricsAddress string
	Identity       string
	IPCommand      string
	DrainDuration  time.Duration
}

// ParseCacheFlags parses the node-cache arguments. Its errors are
// *UsageError.
func ParseCacheFlags(args []string, getenv func(string) string) (o *CacheOptions, err error) {
	o, err = parseCacheFlags(args, getenv)
	return o, usage(err)
}

func parseCacheFlags(args []string, getenv func(string) string) (*CacheOptions, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cmd := cliflag.NewCommand("partition-dns node-cache", "Node-local DNS cache: answers pods on the node from a cache, forwarding cluster zones to partition-dns and other names to the host resolvers.", os.Stdout)
	fs := cmd.Flags
	// klog's flags (--v, --vmodule, ...) are accepted in every mode.
	klog.InitFlags(cmd.Logging)
	def := upstream.DefaultConfig()
	host, _ := os.Hostname()
	var (
		localIPs     = fs.String("local-ip", DefaultLocalIPs(getenv), "Comma-separated IPs to listen on and put on the interface: the link-local IP and the cluster DNS service IP. Default: 169.254.20.10 plus $PARTITION_DNS_SERVICE_HOST, else $KUBE_DNS_SERVICE_HOST, when set.")
		dnsPort      = fs.Int("dns-port", 53, "DNS port to listen on (UDP and TCP).")
		upSvc        = fs.String("upstream-svc-ip", getenv("NODE_LOCAL_UPSTREAM_SERVICE_HOST"), "IP of the node-local-upstream service (the cluster DNS pods under a second service IP); cluster zones are forwarded to it over TCP. Default: $NODE_LOCAL_UPSTREAM_SERVICE_HOST.")
		upSvcPort    = fs.Int("upstream-svc-port", 53, "Port of the node-local-upstream service.")
		zones        = fs.String("cluster-zones", "cluster.local,in-addr.arpa,ip6.arpa", "Comma-separated zones forwarded to --upstream-svc-ip; every other name goes to the host's resolvers. \".\" among them sends every name to --upstream-svc-ip, so that the stub domains and upstreams of each TP's kube-dns ConfigMap apply to its pods (partition-dns --config-map).")
		servers      = fs.String("upstream-servers", "", "Comma-separated host resolvers (IP[:port]) for names outside the cluster zones. Default: the nameservers of --resolv-conf.")
		resolvConf   = fs.String("resolv-conf", "/etc/resolv.conf", "resolv.conf to read the host's resolvers from when --upstream-servers is empty.")
		successCap   = fs.Int("success-capacity", def.SuccessCapacity, "Maximum cached successful answers.")
		successTTL   = fs.Duration("success-ttl", def.SuccessTTL, "TTL cap of cached successful answers.")
		denialCap    = fs.Int("denial-capacity", def.DenialCapacity, "Maximum cached denials (NXDOMAIN, NODATA).")
		denialTTL    = fs.Duration("denial-ttl", def.DenialTTL, "TTL cap of cached denials.")
		prefetch     = fs.Int("prefetch-amount", def.PrefetchAmount, "Hits during its TTL that make an entry popular enough to refresh before expiry; 0 disables prefetching.")
		prefetchPct  = fs.Int("prefetch-percentage", def.PrefetchPercentage, "Percentage of the TTL left when a popular entry is refreshed.")
		serveStale   = fs.Duration("serve-stale", def.ServeStale, "How long past expiry an entry may be served when the upstream fails; 0 disables.")
		upTimeout    = fs.Duration("upstream-timeout", 2*time.Second, "Timeout of one upstream exchange.")
		clientSubnet = fs.Bool("client-subnet", true, "Send the asking pod's address with cluster-zone queries as an EDNS Client Subnet option (/32, /128), replacing any the pod sent, so that partition-dns (with this node in its --trusted-forwarders) answers system names from the pod's partition and applies tenant isolation. Answers it scopes to the pod are cached for that pod alone. Names outside the cluster zones never carry it.")
		setupIface   = fs.Bool("setup-interface", true, "Put the local IPs on --interface-name (or the fallback) and remove them on teardown.")
		ifaceName    = fs.String("interface-name", "nodelocaldns", "Dummy interface that holds the local IPs.")
		fallback     = fs.String("fallback-interface", "lo", "Interface used when the kernel cannot create a dummy interface; empty to fail instead.")
		setupIpt     = fs.Bool("setup-iptables", true, "Keep the NOTRACK/ACCEPT rules in place. Set false when node-cache-watch runs next to the cache: it then owns the rules.")
		iptBin       = fs.String("iptables", "iptables", "iptables command: iptables, iptables-nft, iptables-legacy or a path.")
		syncInterval = fs.Duration("sync-interval", 60*time.Second, "How often the interface and the iptables rules are re-ensured.")
		skipTeardown = fs.Bool("skip-teardown", false, "Leave the rules and the interface in place on shutdown.")
		healthPort   = fs.Int("health-port", 8080, "Port for /healthz on each local IP; 0 disables.")
		metricsAddr  = fs.String("metrics-listen-address", "0.0.0.0:9253", "Address for /metrics, /healthz and /readyz; empty disables.")
		identity     = fs.String("identity", host, "Answer to CHAOS TXT id.server. (the watcher's probe).")
		drain        = fs.Duration("drain-duration", 3*time.Second, "On SIGTERM (without --skip-teardown), how long to keep serving while failing the watcher's probe, so it moves the kube-dns traffic away first; longer than the watcher's failure-threshold x interval + probe-timeout.")
	)
	if err := cmd.Parse(args); err != nil {
		return nil, err
	}
	if len(cmd.Args()) > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", cmd.Args())
	}
	o := &CacheOptions{
		DNSPort: *dnsPort, UpstreamSvcPort: *upSvcPort, UpstreamTimeout: *upTimeout, ClientSubnet: *clientSubnet,
		Cache: upstream.Config{
			SuccessCapacity: *successCap, SuccessTTL: *successTTL,
			DenialCapacity: *denialCap, DenialTTL: *denialTTL,
			PrefetchAmount: *prefetch, PrefetchPercentage: *prefetchPct,
			ServeStale: *serveStale, StaleTTL: def.StaleTTL,
		},
		SetupInterface: *setupIface, InterfaceName: *ifaceName, FallbackIface: *fallback,
		SetupIptables: *setupIpt, IptablesBinary: *iptBin, SyncInterval: *syncInterval,
		SkipTeardown: *skipTeardown, HealthPort: *healthPort, MetricsAddress: *metricsAddr,
		Identity: *identity, IPCommand: "ip", DrainDuration: *drain,
	}
	var err error
	if o.LocalIPs, err = ParseIPList(*localIPs); err != nil {
		return nil, fmt.Errorf("--local-ip: %w", err)
	}
	if o.UpstreamSvcIP, err = upstreamServiceIP(*upSvc, o.LocalIPs); err != nil {
		return nil, err
	}
	if o.ClusterZones, err = clusterZonesOf(*zones); err != nil {
		return nil, err
	}
	if o.UpstreamServers, err = hostResolvers(*servers, *resolvConf, o.LocalIPs); err != nil {
		return nil, err
	}
	if err := validateCacheOptions(o); err != nil {
		return nil, err
	}
	return o, nil
}

// upstreamServiceIP parses --upstream-svc-ip, which must not be one of the
// cache's own IPs (the cache would forward to itself).
func upstreamServiceIP(flag string, local []netip.Addr) (netip.Addr, error) {
	if strings.TrimSpace(flag) == "" {
		return netip.Addr{}, errors.New("--upstream-svc-ip is required (or $NODE_LOCAL_UPSTREAM_SERVICE_HOST)")
	}
	ip, err := netip.ParseAddr(strings.TrimSpace(flag))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--upstream-svc-ip: %q is not an IP address", flag)
	}
	ip = ip.Unmap()
	for _, l := range local {
		if l == ip {
			return netip.Addr{}, fmt.Errorf("--upstream-svc-ip %s is one of --local-ip: the cache would forward to itself", ip)
		}
	}
	return ip, nil
}

// clusterZonesOf parses --cluster-zones.
func clusterZonesOf(list string) ([]string, error) {
	var zones []string
	for _, z := range cliflag.SplitList(list) {
		if _, ok := dns.IsDomainName(z); !ok {
			return nil, fmt.Errorf("--cluster-zones: %q is not a domain name", z)
		}
		zones = append(zones, z)
	}
	if len(zones) == 0 {
		return nil, errors.New("--cluster-zones is empty")
	}
	return zones, nil
}

// hostResolvers are --upstream-servers, or else the nameservers of
// --resolv-conf other than the cache's own IPs.
func hostResolvers(servers, resolvConf string, local []netip.Addr) ([]string, error) {
	if strings.TrimSpace(servers) != "" {
		list, err := ParseServerList(servers)
		if err != nil {
			return nil, fmt.Errorf("--upstream-servers: %w", err)
		}
		return list, nil
	}
	if resolvConf == "" {
		return nil, nil
	}
	f, err := os.Open(resolvConf)
	if err != nil {
		return nil, fmt.Errorf("--resolv-conf: %w", err)
	}
	defer f.Close()
	list, err := upstream.ParseResolvConf(f, local)
	if err != nil {
		return nil, fmt.Errorf("--resolv-conf: %w", err)
	}
	return list, nil
}

// validateCacheOptions checks the ports, the metrics address, the cache
// settings and the durations.
func validateCacheOptions(o *CacheOptions) error {
	for _, p := range []struct {
		n    string
		v    int
		zero bool
	}{{"dns-port", o.DNSPort, false}, {"upstream-svc-port", o.UpstreamSvcPort, false}, {"health-port", o.HealthPort, true}} {
		if err := validPort(p.n, p.v, p.zero); err != nil {
			return err
		}
	}
	if o.MetricsAddress != "" {
		if err := cliflag.ValidateListenAddress(o.MetricsAddress); err != nil {
			return fmt.Errorf("--metrics-listen-address %q: %v", o.MetricsAddress, err)
		}
	}
	switch {
	case o.Cache.SuccessCapacity < 0 || o.Cache.DenialCapacity < 0:
		return errors.New("cache capacities cannot be negative")
	case o.Cache.SuccessTTL < 0 || o.Cache.DenialTTL < 0 || o.Cache.ServeStale < 0:
		return errors.New("cache durations cannot be negative")
	case o.Cache.PrefetchAmount < 0 || o.Cache.PrefetchPercentage < 0 || o.Cache.PrefetchPercentage > 100:
		return errors.New("--prefetch-amount must be >= 0 and --prefetch-percentage in 0..100")
	case o.DrainDuration < 0:
		return errors.New("--drain-duration cannot be negative")
	case o.UpstreamTimeout <= 0 || o.SyncInterval <= 0:
		return errors.New("--upstream-timeout and --sync-interval must be positive")
	}
	return nil
}

// setupErrors counts failed setup steps by kind, as upstream node-cache's
// setup_errors_total does.
func newSetupErrors(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tpkit_nodelocal_setup_errors_total",
		Help: "Failed setup steps, by kind (interface_add, interface_check, address_add, iptables, iptables_lock, listen).",
	}, []string{"kind"})
	reg.MustRegister(c)
	return c
}

func errKind(err error) string {
	var re *rules.Error
	var ne *netif.Error
	switch {
	case errors.As(err, &re):
		return re.Kind
	case errors.As(err, &ne):
		return ne.Kind
	}
	return "other"
}

// RunCache runs `partition-dns node-cache` with args (flags only) until ctx
// ends. A bad command line is a *UsageError (exit 2), -h one that wraps
// flag.ErrHelp (exit 0); other errors are runtime failures (exit 1).
func RunCache(ctx context.Context, args []string) error {
	o, err := ParseCacheFlags(args, nil)
	if err != nil {
		return err
	}
	return RunCacheWithOptions(ctx, o)
}

// RunCacheWithOptions is RunCache after flag parsing: it runs the cache
// until ctx ends or a server fails.
func RunCacheWithOptions(ctx context.Context, o *CacheOptions) error {
	r := &cacheRun{o: o, reg: prometheus.NewRegistry()}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.setupErrs = newSetupErrors(r.reg)
	r.ruleSet = rules.Build(rules.Config{LocalIPs: o.LocalIPs, DNSPort: o.DNSPort, HealthPort: o.HealthPort})
	r.synced = !o.SetupIptables
	if err := r.setupInterface(); err != nil {
		return err
	}
	upstreamTCP := upstream.NewTCPUpstream(net.JoinHostPort(o.UpstreamSvcIP.String(), strconv.Itoa(o.UpstreamSvcPort)), o.UpstreamTimeout)
	defer upstreamTCP.Close()
	h, err := cache.NewHandler(cache.HandlerConfig{Cache: o.Cache, Routes: r.routes(upstreamTCP), Identity: o.Identity, UpstreamTimeout: o.UpstreamTimeout}, r.reg)
	if err != nil {
		return err
	}
	r.h = h
	if err := r.listen(); err != nil {
		return err
	}
	klog.InfoS("NodeLocal cache serving", "addresses", r.addrs, "upstream", upstreamTCP.String(), "hostResolvers", o.UpstreamServers)
	if o.SetupIptables {
		r.ipt = rules.NewManager(rules.Options{Binary: o.IptablesBinary})
	}
	// The servers outlive ctx by the drain period: they stop when
	// serveCtx ends.
	serveCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.errc, r.failed = make(chan error, 8), make(chan struct{})
	if err := r.startServers(serveCtx); err != nil {
		cancel()
		r.closeListeners()
		r.wg.Wait()
		r.teardownInterfaceOnError()
		return err
	}
	graceful := r.syncUntilDone(ctx)
	if graceful && !o.SkipTeardown {
		r.drain()
	}
	cancel()
	return r.stop()
}

// cacheRun is one run of the cache: what RunCacheWithOptions sets up and
// must take down.
type cacheRun struct {
	o         *CacheOptions
	reg       *prometheus.Registry
	setupErrs *prometheus.CounterVec
	nif       *netif.Manager // nil without --setup-interface
	ipt       *rules.Manager // nil without --setup-iptables, and once torn down
	ruleSet   []rules.Rule
	h         *cache.Handler
	addrs     []string
	listeners []*server.Listener

	mu       sync.Mutex
	lastSync error
	synced   bool

	wg       sync.WaitGroup
	errc     chan error
	failed   chan struct{} // closed when a server fails
	failOnce sync.Once
	errs     []error // teardown errors, returned at the end
}

// countErr counts each error of err by kind in the setup-errors metric.
func (r *cacheRun) countErr(err error) {
	for _, e := range flatten(err) {
		r.setupErrs.WithLabelValues(errKind(e)).Inc()
	}
}

// setupInterface puts the local IPs on the interface (--setup-interface).
func (r *cacheRun) setupInterface() error {
	o := r.o
	if !o.SetupInterface {
		return nil
	}
	r.nif = netif.New(netif.Options{Name: o.InterfaceName, Fallback: o.FallbackIface, IPs: o.LocalIPs, IPCommand: o.IPCommand})
	res, err := r.nif.Ensure()
	if err != nil {
		r.countErr(err)
		return fmt.Errorf("setting up the interface: %w", err)
	}
	klog.InfoS("Local IPs in place", "device", res.Device, "fallback", res.Fallback, "added", res.AddedAddress)
	return nil
}

// teardownInterfaceOnError removes the local IPs after a failed start,
// unless --skip-teardown.
func (r *cacheRun) teardownInterfaceOnError() {
	if r.nif != nil && !r.o.SkipTeardown {
		_ = r.nif.Teardown()
	}
}

// routes are the cluster zones to upstreamTCP, with the pods' addresses
// as ECS when --client-subnet, and every other name to the host resolvers,
// unless "." is a cluster zone: then every name goes to upstreamTCP.
func (r *cacheRun) routes(upstreamTCP *upstream.TCPUpstream) []upstream.Route {
	o := r.o
	var routes []upstream.Route
	for _, z := range o.ClusterZones {
		routes = append(routes, upstream.Route{Zone: z, Upstream: upstreamTCP, Label: "cluster", ClientSubnet: o.ClientSubnet})
	}
	switch {
	case slices.Contains(o.ClusterZones, "."):
		// Every name goes to partition-dns, which forwards it as the
		// asking pod's TP's kube-dns ConfigMap says.
	case len(o.UpstreamServers) > 0:
		routes = append(routes, upstream.Route{Zone: ".", Upstream: upstream.NewServersUpstream(o.UpstreamServers, o.UpstreamTimeout), Label: "host"})
	default:
		klog.InfoS("No host resolvers: names outside the cluster zones get SERVFAIL")
	}
	return routes
}

// listen opens partition-dns's sockets on every local IP: one UDP socket
// per core sharing the port (SO_REUSEPORT) and one TCP socket.
func (r *cacheRun) listen() error {
	for _, ip := range r.o.LocalIPs {
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(r.o.DNSPort))
		l, err := server.Listen(addr, runtime.GOMAXPROCS(0))
		if err != nil {
			r.setupErrs.WithLabelValues("listen").Inc()
			r.closeListeners()
			r.teardownInterfaceOnError()
			return err
		}
		r.addrs = append(r.addrs, addr)
		r.listeners = append(r.listeners, l)
	}
	return nil
}

func (r *cacheRun) closeListeners() {
	for _, l := range r.listeners {
		l.Close()
	}
}

// syncNet re-ensures the interface and the rules, and records the outcome
// for /readyz.
func (r *cacheRun) syncNet() {
	var errs []error
	if r.nif != nil {
		if _, err := r.nif.Ensure(); err != nil {
			r.countErr(err)
			errs = append(errs, err)
		}
	}
	if r.ipt != nil {
		res, err := r.ipt.Sync(r.ruleSet)
		if res.Added > 0 || res.Removed > 0 {
			klog.InfoS("Repaired iptables rules", "added", res.Added, "removed", res.Removed)
		}
		if err != nil {
			r.countErr(err)
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		klog.ErrorS(err, "Network setup")
	}
	r.mu.Lock()
	r.lastSync, r.synced = err, true
	r.mu.Unlock()
}

// networkReady is /readyz's check: the last network sync's error.
func (r *cacheRun) networkReady() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.synced {
		return errors.New("network not set up yet")
	}
	return r.lastSync
}

// serve runs f until it returns; an error fails the run.
func (r *cacheRun) serve(f func() error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := f(); err != nil {
			r.errc <- err
			r.failOnce.Do(func() { close(r.failed) })
		}
	}()
}

// startServers starts DNS on every listener, /metrics (with /healthz and
// /readyz) on --metrics-listen-address and /healthz on the local IPs'
// --health-port, all until ctx ends.
func (r *cacheRun) startServers(ctx context.Context) error {
	opsSrv := ops.New(r.reg)
	opsSrv.AddHealthz("dns", func() error { return nil })
	opsSrv.AddReadyz("network", r.networkReady)
	for _, l := range r.listeners {
		r.serve(func() error { return server.Serve(ctx, l, r.h) })
	}
	if r.o.MetricsAddress != "" {
		ln, err := net.Listen("tcp", r.o.MetricsAddress)
		if err != nil {
			r.setupErrs.WithLabelValues("listen").Inc()
			return fmt.Errorf("metrics listener: %w", err)
		}
		r.serve(func() error { return opsSrv.ServeListener(ctx, ln) })
	}
	if r.o.HealthPort > 0 {
		for _, ip := range r.o.LocalIPs {
			ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(r.o.HealthPort)))
			if err != nil {
				// Health on the local IPs is a convenience; metrics and
				// DNS keep working.
				r.setupErrs.WithLabelValues("listen").Inc()
				klog.ErrorS(err, "Health listener", "ip", ip)
				continue
			}
			r.serve(func() error { return opsSrv.ServeListener(ctx, ln) })
		}
	}
	return nil
}

// syncUntilDone keeps the network set up every --sync-interval until ctx
// ends (graceful) or a server fails. Rules go in only once the cache is
// serving, so they never point traffic at a cache that failed to start.
func (r *cacheRun) syncUntilDone(ctx context.Context) (graceful bool) {
	r.syncNet()
	t := time.NewTicker(r.o.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return true
		case <-r.failed:
			return false
		case <-t.C:
			r.syncNet()
		}
	}
}

// teardownRules removes the iptables rules once: before the drain on a
// graceful stop, at the end otherwise.
func (r *cacheRun) teardownRules() {
	if r.ipt == nil {
		return
	}
	res, err := r.ipt.Teardown(rules.Families(r.ruleSet)...)
	klog.InfoS("Removed iptables rules", "count", res.Removed)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	r.ipt = nil
}

// drain moves the traffic away before the sockets close, so a graceful
// stop loses no query: it fails the watcher's probe and keeps serving
// while the watcher removes the switch rules, or removes our own rules
// first.
func (r *cacheRun) drain() {
	r.h.SetDraining(true)
	r.teardownRules()
	if r.o.DrainDuration > 0 {
		klog.InfoS("Draining: failing the watcher's probe while still serving", "duration", r.o.DrainDuration)
		select {
		case <-time.After(r.o.DrainDuration):
		case <-r.failed:
		}
	}
}

// stop waits for the servers (whose context is cancelled), then tears the
// rules and the interface down unless --skip-teardown.
func (r *cacheRun) stop() error {
	// server.Serve can miss a shutdown that lands before a server has
	// started; closing the sockets after a grace period ends it for sure.
	stopped := make(chan struct{})
	go func() { r.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		r.closeListeners()
		<-stopped
	}
	r.h.Wait()
	select {
	case err := <-r.errc:
		r.errs = append(r.errs, err)
	default:
	}
	if r.o.SkipTeardown {
		klog.InfoS("Leaving the interface and the iptables rules in place (--skip-teardown)")
		return errors.Join(r.errs...)
	}
	r.teardownRules()
	if r.nif != nil {
		if err := r.nif.Teardown(); err != nil {
			r.errs = append(r.errs, err)
		}
	}
	return errors.Join(r.errs...)
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
