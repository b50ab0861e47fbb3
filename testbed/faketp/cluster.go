package faketp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/admission/daemonset"
	"github.com/tpkit-dev/tpkit/pkg/admission/tenantname"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Plugin is a named admission plugin of fake-tp's chain.
type Plugin struct {
	Name   string
	Plugin admission.ValidationInterface
}

// DefaultPlugins is the chain every TP runs unless Options.Plugins says
// otherwise: the plugins an Arktos TP runs that tpkit implements. To add a
// plugin to fake-tp, add it here; to turn one off, name it in
// Options.DisablePlugins (--disable-admission-plugins).
func DefaultPlugins() []Plugin {
	return []Plugin{
		{Name: daemonset.PluginName, Plugin: daemonset.New(daemonset.Config{})},
		{Name: tenantname.PluginName, Plugin: tenantname.New()},
	}
}

// Options configure a Cluster of TPs.
type Options struct {
	// Partitions is the number of TPs, named tp1..tpN; 1 when zero.
	Partitions int
	// Names overrides the names (and the number) of the TPs; they must
	// be distinct.
	Names []string
	// ServiceCIDRs are the TPs' service cluster IP ranges, one per TP in
	// the order of the names (see ServiceCIDRsOfTPs); none gives TP k
	// (from 0) 10.(96+k).0.0/16 (DefaultServiceCIDR).
	ServiceCIDRs []netip.Prefix
	// Listen is the address of the first TP; the others take the next
	// ports. Empty: every TP gets a free port on 127.0.0.1.
	Listen string
	// AdvertiseAddress: see TPOptions; every TP advertises the same
	// address, each with its own port.
	AdvertiseAddress string
	// KubeconfigDir receives NAME.kubeconfig per TP; a temporary directory
	// (removed by Stop) when empty.
	KubeconfigDir string
	// DataDir keeps each TP in DataDir/NAME.db (bbolt); memory when empty.
	DataDir string
	// Plugins is the admission chain; DefaultPlugins() when nil. Pass an
	// empty non-nil slice for none.
	Plugins []Plugin
	// DisablePlugins names plugins to leave out of the chain.
	DisablePlugins []string
	// History and BookmarkInterval: see TPOptions.
	History          int
	BookmarkInterval time.Duration
	// WatchList, EndpointSlices, Controllers and Loading: see TPOptions.
	// With Loading, Cluster.DoneLoading makes every TP ready.
	WatchList      WatchListMode
	EndpointSlices bool
	Controllers    []string
	Loading        bool
}

// Chain builds the admission chain of o.
func (o Options) Chain() (admission.Chain, error) {
	plugins := o.Plugins
	if plugins == nil {
		plugins = DefaultPlugins()
	}
	known := map[string]bool{}
	var chain admission.Chain
	for _, p := range plugins {
		known[p.Name] = true
		if !slices.Contains(o.DisablePlugins, p.Name) {
			chain = append(chain, p.Plugin)
		}
	}
	for _, d := range o.DisablePlugins {
		if !known[d] {
			return nil, fmt.Errorf("faketp: cannot disable unknown admission plugin %q", d)
		}
	}
	return chain, nil
}

// Cluster is a set of TPs started together.
type Cluster struct {
	tps    []*TP
	tmpDir string
}

// PartitionNames returns the names of the TPs of o: o.Names, else
// tp1..tpN. It refuses invalid and repeated names: two TPs of one name
// would share a kubeconfig and a data file.
func (o Options) PartitionNames() ([]string, error) {
	if len(o.Names) == 0 {
		var names []string
		for i := 1; i <= max(o.Partitions, 1); i++ {
			names = append(names, "tp"+strconv.Itoa(i))
		}
		return names, nil
	}
	seen := map[string]bool{}
	for _, n := range o.Names {
		if err := tenancy.ValidatePartitionName(n); err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, fmt.Errorf("the TP name %q is given twice: TP names must be distinct", n)
		}
		seen[n] = true
	}
	return slices.Clone(o.Names), nil
}

