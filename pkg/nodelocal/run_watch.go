package nodelocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/nodelocal/rules"
	"github.com/tpkit-dev/tpkit/pkg/nodelocal/watch"
	"github.com/tpkit-dev/tpkit/pkg/ops"
)

// WatchOptions are the node-cache-watch flags, parsed.
type WatchOptions struct {
	LocalIPs       []netip.Addr
	DNSPort        int
	HealthPort     int
	ProbeIP        netip.Addr
	Watch          watch.Config
	IptablesBinary string
	MetricsAddress string
}

// ParseWatchFlags parses the node-cache-watch arguments. Its errors are
// *UsageError.
func ParseWatchFlags(args []string, getenv func(string) string) (o *WatchOptions, err error) {
	o, err = parseWatchFlags(args, getenv)
	return o, usage(err)
}

func parseWatchFlags(args []string, getenv func(string) string) (*WatchOptions, error) {
	cmd := cliflag.NewCommand("partition-dns node-cache-watch", "Watches the node-local cache with DNS probes and switches the kube-dns service IP's traffic between it and partition-dns.", os.Stdout)
	fs := cmd.Flags
	// klog's flags (--v, --vmodule, ...) are accepted in every mode.
	klog.InitFlags(cmd.Logging)
	def := watch.Defaults()
	var (
		localIPs     = fs.String("local-ip", DefaultLocalIPs(getenv), "The cache's --local-ip: the rule set covers each; the NOTRACK rules of the non-link-local ones (the kube-dns service IP) are the switch.")
		dnsPort      = fs.Int("dns-port", 53, "The cache's DNS port.")
		healthPort   = fs.Int("health-port", 8080, "The cache's health port (for its NOTRACK rules); 0 for none.")
		probeIP      = fs.String("probe-ip", "", "IP to probe; default the first link-local --local-ip (never the switched service IP).")
		probeName    = fs.String("probe-name", def.ProbeName, "Name to query; CHAOS TXT for id.server. and hostname.bind., IN A otherwise.")
		interval     = fs.Duration("interval", def.Interval, "Time between probes.")
		timeout      = fs.Duration("probe-timeout", def.Timeout, "Timeout of one probe.")
		failures     = fs.Int("failure-threshold", def.FailureThreshold, "Failed probes in a row that send kube-dns traffic to the endpoints.")
		successes    = fs.Int("success-threshold", def.SuccessThreshold, "Good probes in a row that send it back to the local cache.")
		syncInterval = fs.Duration("sync-interval", 60*time.Second, "How often the rule set is re-ensured.")
		skipTeardown = fs.Bool("skip-teardown", false, "Leave the rules in place on shutdown.")
		iptBin       = fs.String("iptables", "iptables", "iptables command: iptables, iptables-nft, iptables-legacy or a path.")
		metricsAddr  = fs.String("metrics-listen-address", "0.0.0.0:9254", "Address for /metrics, /healthz and /readyz; empty disables.")
	)
	if err := cmd.Parse(args); err != nil {
		return nil, err
	}
	if len(cmd.Args()) > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", cmd.Args())
	}
	o := &WatchOptions{DNSPort: *dnsPort, HealthPort: *healthPort, IptablesBinary: *iptBin, MetricsAddress: *metricsAddr}
	var err error
	if o.LocalIPs, err = ParseIPList(*localIPs); err != nil {
		return nil, fmt.Errorf("--local-ip: %w", err)
	}
	for _, p := range []struct {
		n    string
		v    int
		zero bool
	}{{"dns-port", o.DNSPort, false}, {"health-port", o.HealthPort, true}} {
		if err := validPort(p.n, p.v, p.zero); err != nil {
			return nil, err
		}
	}
	if o.MetricsAddress != "" {
		if err := cliflag.ValidateListenAddress(o.MetricsAddress); err != nil {
			return nil, fmt.Errorf("--metrics-listen-address %q: %v", o.MetricsAddress, err)
		}
	}
	if o.ProbeIP, err = probeIPOf(*probeIP, o.LocalIPs); err != nil {
		return nil, err
	}
	o.Watch = watch.Config{
		Target:    net.JoinHostPort(o.ProbeIP.Unmap().String(), strconv.Itoa(o.DNSPort)),
		ProbeName: *probeName, Interval: *interval, Timeout: *timeout,
		FailureThreshold: *failures, SuccessThreshold: *successes,
		SyncInterval: *syncInterval, SkipTeardown: *skipTeardown,
		Rules: rules.Build(rules.Config{LocalIPs: o.LocalIPs, DNSPort: o.DNSPort, HealthPort: o.HealthPort}),
	}
	if err := validateWatch(&o.Watch); err != nil {
		return nil, err
	}
	return o, nil
}

// probeIPOf is the IP the watcher probes: --probe-ip, or the first local
// IP that is not switched (link-local). A switched IP is refused: after a
// failover, queries to it reach kube-dns, so the probe would test kube-dns
// and never switch back.
func probeIPOf(flag string, local []netip.Addr) (netip.Addr, error) {
	probe := local[0]
	if flag != "" {
		var err error
		if probe, err = netip.ParseAddr(flag); err != nil {
			return netip.Addr{}, fmt.Errorf("--probe-ip: %q is not an IP address", flag)
		}
	} else {
		for _, ip := range local {
			if !rules.IsSwitched(ip) {
				probe = ip
				break
			}
		}
	}
	for _, ip := range local {
		if ip == probe.Unmap() && rules.IsSwitched(ip) {
			return netip.Addr{}, fmt.Errorf("the probe IP %s is a switched (non-link-local) IP; probe a link-local IP such as %s", ip, LinkLocalIP)
		}
	}
	return probe, nil
}

// validateWatch checks the probe timing and thresholds.
func validateWatch(c *watch.Config) error {
	switch {
	case c.Interval <= 0 || c.Timeout <= 0 || c.SyncInterval <= 0:
		return errors.New("--interval, --probe-timeout and --sync-interval must be positive")
	case c.FailureThreshold < 1 || c.SuccessThreshold < 1:
		return errors.New("--failure-threshold and --success-threshold must be at least 1")
	case c.Timeout > c.Interval:
		return errors.New("--probe-timeout must not exceed --interval")
	}
	return nil
}

// RunWatch runs `partition-dns node-cache-watch` with args (flags only)
// until ctx ends. Errors are classified as RunCache's.
func RunWatch(ctx context.Context, args []string) error {
	o, err := ParseWatchFlags(args, nil)
	if err != nil {
		return err
	}
	return RunWatchWithOptions(ctx, o)
}

// RunWatchWithOptions is RunWatch after flag parsing.
func RunWatchWithOptions(ctx context.Context, o *WatchOptions) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mgr := rules.NewManager(rules.Options{Binary: o.IptablesBinary})
	w, err := watch.New(o.Watch, mgr, reg)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	opsErr := make(chan error, 1)
	if o.MetricsAddress != "" {
		ln, err := net.Listen("tcp", o.MetricsAddress)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		s := ops.New(reg)
		s.AddHealthz("watcher", func() error { return nil })
		s.AddReadyz("rules", w.Healthy)
		go func() { opsErr <- s.ServeListener(runCtx, ln) }()
	} else {
		opsErr <- nil
	}
	err = w.Run(runCtx)
	cancel()
	return errors.Join(err, <-opsErr)
}
