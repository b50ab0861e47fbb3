package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/internal/memlimit"
	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/kubednsconfig"
	"github.com/tpkit-dev/tpkit/pkg/dns/server"
	"github.com/tpkit-dev/tpkit/pkg/dns/source"
	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
	"github.com/tpkit-dev/tpkit/pkg/nodelocal"
	"github.com/tpkit-dev/tpkit/pkg/ops"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// listFlag is a repeatable flag that also accepts comma-separated values
// (split by cliflag.SplitList). The first use replaces the default; unlike
// cliflag.List, later uses add to it.
type listFlag struct {
	vals []string
	set  bool
}

func (l *listFlag) String() string { return strings.Join(l.vals, ",") }

// Type names the value in --help.
func (l *listFlag) Type() string { return "strings" }

func (l *listFlag) Set(v string) error {
	if !l.set {
		l.vals, l.set = nil, true
	}
	l.vals = append(l.vals, cliflag.SplitList(v)...)
	return nil
}

type config struct {
	part             partition.Options
	zones            listFlag
	listen           string
	metricsListen    string
	healthListen     string
	readyListen      string
	ttl              uint
	upstreams        listFlag
	resolvConf       string
	pods             string
	dnsNamespaces    listFlag
	dnsTenant        string
	isolation        bool
	unknownSources   string
	systemPartition  string
	udpSockets       int
	publishInterval  time.Duration
	listPageSize     int64
	udpBatch         int
	cacheSize        int
	cacheMaxTTL      time.Duration
	cacheMaxNegative time.Duration
	forwardTimeout   time.Duration
	maxForwards      int
	forwardsPerSrc   float64
	allowRecursion   listFlag
	recursionCIDRs   []netip.Prefix
	trustedFwd       listFlag
	trustedCIDRs     []netip.Prefix
	podCIDR          listFlag
	podCIDRs         []netip.Prefix
	unknownPodWait   time.Duration
	profiling        bool
	gcPercent        int
	memoryLimit      string
	configMap        string
	configMapNS      string
}

// short is what --help says partition-dns is.
const short = "partition-dns answers the cluster DNS zones from every tenant partition of an Arktos scale-out cluster, and forwards other names."