// Start starts the TPs of o, each serving when Start returns.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	names, err := o.PartitionNames()
	if err != nil {
		return nil, fmt.Errorf("faketp: %w", err)
	}
	cidrs, err := o.ServiceCIDRsOfTPs()
	if err != nil {
		return nil, fmt.Errorf("faketp: %w", err)
	}
	chain, err := o.Chain()
	if err != nil {
		return nil, err
	}
	if err := checkControllers(o.Controllers); err != nil {
		return nil, err
	}
	c := &Cluster{}
	kcDir := o.KubeconfigDir
	if kcDir == "" {
		if c.tmpDir, err = os.MkdirTemp("", "faketp-"); err != nil {
			return nil, err
		}
		kcDir = c.tmpDir
	} else if err := os.MkdirAll(kcDir, 0o755); err != nil {
		return nil, err
	}
	host, port := "", 0
	if o.Listen != "" {
		h, p, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("faketp: --listen %q: %w", o.Listen, err)
		}
		host = h
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("faketp: --listen %q: bad port", o.Listen)
		}
	}
	for i, name := range names {
		to := TPOptions{
			Name: name, KubeconfigDir: kcDir, Admission: chain, AdvertiseAddress: o.AdvertiseAddress,
			History: o.History, BookmarkInterval: o.BookmarkInterval, WatchList: o.WatchList, EndpointSlices: o.EndpointSlices,
			Controllers: o.Controllers, ServiceCIDR: cidrs[i], Loading: o.Loading,
		}
		if o.Listen != "" {
			p := 0
			if port != 0 {
				p = port + i
			}
			to.Listen = net.JoinHostPort(host, strconv.Itoa(p))
		}
		if o.DataDir != "" {
			to.DataFile = filepath.Join(o.DataDir, name+".db")
		}
		tp, err := NewTP(to)
		if err == nil {
			err = tp.Start(ctx)
		}
		if err != nil {
			_ = c.Stop()
			return nil, err
		}
		c.tps = append(c.tps, tp)
		klog.V(2).InfoS("Tenant partition ready", "tp", name, "url", tp.URL(), "kubeconfig", tp.KubeconfigPath(), "dataFile", to.DataFile, "serviceCIDR", cidrs[i])
	}
	return c, nil
}

// StartT starts a Cluster for a test and stops it when the test ends.
func StartT(t testing.TB, o Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("starting fake TPs: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping fake TPs: %v", err)
		}
	})
	return c
}

// TPs returns the TPs in order.
func (c *Cluster) TPs() []*TP { return slices.Clone(c.tps) }

// DoneLoading makes every TP of a cluster started with Options.Loading
// ready: its seed and generated objects are all in.
func (c *Cluster) DoneLoading() {
	for _, tp := range c.tps {
		tp.DoneLoading()
	}
}

// TP returns the TP called name, or nil.
func (c *Cluster) TP(name string) *TP {
	for _, tp := range c.tps {
		if tp.name == name {
			return tp
		}
	}
	return nil
}

// KubeconfigPaths returns the TPs' admin kubeconfigs in order: the value of
// Arktos's --tenant-server-kubeconfig, joined with commas.
func (c *Cluster) KubeconfigPaths() []string {
	var out []string
	for _, tp := range c.tps {
		out = append(out, tp.KubeconfigPath())
	}
	return out
}

// TenantServerKubeconfig returns the kubeconfigs joined with commas: the
// value of Arktos's --tenant-server-kubeconfig flag for these TPs.
func (c *Cluster) TenantServerKubeconfig() string {
	return strings.Join(c.KubeconfigPaths(), ",")
}

// Stop stops every TP and closes their stores.
func (c *Cluster) Stop() error {
	var errs []error
	for _, tp := range c.tps {
		errs = append(errs, tp.close())
	}
	if c.tmpDir != "" {
		errs = append(errs, os.RemoveAll(c.tmpDir))
	}
	return errors.Join(errs...)
}
