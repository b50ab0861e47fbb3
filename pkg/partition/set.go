package partition

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
)

// Partition is one TP: its name, its position in the flag, and its client.
type Partition struct {
	// Name identifies the TP in keys ("<tenant>_<Name>/<ns>/<name>"), logs
	// and metrics.
	Name string
	// Index is the TP's position in --tenant-server-kubeconfig, from 0.
	Index int
	// Config is the tenant-preserving client configuration of the TP.
	Config *rest.Config
	// HTTPClient is the HTTP client of Config, shared by every client of
	// the TP: a component that needs a typed clientset builds it with
	// kubernetes.NewForConfigAndClient(Config, HTTPClient).
	HTTPClient *http.Client
	// Client reads the TP's core/v1 and discovery.k8s.io/v1 objects. List
	// and watch through pkg/informer, whose paths reach every tenant
	// (/tenants/all/) and whose stores key by tenant; a short path means
	// only the caller's tenant.
	Client *informer.Clients

	endpoints informer.EndpointsMode
	health    *health
	synced    chan struct{} // closed once every tracked check is true

	mu     sync.Mutex
	checks []syncCheck
}

// syncCheck is one consumer's "has my first list of this TP arrived".
type syncCheck struct {
	name      string
	hasSynced func() bool
}

// TrackSynced makes the TP count as synced only once hasSynced (a feed's or
// informer's HasSynced) is true, along with every other tracked check. The
// consumers that read a TP register what they read, so Synced, readiness and
// tpkit_partition_synced say what the consumers have, not what some other
// cache has. name says what is waited for, in messages.
func (p *Partition) TrackSynced(name string, hasSynced func() bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks = append(p.checks, syncCheck{name, hasSynced})
}

// pending returns the names of the tracked checks not yet true, and whether
// any check is tracked.
func (p *Partition) pending() (names []string, tracked bool) {
	p.mu.Lock()
	checks := append([]syncCheck(nil), p.checks...)
	p.mu.Unlock()
	for _, c := range checks {
		if !c.hasSynced() {
			names = append(names, c.name)
		}
	}
	return names, len(checks) > 0
}

// EndpointsListWatch returns the list/watch of the TP's service endpoints
// in scope, core/v1 Endpoints or EndpointSlices as Options.Endpoints says.
func (p *Partition) EndpointsListWatch(s informer.Scope) (*informer.EndpointsListWatch, error) {
	return informer.NewEndpointsListWatch(p.Client, p.Name, p.endpoints, s)
}

// Status returns the TP's current health.
func (p *Partition) Status() Status { return p.health.status(p.Synced()) }

// Synced reports whether every check registered with TrackSynced is true
// (and at least one is registered).
func (p *Partition) Synced() bool {
	select {
	case <-p.synced:
		return true
	default:
		return false
	}
}

// Set is the fixed, ordered set of TPs.
type Set struct {
	partitions []*Partition
	byName     map[string]*Partition
	startOnce  sync.Once
}

// New builds a Set from o.KubeconfigPaths. A missing, unreadable or invalid
// kubeconfig is an error that names the file.
func New(o Options) (*Set, error) {
	if len(o.KubeconfigPaths) == 0 {
		return nil, fmt.Errorf("no tenant partitions: --tenant-server-kubeconfig is empty")
	}
	sources := make([]tenancy.PartitionSource, len(o.KubeconfigPaths))
	cfgs := make([]*rest.Config, len(o.KubeconfigPaths))
	for i, path := range o.KubeconfigPaths {
		raw, err := clientcmd.LoadFromFile(path)
		if err != nil {
			return nil, fmt.Errorf("tenant partition %d: reading kubeconfig %q: %w", i, path, err)
		}
		overrides := &clientcmd.ConfigOverrides{}
		if raw.CurrentContext == "" && len(raw.Contexts) == 1 {
			for name := range raw.Contexts { // a file without current-context but with one context means that one
				overrides.CurrentContext = name
			}
		}
		cfg, err := clientcmd.NewDefaultClientConfig(*raw, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("tenant partition %d: kubeconfig %q: %w", i, path, err)
		}
		cfgs[i] = cfg
		sources[i] = tenancy.PartitionSource{Path: path, Context: raw.CurrentContext}
	}
	// The rule the patched kubelet and kube-proxy apply too (tenancy.PartitionNames).
	names, err := tenancy.PartitionNames(sources, o.Names)
	if err != nil {
		return nil, err
	}
	return NewFromConfigs(names, cfgs, o)
}

// NewFromConfigs builds a Set from ready client configurations, for programs
// and tests that do not read kubeconfig files. o.KubeconfigPaths and o.Names
// are ignored.
func NewFromConfigs(names []string, cfgs []*rest.Config, o Options) (*Set, error) {
	if len(names) != len(cfgs) {
		return nil, fmt.Errorf("%d partition names for %d configs", len(names), len(cfgs))
	}
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("no tenant partitions")
	}
	s := &Set{byName: make(map[string]*Partition, len(names))}
	for i, cfg := range cfgs {
		name := names[i]
		if err := tenancy.ValidatePartitionName(name); err != nil {
			return nil, fmt.Errorf("tenant partition %d: %w", i, err)
		}
		if _, dup := s.byName[name]; dup {
			return nil, fmt.Errorf("tenant partition name %q is used twice; set --tenant-partition-names", name)
		}
		p, err := newPartition(name, i, cfg, o)
		if err != nil {
			return nil, fmt.Errorf("tenant partition %q: %w", name, err)
		}
		s.partitions = append(s.partitions, p)
		s.byName[name] = p
	}
	return s, nil
}