// parseFlags parses partition-dns's command line; --help and --version
// write to out and return flag.ErrHelp and cliflag.ErrVersion.
func parseFlags(args []string, out io.Writer) (*config, error) {
	cmd := cliflag.NewCommand("partition-dns", short, out)
	for _, name := range subcommandNames() {
		cmd.Subcommands = append(cmd.Subcommands, cliflag.Subcommand{Name: name, Short: subcommands[name].short})
	}
	fs := cmd.Flags
	klog.InitFlags(cmd.Logging)
	c := &config{zones: listFlag{vals: []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}}}
	c.part.AddFlags(fs)
	fs.Var(&c.zones, "zone", "Zone answered from the tenant partitions; repeatable or comma-separated. A reverse name (in-addr.arpa, ip6.arpa) of no cluster address goes to the upstreams, as kubeadm's CoreDNS does with fallthrough. The first use replaces the default.")
	fs.StringVar(&c.listen, "listen", ":53", "Address for DNS over UDP and TCP.")
	fs.StringVar(&c.metricsListen, "metrics-listen", ":9153", "Address of the Prometheus /metrics endpoint; empty disables it.")
	fs.StringVar(&c.healthListen, "health-listen", ":8080", "Address of /health (as CoreDNS's health plugin), /healthz, /livez and /readyz; empty disables it.")
	fs.StringVar(&c.readyListen, "ready-listen", ":8181", "Address of /ready (as CoreDNS's ready plugin): 200 once every reachable partition has synced and is answered from; empty disables it.")
	fs.UintVar(&c.ttl, "ttl", 5, "TTL in seconds of cluster answers (0-3600); the SOA's TTL is min(ttl, 300).")
	fs.Var(&c.upstreams, "upstream", "Upstream nameserver (host or host:port) for names outside the zones; repeatable. Default: the nameservers of --resolv-conf. \"none\" answers such names REFUSED.")
	fs.StringVar(&c.resolvConf, "resolv-conf", "/etc/resolv.conf", "File whose nameservers are the default upstreams.")
	fs.StringVar(&c.pods, "pods", "insecure", "Pod records a-b-c-d.<ns>.pod.<zone>: disabled, insecure (any address in an existing namespace) or verified (only addresses of pods in that namespace).")
	fs.Var(&c.dnsNamespaces, "dns-namespace", "Serve only these namespaces, plus default; only their services and endpoints are read from the partitions. Repeatable. Empty serves all.")
	fs.StringVar(&c.dnsTenant, "dns-tenant", "", "Serve only this tenant, and the system tenant's default/kubernetes (kubernetes.default). Empty serves all.")
	fs.BoolVar(&c.isolation, "tenant-isolation", false, "A pod of tenant A asking for a name of regular tenant B gets NXDOMAIN; system-tenant names stay visible to all.")
	fs.StringVar(&c.unknownSources, "isolation-unknown-sources", "allow", "With --tenant-isolation, whether queriers that are not a known pod see every tenant (allow) or only the system tenant (deny).")
	fs.StringVar(&c.systemPartition, "system-partition", "", "Partition (name or 0-based index) answering system-tenant names for queriers that are not a known pod. Default: the first.")
	fs.IntVar(&c.udpBatch, "udp-batch", 32, "UDP packets one recvmmsg and one sendmmsg move, with one goroutine per UDP socket (Linux); 1 reads and writes one packet per call, with GOMAXPROCS readers per socket.")
	fs.IntVar(&c.udpSockets, "udp-sockets", runtime.GOMAXPROCS(0), "UDP sockets sharing the port through SO_REUSEPORT.")
	fs.Int64Var(&c.listPageSize, "list-page-size", source.DefaultPageSize, "Objects per page of the lists partition-dns reads from the partitions (limit and continue). Each page becomes index records before the next is read, and all partitions read one page at a time, so start-up memory stays near the index's; -1 reads each list in one piece.")
	fs.DurationVar(&c.publishInterval, "publish-interval", 10*time.Millisecond, "Least time between two index publishes; a burst of changes becomes one publish.")
	fs.IntVar(&c.cacheSize, "cache-size", 10000, "Answers kept by the forward cache, successes and denials each; 0 or negative disables it.")
	fs.DurationVar(&c.cacheMaxTTL, "cache-max-ttl", 30*time.Second, "Longest a forwarded positive answer is cached.")
	fs.DurationVar(&c.cacheMaxNegative, "cache-max-negative-ttl", 30*time.Second, "Longest a forwarded NXDOMAIN or NODATA is cached.")
	fs.DurationVar(&c.forwardTimeout, "forward-timeout", 2*time.Second, "Time allowed to one upstream for one query.")
	fs.IntVar(&c.maxForwards, "max-concurrent-forwards", server.DefaultMaxConcurrentForwards, "Queries for names outside the zones that may wait on an upstream at once; more are dropped over UDP (no answer, so that a client does not ask again at once) and get SERVFAIL over TCP.")
	fs.Float64Var(&c.forwardsPerSrc, "forwards-per-source", server.DefaultForwardsPerSource, "Queries a second for names outside the zones that one source address may have forwarded (bursts of twice as many) once half of --max-concurrent-forwards wait upstream; more from that source are dropped, so one client's flood cannot take the forwarding slots of others.")
	c.allowRecursion = listFlag{vals: prefixStrings(server.DefaultAllowRecursion)}
	fs.Var(&c.allowRecursion, "allow-recursion", "CIDRs whose queries for names outside the zones are forwarded; others get REFUSED. Names in the zones are answered to anyone. Repeatable or comma-separated; the first use replaces the default (loopback, RFC 1918, RFC 6598, link-local, IPv6 ULA).")
	fs.Var(&c.podCIDR, "pod-cidr", "CIDRs of the pods' addresses. A querier there that no TP has reported yet is a new pod (the kubelet reports its address after the pod's containers start): its question for a system name several TPs have waits up to --unknown-pod-wait for the pod's TP to be known, rather than get --system-partition's answer. Repeatable or comma-separated. Empty: no query waits.")
	fs.DurationVar(&c.unknownPodWait, "unknown-pod-wait", 2*time.Second, "Longest a question from an unknown address in --pod-cidr waits for its pod (see --pod-cidr); 0 waits never.")
	fs.Var(&c.trustedFwd, "trusted-forwarders", "CIDRs of node-local caches (partition-dns node-cache) whose EDNS Client Subnet option names the asking pod: from them, a /32 or /128 ECS address is the querier's identity (its partition and tenant), and answers carry the scope they depended on. Set to the node CIDRs. Repeatable or comma-separated. Empty: ECS is ignored.")
	fs.StringVar(&c.memoryLimit, "memory-limit", "auto", "Soft memory limit of the Go runtime (GOMEMLIMIT): a quantity such as 150Mi, none, or auto for 85% of the container's (cgroup's) memory limit but at least 32Mi below it (for the program's own code pages). Near it the collector runs more often, so a start's peak stays inside the container's limit instead of ending in an OOM kill.")
	fs.IntVar(&c.gcPercent, "gc-percent", 25, "Go GC target percentage (GOGC). The index is long-lived and queries allocate little, so a lower value than Go's 100 keeps memory near the live set; negative keeps Go's default. While the first lists load under a memory limit (--memory-limit), the collector runs at 100 at least: the limit bounds that peak.")
	fs.StringVar(&c.configMap, "config-map", "kube-dns", "Name of the ConfigMap, in --config-map-namespace of each TP's system tenant, whose stubDomains and upstreamNameservers (kube-dns's keys) apply to that TP's pods' names outside the zones (pkg/dns/kubednsconfig); empty reads none.")
	fs.StringVar(&c.configMapNS, "config-map-namespace", "kube-system", "Namespace of --config-map.")
	fs.BoolVar(&c.profiling, "profiling", false, "Serve Go profiles under /debug/pprof/ on --health-listen.")
	if err := cmd.Parse(args); err != nil {
		return nil, err
	}
	if len(cmd.Args()) > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", cmd.Args())
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := c.validateValues(); err != nil {
		return nil, err
	}
	var err error
	// Empty, not nil: --allow-recursion= allows none.
	if c.recursionCIDRs, err = parseCIDRs("--allow-recursion", c.allowRecursion.vals, "10.0.0.0/8"); err != nil {
		return nil, err
	}
	if c.podCIDRs, err = parseCIDRs("--pod-cidr", c.podCIDR.vals, "10.244.0.0/16"); err != nil {
		return nil, err
	}
	if c.unknownPodWait < 0 {
		return nil, fmt.Errorf("--unknown-pod-wait %s: must not be negative", c.unknownPodWait)
	}
	if c.trustedCIDRs, err = parseCIDRs("--trusted-forwarders", c.trustedFwd.vals, "10.0.0.0/16"); err != nil {
		return nil, err
	}
	return c, nil
}

