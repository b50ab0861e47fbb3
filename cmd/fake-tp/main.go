package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/ops"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// config is fake-tp's command line.
type config struct {
	opts        faketp.Options
	names       string
	serviceCIDR string
	disable     string
	seed        string
	generate    int
	genTenants  int
	adminListen string
	watchList   string
	controllers string
}

// parseFlags parses fake-tp's command line; --help and --version write to
// out and return flag.ErrHelp and cliflag.ErrVersion.
func parseFlags(args []string, out io.Writer) (*config, error) {
	cmd := cliflag.NewCommand("fake-tp", "fake-tp serves Arktos-shaped tenant partitions (API servers with their own store) for tests, demos and benchmarks.", out)
	fs := cmd.Flags
	klog.InitFlags(cmd.Logging)
	c := &config{}
	fs.IntVar(&c.opts.Partitions, "partitions", 1, "Number of tenant partitions to serve, named tp1..tpN.")
	fs.StringVar(&c.names, "partition-names", "", "Comma-separated TP names, distinct, overriding --partitions.")
	fs.StringVar(&c.serviceCIDR, "service-cidr", "", "Comma-separated service cluster IP ranges, as each TP's --service-cluster-ip-range: one IPv4 CIDR (/12 to /28) per TP, in the order of --partition-names (or tp1..tpN); ranges must not overlap. Empty: the TPs get 10.96.0.0/16, 10.97.0.0/16, ... in order (up to "+strconv.Itoa(faketp.MaxDefaultServiceCIDRs)+" TPs). A service without a cluster IP gets the next free one from its TP's range, from the 11th address on (10.96.0.11); an address a service asks for is kept, in the range or not.")
	fs.StringVar(&c.opts.Listen, "listen", "127.0.0.1:6443", "Address of the first TP; the others use the following ports. Port 0 picks free ports.")
	fs.StringVar(&c.opts.AdvertiseAddress, "advertise-address", "", "IP address every TP's master Endpoints (default/kubernetes of the system tenant, which Arktos's kube-proxy waits for) name, with the TP's port, as kube-apiserver's --advertise-address. Empty: the --listen host, or the host's default address when that is 0.0.0.0 or ::.")
	fs.StringVar(&c.opts.KubeconfigDir, "kubeconfig-dir", ".", "Directory that receives NAME.kubeconfig for every TP.")
	fs.StringVar(&c.opts.DataDir, "data-dir", "", "Directory of the TPs' bbolt files (NAME.db); empty keeps everything in memory.")
	fs.StringVar(&c.seed, "seed", "", "Directory of manifests: files in DIR go to every TP, files in DIR/NAME to TP NAME. A TP that starts from its --data-dir file is not seeded: its state, changes included, is kept.")
	fs.IntVar(&c.generate, "generate", 0, "Fill every TP with N running pods and N/10 services (with their Endpoints) and configmaps, in N/100 namespaces of the system tenant; not a TP that starts from its --data-dir file.")
	fs.IntVar(&c.genTenants, "generate-tenants", 0, "Spread --generate over the system tenant and this many regular tenants gen-tenant-0.., each living in one TP (round-robin in TP order), as a scale-out cluster holds them: every TP keeps N pods in all, split evenly between the system tenant and its regular tenants.")
	fs.StringVar(&c.disable, "disable-admission-plugins", "", "Comma-separated admission plugins to turn off (known: "+pluginNames()+").")
	fs.StringVar(&c.adminListen, "admin-listen", "127.0.0.1:6440", "Loopback address of the admin endpoint (faults, /healthz, /readyz, /metrics); empty disables it.")
	fs.IntVar(&c.opts.History, "watch-history", 100, "Events of each resource kept for watches, as Arktos's watch cache (100): a watch from an older resourceVersion gets a 410 Expired ERROR event.")
	fs.DurationVar(&c.opts.BookmarkInterval, "bookmark-interval", faketp.DefaultBookmarkInterval, "Interval of watch bookmarks.")
	fs.StringVar(&c.watchList, "watch-list", "ignored", "How TPs answer client-go watch-list requests (sendInitialEvents): ignored (as Arktos: client-go reflectors with WatchListClient on never sync); served (as kube-apiserver 1.32+); rejected (422, as kube-apiserver with WatchList off: clients fall back to list).")
	fs.BoolVar(&c.opts.EndpointSlices, "endpointslices", false, "Serve discovery.k8s.io/v1 EndpointSlices, mirrored by the server from the core/v1 Endpoints, for clients such as CoreDNS. Arktos has none, so they are off by default.")
	fs.StringVar(&c.controllers, "controllers", strings.Join(faketp.DefaultControllers(), ","), "Comma-separated controllers each TP runs, as Arktos's controller manager would: tenant (the Tenant system, and default, kube-system and kube-public in every new tenant), endpoints (core/v1 Endpoints of services with a selector). --controllers= runs none.")
	if err := cmd.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if c.opts.WatchList, err = faketp.ParseWatchListMode(c.watchList); err != nil {
		return nil, fmt.Errorf("--watch-list: %w", err)
	}
	if len(cmd.Args()) > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", cmd.Args())
	}
	if err := cliflag.ValidateListenAddress(c.opts.Listen); err != nil {
		return nil, fmt.Errorf("--listen %q: %v", c.opts.Listen, err)
	}
	if c.opts.AdvertiseAddress != "" && net.ParseIP(c.opts.AdvertiseAddress) == nil {
		return nil, fmt.Errorf("--advertise-address %q: not an IP address", c.opts.AdvertiseAddress)
	}
	if c.opts.History < 1 {
		return nil, fmt.Errorf("--watch-history %d: must be at least 1", c.opts.History)
	}
	if c.opts.BookmarkInterval <= 0 {
		return nil, fmt.Errorf("--bookmark-interval %v: must be positive", c.opts.BookmarkInterval)
	}
	if c.names != "" {
		c.opts.Names = cliflag.SplitList(c.names)
		if _, err := c.opts.PartitionNames(); err != nil {
			return nil, fmt.Errorf("--partition-names: %w", err)
		}
	}
	if c.opts.ServiceCIDRs, err = faketp.ParseServiceCIDRs(c.serviceCIDR); err != nil {
		return nil, fmt.Errorf("--service-cidr: %w", err)
	}
	c.opts.DisablePlugins = cliflag.SplitList(c.disable)
	c.opts.Controllers = append([]string{}, cliflag.SplitList(c.controllers)...) // empty, not nil: none
	for _, n := range c.opts.Controllers {
		if !slices.Contains(faketp.DefaultControllers(), n) {
			return nil, fmt.Errorf("--controllers: unknown controller %q (known: %s)", n, strings.Join(faketp.DefaultControllers(), ", "))
		}
	}
	if c.opts.Partitions < 1 && len(c.opts.Names) == 0 {
		return nil, errors.New("--partitions must be at least 1")
	}
	if _, err := c.opts.ServiceCIDRsOfTPs(); err != nil {
		return nil, fmt.Errorf("--service-cidr: %w", err)
	}
	if c.genTenants < 0 {
		return nil, errors.New("--generate-tenants must not be negative")
	}
	if c.generate < 0 {
		return nil, errors.New("--generate must not be negative")
	}
	if c.adminListen != "" {
		if err := cliflag.ValidateListenAddress(c.adminListen); err != nil {
			return nil, fmt.Errorf("--admin-listen %q: %v", c.adminListen, err)
		}
		if err := loopbackOnly(c.adminListen); err != nil {
			return nil, fmt.Errorf("--admin-listen: %w", err)
		}
	}
	return c, nil
}