func newPartition(name string, index int, cfg *rest.Config, o Options) (*Partition, error) {
	h := newHealth(name, index)
	c := tenancyk8s.WrapConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &healthTransport{h: h, base: rt} })
	if c.QPS == 0 {
		c.QPS = 50
		if o.QPS != 0 {
			c.QPS = o.QPS
		}
	}
	if c.Burst == 0 {
		c.Burst = 100
		if o.Burst != 0 {
			c.Burst = o.Burst
		}
	}
	if c.UserAgent == "" {
		c.UserAgent = "tpkit/" + name
	}
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, err
	}
	cs, err := informer.NewClients(c, hc)
	if err != nil {
		return nil, err
	}
	return &Partition{
		Name:       name,
		Index:      index,
		Config:     c,
		HTTPClient: hc,
		Client:     cs,
		endpoints:  o.Endpoints,
		health:     h,
		synced:     make(chan struct{}),
	}, nil
}

// Partitions returns the TPs in flag order. The slice must not be modified.
func (s *Set) Partitions() []*Partition { return s.partitions }

// Get returns the TP called name.
func (s *Set) Get(name string) (*Partition, bool) {
	p, ok := s.byName[name]
	return p, ok
}

// Len is the number of TPs.
func (s *Set) Len() int { return len(s.partitions) }

// syncPoll is how often Start looks at the tracked checks of a TP that has
// not synced.
const syncPoll = 50 * time.Millisecond

// Start watches every TP's tracked checks until each TP has synced or ctx
// ends. The consumers run their own feeds. Calling it again does nothing.
//
// From then on each TP's changes of state (synced, stale, recovered) are
// logged to ctx's logger (klog.FromContext), one line per change.
func (s *Set) Start(ctx context.Context) {
	s.startOnce.Do(func() {
		logger := klog.FromContext(ctx)
		for _, p := range s.partitions {
			p.health.setLogger(logger)
			go s.awaitSync(ctx, p)
		}
	})
}

func (s *Set) awaitSync(ctx context.Context, p *Partition) {
	start := time.Now()
	if wait.PollUntilContextCancel(ctx, syncPoll, true, func(context.Context) (bool, error) {
		pending, tracked := p.pending()
		return tracked && len(pending) == 0, nil
	}) != nil {
		return // ctx ended
	}
	// Logged first, so that whoever sees the TP synced finds the line.
	p.health.markSynced(time.Since(start))
	close(p.synced)
}

// WaitForSync waits until every TP has synced, timeout passes, or ctx ends,
// and reports AllSynced. Use Options.SyncTimeout as the timeout at start, then
// serve what is there: TPs that did not sync keep retrying in the background.
func (s *Set) WaitForSync(ctx context.Context, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for _, p := range s.partitions {
		select {
		case <-p.synced:
		case <-timer.C:
			s.logLaggards()
			return s.AllSynced()
		case <-ctx.Done():
			return s.AllSynced()
		}
	}
	return true
}

func (s *Set) logLaggards() {
	for _, st := range s.Statuses() {
		if !st.Synced {
			klog.InfoS("Tenant partition has not synced yet; serving the others and retrying", "partition", st.Name, "reachable", st.Reachable, "lastError", st.LastError)
		}
	}
}

// AllSynced is true only when every TP has synced.
func (s *Set) AllSynced() bool {
	for _, p := range s.partitions {
		if !p.Synced() {
			return false
		}
	}
	return true
}

// Statuses returns every TP's health, in flag order.
func (s *Set) Statuses() []Status {
	out := make([]Status, len(s.partitions))
	for i, p := range s.partitions {
		out[i] = p.Status()
	}
	return out
}

// CheckAllSynced is a readiness check: nil when every TP has synced, else an
// error naming each TP that has not and why.
func (s *Set) CheckAllSynced() error {
	return s.check(func(st Status) bool { return st.Synced })
}

// CheckReachableSynced is a softer readiness check for servers that serve
// what they have: nil when every TP that is reachable has synced and at least
// one TP has synced.
func (s *Set) CheckReachableSynced() error {
	any := false
	for _, st := range s.Statuses() {
		any = any || st.Synced
	}
	if !any {
		return s.CheckAllSynced()
	}
	return s.check(func(st Status) bool { return st.Synced || !st.Reachable })
}

func (s *Set) check(ok func(Status) bool) error {
	var bad []string
	for _, st := range s.Statuses() {
		if ok(st) {
			continue
		}
		msg := fmt.Sprintf("partition %s not synced", st.Name)
		if pending, tracked := s.partitions[st.Index].pending(); !tracked {
			msg += " (nothing reads it)"
		} else if len(pending) > 0 {
			msg += " (waiting for " + strings.Join(pending, ", ") + ")"
		}
		if !st.Reachable && st.LastError != "" {
			msg += " (unreachable: " + st.LastError + ")"
		}
		bad = append(bad, msg)
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(bad, "; "))
}