// validateValues checks the flags whose values have a range or a set of
// words.
func (c *config) validateValues() error {
	switch {
	case c.ttl > 3600:
		return fmt.Errorf("--ttl %d: must be at most 3600", c.ttl)
	case c.unknownSources != "allow" && c.unknownSources != "deny":
		return fmt.Errorf("--isolation-unknown-sources %q: want allow or deny", c.unknownSources)
	case len(c.zones.vals) == 0:
		return errors.New("--zone: at least one zone is needed")
	case c.listPageSize == 0 || c.listPageSize < -1:
		return fmt.Errorf("--list-page-size %d: must be positive, or -1 for lists in one piece", c.listPageSize)
	case c.udpBatch < 1 || c.udpBatch > 1024:
		return fmt.Errorf("--udp-batch %d: must be between 1 and 1024", c.udpBatch)
	case c.maxForwards < 1:
		return fmt.Errorf("--max-concurrent-forwards %d: must be at least 1", c.maxForwards)
	case !(c.forwardsPerSrc >= 0.1 && c.forwardsPerSrc <= 1e6):
		return fmt.Errorf("--forwards-per-source %g: must be between 0.1 and 1000000", c.forwardsPerSrc)
	}
	if _, err := memlimit.Resolve(c.memoryLimit, func() (int64, bool) { return 0, false }); err != nil {
		return err
	}
	if _, ok := server.ParsePodMode(c.pods); !ok {
		return fmt.Errorf("--pods %q: want disabled, insecure or verified", c.pods)
	}
	return nil
}