func pluginNames() string {
	var n []string
	for _, p := range faketp.DefaultPlugins() {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

// loopbackOnly refuses admin addresses reachable from other hosts: the
// admin endpoint has no authentication.
func loopbackOnly(addr string) error {
	host, _, _ := net.SplitHostPort(addr) // checked by ValidateListenAddress
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address", addr)
	}
	return nil
}

func main() {
	c, err := parseFlags(os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, cliflag.ErrVersion) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-tp:", err)
		os.Exit(2)
	}
	ctx, cancel := ops.SignalContext(context.Background())
	defer cancel()
	if err := run(ctx, c); err != nil {
		klog.ErrorS(err, "fake-tp failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// generateGCPercent is the GC goal while generating: see generate.
const generateGCPercent = 25

// generate fills the TPs with their plans, as many TPs at a time as Go
// runs threads (the TPs are independent; one TP's plan is generated in
// order). TPs that started from their data file are left alone.
func generate(tps []*faketp.TP, plan map[string][]faketp.GenerateOptions) error {
	// Generating keeps nearly all it allocates, so Go's default GC goal
	// (twice the live heap) lets the peak reach up to twice what the
	// objects need. A tighter goal while generating bounds the peak (1.64M
	// objects: 2.6 GB rather than 3.0 GB) for a few more GC cycles; a GOGC
	// the user set is left alone.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(generateGCPercent))
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	errs := make([]error, len(tps))
	var wg sync.WaitGroup
	for i, tp := range tps {
		if tp.Loaded() { // a previous run's state, changes included
			klog.InfoS("Not generating objects in a tenant partition that started from its data file", "tp", tp.Name())
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, o := range plan[tp.Name()] {
				if err := tp.Generate(o); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// run serves until ctx ends.
func run(ctx context.Context, c *config) error {
	// Unready until the seed and the generated objects are in: a harness
	// polling /readyz then sees complete TPs.
	c.opts.Loading = true
	cluster, err := faketp.Start(ctx, c.opts)
	if err != nil {
		return err
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			klog.ErrorS(err, "Stopping TPs")
		}
		klog.InfoS("Stopped")
	}()
	if c.seed != "" {
		if err := cluster.SeedDir(c.seed); err != nil {
			return err
		}
	}
	if c.generate > 0 {
		start := time.Now()
		var names []string
		for _, tp := range cluster.TPs() {
			names = append(names, tp.Name())
		}
		plan := faketp.GeneratePlan(names, c.generate, c.genTenants)
		if err := generate(cluster.TPs(), plan); err != nil {
			return err
		}
		debug.FreeOSMemory() // what generating left over, at once
		klog.InfoS("Generated objects", "podsPerTP", c.generate, "regularTenants", c.genTenants, "took", time.Since(start))
	}
	cluster.DoneLoading()
	adminDone := make(chan error, 1)
	if c.adminListen != "" {
		srv := ops.New(nil)
		srv.Handle("/tps", faketp.AdminHandler(cluster))
		srv.Handle("/tps/", faketp.AdminHandler(cluster))
		srv.AddReadyz("partitions", func() error {
			for _, tp := range cluster.TPs() {
				if m := tp.OutageMode(); m != faketp.OutageNone {
					return fmt.Errorf("%s: outage %s", tp.Name(), m)
				}
			}
			return nil
		})
		go func() { adminDone <- srv.Serve(ctx, c.adminListen) }()
	} else {
		close(adminDone)
	}
	for _, tp := range cluster.TPs() {
		klog.InfoS("Serving tenant partition", "tp", tp.Name(), "url", tp.URL(), "kubeconfig", tp.KubeconfigPath(), "serviceCIDR", tp.ServiceCIDR())
	}
	select {
	case <-ctx.Done():
		return nil
	case err, ok := <-adminDone:
		if ok && err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
}