// parseCIDRs parses the values of a CIDR-list flag, masked; an empty list
// is an empty, not nil, slice.
func parseCIDRs(flag string, vals []string, example string) ([]netip.Prefix, error) {
	out := []netip.Prefix{}
	for _, v := range vals {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, fmt.Errorf("%s %q: want a CIDR such as %s", flag, v, example)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// subcommand is a mode of the binary other than the cluster DNS server.
type subcommand struct {
	run   func(context.Context, []string) error
	short string
}

// subcommands are the NodeLocal modes of the same binary, so one image
// serves the cluster DNS, the per-node cache and its HA switch.
var subcommands = map[string]subcommand{
	"node-cache":       {nodelocal.RunCache, "Node-local DNS cache in front of partition-dns (NodeLocal DNSCache's role)."},
	"node-cache-watch": {nodelocal.RunWatch, "Switches a node's DNS between node-cache and partition-dns as node-cache's health changes."},
}

func subcommandNames() []string {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// validate checks every address, zone, upstream and duration, so that a
// bad value stops the program at start with the flag's name.
func (c *config) validate() error {
	for _, a := range []struct {
		flag, addr string
		optional   bool
	}{{"--listen", c.listen, false}, {"--metrics-listen", c.metricsListen, true}, {"--health-listen", c.healthListen, true}, {"--ready-listen", c.readyListen, true}} {
		if a.addr == "" && a.optional {
			continue
		}
		if err := cliflag.ValidateListenAddress(a.addr); err != nil {
			return fmt.Errorf("%s %q: %v", a.flag, a.addr, err)
		}
	}
	for _, z := range c.zones.vals {
		if err := validateZone(z); err != nil {
			return fmt.Errorf("--zone %q: %v", z, err)
		}
	}
	if !(len(c.upstreams.vals) == 1 && c.upstreams.vals[0] == "none") {
		for _, u := range c.upstreams.vals {
			if u == "none" {
				return errors.New(`--upstream none: "none" stands alone, without other upstreams`)
			}
			if err := cliflag.ValidateHostPort(u, true); err != nil {
				return fmt.Errorf("--upstream %q: %v (or \"none\" alone)", u, err)
			}
		}
	}
	for _, d := range []struct {
		flag     string
		v        time.Duration
		positive bool
	}{{"--publish-interval", c.publishInterval, true}, {"--forward-timeout", c.forwardTimeout, true}, {"--cache-max-ttl", c.cacheMaxTTL, false}, {"--cache-max-negative-ttl", c.cacheMaxNegative, false}} {
		if d.v < 0 || (d.positive && d.v == 0) {
			return fmt.Errorf("%s %v: must be positive", d.flag, d.v)
		}
	}
	if c.udpSockets < 1 {
		return fmt.Errorf("--udp-sockets %d: must be at least 1", c.udpSockets)
	}
	return nil
}

// validateZone accepts a domain name with no empty label; the root is not
// a zone partition-dns can own.
func validateZone(z string) error {
	fq := dns.Fqdn(z)
	if _, ok := dns.IsDomainName(fq); !ok || fq == "." { // IsDomainName refuses empty labels
		return errors.New("not a domain name such as cluster.local")
	}
	return nil
}

// exitCode maps a subcommand's result to the process status: 2 for a bad
// command line, 0 for -h, 1 for any other failure.
func exitCode(err error) int {
	var usage *nodelocal.UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp), errors.Is(err, cliflag.ErrVersion):
		return 0
	case errors.As(err, &usage):
		return 2
	default:
		return 1
	}
}

func runSubcommand(name string, args []string) int {
	ctx, cancel := ops.SignalContext(context.Background())
	defer cancel()
	err := subcommands[name].run(ctx, args)
	if code := exitCode(err); code != 0 {
		fmt.Fprintf(os.Stderr, "partition-dns %s: %v\n", name, err)
		klog.Flush()
		return code
	}
	klog.Flush()
	return 0
}

func main() {
	if len(os.Args) > 1 && subcommands[os.Args[1]].run != nil {
		os.Exit(runSubcommand(os.Args[1], os.Args[2:]))
	}
	c, err := parseFlags(os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, cliflag.ErrVersion) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "partition-dns:", err)
		os.Exit(2)
	}
	ctx, cancel := ops.SignalContext(context.Background())
	defer cancel()
	if err := run(ctx, c); err != nil {
		klog.ErrorS(err, "partition-dns failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func systemIndex(s string, parts []*partition.Partition) (int, error) {
	if s == "" {
		return 0, nil
	}
	for _, p := range parts {
		if p.Name == s {
			return p.Index, nil
		}
	}
	if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(parts) {
		return i, nil
	}
	return 0, fmt.Errorf("--system-partition %q names no partition", s)
}

// nsAddrs are the addresses of ns.dns.<zone>: the listen address when it
// is specific, else this host's first addresses.
func nsAddrs(listen string) []netip.Addr {
	host, _, err := net.SplitHostPort(listen)
	if err == nil {
		if a, err := netip.ParseAddr(host); err == nil && !a.IsUnspecified() {
			return []netip.Addr{a.Unmap()}
		}
	}
	var out []netip.Addr
	var have4, have6 bool
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || p.Addr().IsLoopback() || p.Addr().IsLinkLocalUnicast() {
			continue
		}
		if x := p.Addr().Unmap(); x.Is4() && !have4 {
			out, have4 = append(out, x), true
		} else if x.Is6() && !have6 {
			out, have6 = append(out, x), true
		}
	}
	if len(out) == 0 {
		out = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return out
}

// startGCPercent is the collector's target percentage while the first
// lists load, when a memory limit bounds the heap and --gc-percent is lower.
// A start's garbage (decoded pages) is short-lived, and the limit, not the
// percentage, keeps its peak inside the container: at 600k objects over 10
// TPs in a 170 MiB pod, --gc-percent 25 collected about 320 times in a
// start, half of its CPU, where 100 collected about 90 times and was ready
// in 6.1-6.5 s instead of 7.4-7.7, with the same peak.
const startGCPercent = 100

// gcPercents returns the collector's target percentage while the first
// lists load and after them, for --gc-percent flag (negative: Go's, left
// alone) and whether a memory limit is in force; -1 leaves the target as
// it is.
func gcPercents(flag int, limited bool) (start, after int) {
	switch {
	case flag < 0:
		return -1, -1
	case limited && flag < startGCPercent:
		return startGCPercent, flag
	}
	return flag, -1
}

// run serves until ctx ends.
func run(ctx context.Context, c *config) error {
	if limit, err := memlimit.Resolve(c.memoryLimit, memlimit.System); err != nil {
		return err
	} else if limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
		klog.InfoS("Go memory limit set", "bytes", limit, "flag", c.memoryLimit)
	}
	gcAfterStart := -1
	if os.Getenv("GOGC") == "" {
		var start int
		start, gcAfterStart = gcPercents(c.gcPercent, debug.SetMemoryLimit(-1) < math.MaxInt64)
		if start >= 0 {
			debug.SetGCPercent(start)
		}
	}
	set, err := partition.New(c.part)
	if err != nil {
		return err
	}
	parts := set.Partitions()
	sys, err := systemIndex(c.systemPartition, parts)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range parts {
		names = append(names, p.Name)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	programming := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tpkit_dns_programming_latency_seconds",
		Help:    "Time from an object change reaching partition-dns to the answer reflecting it being served.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	reg.MustRegister(programming, set.Collector())

	b := index.NewBuilder(index.Options{Partitions: names, ObserveLatency: func(d time.Duration) { programming.Observe(d.Seconds()) }})
	src, err := source.New(set.Partitions(), b, source.Options{Namespaces: c.dnsNamespaces.vals, Tenant: c.dnsTenant, Resync: c.part.Resync, PageSize: c.listPageSize})
	if err != nil {
		return err
	}
	reg.MustRegister(src.Collector())

	def, servers, fwdTimeout, err := newForwarder(c, reg)
	if err != nil {
		return err
	}
	var fwd server.Forwarder
	if def != nil {
		fwd = def
	}
	if c.configMap != "" {
		// A TP's ConfigMap may name up to MaxUpstreams servers, each
		// tried in turn.
		fwdTimeout = max(fwdTimeout, kubednsconfig.MaxUpstreams*c.forwardTimeout)
		fs, err := kubednsconfig.New(kubednsconfig.Options{
			Partitions: names, Default: fwd, DefaultServers: servers,
			Cache:         upstream.Config{SuccessCapacity: max(c.cacheSize, 0), SuccessTTL: c.cacheMaxTTL, DenialCapacity: max(c.cacheSize, 0), DenialTTL: c.cacheMaxNegative},
			ServerTimeout: c.forwardTimeout, QueryTimeout: fwdTimeout, Registerer: reg,
		})
		if err != nil {
			return err
		}
		if err := watchKubeDNSConfigMaps(ctx, parts, c.configMapNS, c.configMap, fs); err != nil {
			return err
		}
		fwd = fs
	}

	mode, _ := server.ParsePodMode(c.pods)
	h, err := server.New(b, server.Options{
		Zones: c.zones.vals, TTL: uint32(c.ttl), Pods: mode,
		Isolation: c.isolation, AllowUnknownSources: c.unknownSources == "allow",
		SystemPartition: sys, NSAddrs: nsAddrs(c.listen),
		Forwarder: fwd, ForwardTimeout: fwdTimeout, Metrics: server.NewMetrics(reg),
		MaxConcurrentForwards: c.maxForwards, ForwardsPerSource: c.forwardsPerSrc, AllowRecursion: c.recursionCIDRs, TrustedForwarders: c.trustedCIDRs, PodCIDRs: c.podCIDRs, UnknownPodWait: c.unknownPodWait, UDPBatch: c.udpBatch,
	})
	if err != nil {
		return err
	}
	l, err := server.Listen(c.listen, c.udpSockets)
	if err != nil {
		return err
	}
	defer l.Close()

	errc := make(chan error, 4)
	serveOps(ctx, c, reg, src, b, h, errc)

	set.Start(ctx)
	src.Start(ctx)
	go b.Run(ctx, c.publishInterval)
	go func() { errc <- server.Serve(ctx, l, h) }()
	go answerWhenSynced(ctx, c, set, src, b, h, len(parts), gcAfterStart)
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
}

// newForwarder is the forwarder of names outside the zones: to
// --upstream, or the nameservers of --resolv-conf (servers, as host:port);
// nil (REFUSED) for --upstream none or when there are none. It is the
// resolver node-cache uses too (pkg/dns/upstream), without prefetch or
// serve-stale. timeout is the bound on one forwarded query,
// server.Options.ForwardTimeout: each server in turn gets
// --forward-timeout, so the query as a whole gets that times the servers
// (without it, the handler's own 5 s default cut a longer
// --forward-timeout, or a third of three servers, short).
func newForwarder(c *config, reg *prometheus.Registry) (fwd *upstream.Resolver, servers []string, timeout time.Duration, err error) {
	ups := c.upstreams.vals
	if len(ups) == 1 && ups[0] == "none" {
		return nil, nil, 0, nil
	}
	if len(ups) == 0 {
		var err error
		if ups, err = serversOf(c.resolvConf); err != nil || len(ups) == 0 {
			klog.InfoS("No upstream nameservers; names outside the zones get REFUSED", "resolvConf", c.resolvConf, "err", err)
			return nil, nil, 0, nil
		}
	}
	for i, u := range ups {
		ups[i] = upstream.HostPort(u)
	}
	timeout = time.Duration(len(ups)) * c.forwardTimeout
	size := max(c.cacheSize, 0) // negative: no cache
	r, err := upstream.NewResolver(upstream.ResolverConfig{
		Cache:           upstream.Config{SuccessCapacity: size, SuccessTTL: c.cacheMaxTTL, DenialCapacity: size, DenialTTL: c.cacheMaxNegative},
		Routes:          []upstream.Route{{Zone: ".", Upstream: upstream.NewServersUpstream(ups, c.forwardTimeout), Label: "upstream"}},
		UpstreamTimeout: timeout,
		MetricsPrefix:   "tpkit_dns_forward",
	}, reg)
	if err != nil {
		return nil, nil, 0, err
	}
	klog.InfoS("Forwarding other names", "upstreams", ups, "timeoutPerServer", c.forwardTimeout)
	return r, ups, timeout, nil
}

// serversOf reads the nameservers of a resolv.conf.
func serversOf(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return upstream.ParseResolvConf(f, nil)
}

// serveOps starts the operational servers: /metrics on --metrics-listen,
// CoreDNS's /ready on --ready-listen, /health, /healthz, /readyz and
// /readyz/partitions on --health-listen. Their errors go to errc.
func serveOps(ctx context.Context, c *config, reg *prometheus.Registry, src *source.Source, b *index.Builder, h *server.Handler, errc chan<- error) {
	if c.metricsListen != "" {
		m := ops.New(reg)
		go func() { errc <- m.Serve(ctx, c.metricsListen) }()
	}
	addReadyChecks := func(s *ops.Server) {
		s.AddReadyz("partitions", src.CheckReady)
		s.AddReadyz("dns-synced", func() error {
			if !h.Synced() {
				return errors.New("waiting for the first sync of the tenant partitions")
			}
			if !b.FirstListsPublished() {
				return errors.New("a tenant partition's first lists are not answered from yet")
			}
			return nil
		})
	}
	if c.readyListen != "" {
		// CoreDNS's ready plugin on its own port, so that a CoreDNS
		// manifest's readinessProbe (/ready on 8181) works unchanged.
		rs := ops.New(nil)
		addReadyChecks(rs)
		rs.Handle("/ready", rs.ReadinessHandler())
		go func() { errc <- rs.Serve(ctx, c.readyListen) }()
	}
	if c.healthListen != "" {
		hs := ops.New(nil)
		addReadyChecks(hs)
		hs.Handle("/health", hs.LivenessHandler()) // CoreDNS's health plugin
		hs.Handle("/readyz/partitions", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			for _, st := range src.States() {
				state := "ok"
				switch {
				case st.Stale:
					state = "stale (unreachable; serving its last known records): " + st.LastError
				case !st.Synced:
					state = "not synced"
				}
				if st.Endpoints != "" {
					state += " (endpoints from " + st.Endpoints + ")"
				}
				fmt.Fprintf(w, "%s: %s\n", st.Name, state)
			}
		}))
		if c.profiling {
			hs.Handle("/debug/pprof/", http.HandlerFunc(pprof.Index))
			hs.Handle("/debug/pprof/profile", http.HandlerFunc(pprof.Profile))
			hs.Handle("/debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
			hs.Handle("/debug/pprof/trace", http.HandlerFunc(pprof.Trace))
		}
		go func() { errc <- hs.Serve(ctx, c.healthListen) }()
	}
}

// answerWhenSynced publishes the index and marks the handler synced once
// every TP has synced, or after --partition-sync-timeout with what is
// there, naming the TPs still missing.
func answerWhenSynced(ctx context.Context, c *config, set *partition.Set, src *source.Source, b *index.Builder, h *server.Handler, partitions, gcAfterStart int) {
	timeout := c.part.SyncTimeout
	if timeout <= 0 {
		timeout = partition.DefaultSyncTimeout
	}
	deadline := time.Now().Add(timeout)
	all := src.WaitForSync(ctx, timeout)
	if all {
		// The set notices the source's sync on its own poll; wait for it, so
		// that once DNS answers, tpkit_partition_synced and /readyz say so too.
		all = set.WaitForSync(ctx, max(time.Until(deadline), time.Second))
	}
	if ctx.Err() != nil {
		return
	}
	b.Publish()
	h.MarkSynced()
	if gcAfterStart >= 0 {
		debug.SetGCPercent(gcAfterStart)
	}
	// The initial lists are decoded all at once; give that memory back.
	debug.FreeOSMemory()
	if all {
		klog.InfoS("All tenant partitions synced; answering", "partitions", partitions)
		return
	}
	for _, st := range src.States() {
		if !st.Synced {
			klog.InfoS("Tenant partition not synced yet; answering from the others", "partition", st.Name, "lastError", st.LastError)
		}
	}
}
