package source

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Options scope what is served, after seed 000's --dns-namespace.
type Options struct {
	// Namespaces, when not empty, limits the served namespaces to these
	// plus "default".
	Namespaces []string
	// Tenant, when set, limits the served tenant to this one.
	Tenant string
	// Resync is the reflectors' resync period; 0 disables it. The stores
	// keep no objects, so a resync changes nothing in the index.
	Resync time.Duration
}

// Partition is what the source needs of a TP: partition.Partition is one.
type Partition struct {
	Name   string
	Index  int
	Client kubernetes.Interface
	// Status reports reachability; nil counts as reachable.
	Status func() partition.Status
}

// FromSet lists the partitions of a Set.
func FromSet(s *partition.Set) []Partition {
	var out []Partition
	for _, p := range s.Partitions() {
		out = append(out, Partition{Name: p.Name, Index: p.Index, Client: p.Client, Status: p.Status})
	}
	return out
}

// Source runs a reflector per partition and kind (namespaces, services,
// endpointslices, pods) whose store is the index itself.
type Source struct {
	b      *index.Builder
	parts  []Partition
	opts   Options
	ns     map[string]bool
	refs   [][]*cache.Reflector
	stores [][]*store
}

// New builds the reflectors; nothing runs before Start.
func New(parts []Partition, b *index.Builder, o Options) (*Source, error) {
	s := &Source{b: b, parts: parts, opts: o}
	if o.Tenant != "" {
		if err := tenancy.ValidateTenantName(o.Tenant); err != nil && o.Tenant != tenancy.SystemTenant {
			return nil, fmt.Errorf("--dns-tenant: %w", err)
		}
	}
	if len(o.Namespaces) > 0 {
		s.ns = map[string]bool{"default": true}
		for _, n := range o.Namespaces {
			if err := tenancy.ValidateLabel("namespace", n); err != nil {
				return nil, fmt.Errorf("--dns-namespace: %w", err)
			}
			s.ns[n] = true
		}
	}
	for _, p := range parts {
		refs, stores := s.reflectors(p)
		s.refs = append(s.refs, refs)
		s.stores = append(s.stores, stores)
	}
	return s, nil
}

// exposed applies the scope options.
func (s *Source) exposed(tenant, ns string) bool {
	if s.opts.Tenant != "" && tenant != s.opts.Tenant {
		return false
	}
	return s.ns == nil || s.ns[ns]
}

// rekey moves the tenant into the namespace field ("<tenant>/<ns>", or
// "<tenant>" for a namespace object). The stores below need no keys, but
// with watch-list a reflector first streams into a store of its own keyed by
// namespace/name, where two tenants' default/kubernetes would merge.
func rekey(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetName() == "" || strings.Contains(m.GetNamespace(), "/") {
		return
	}
	t := tenantOf(m)
	if _, ok := obj.(*corev1.Namespace); ok {
		m.SetNamespace(t)
		return
	}
	m.SetNamespace(t + "/" + m.GetNamespace())
}

func listWatch(c kubernetes.Interface, list func(context.Context, metav1.ListOptions) (runtime.Object, error), w func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.ListerWatcher {
	// The client decides whether reflectors may use watch-list (see
	// partition.Options.WatchList).
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := list(ctx, o)
			if err == nil {
				_ = meta.EachListItem(obj, func(o runtime.Object) error { rekey(o); return nil })
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := w(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(wi, func(e watch.Event) (watch.Event, bool) {
				if e.Object != nil && e.Type != watch.Error && e.Type != watch.Bookmark {
					rekey(e.Object)
				}
				return e, true
			}), nil
		},
	}, c)
}

func (s *Source) reflectors(p Partition) ([]*cache.Reflector, []*store) {
	c := p.Client
	var refs []*cache.Reflector
	var stores []*store
	mk := func(k kind, lw cache.ListerWatcher, obj runtime.Object) {
		st := &store{s: s, tp: p.Index, kind: k}
		refs = append(refs, cache.NewReflectorWithOptions(lw, obj, st, cache.ReflectorOptions{
			Name:            "partition-dns " + k.String() + " of " + p.Name,
			TypeDescription: k.String(),
			ResyncPeriod:    s.opts.Resync,
		}))
		stores = append(stores, st)
	}
	mk(namespaces, listWatch(c,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Namespaces().List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Namespaces().Watch(ctx, o)
		}), &corev1.Namespace{})
	mk(services, listWatch(c,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Services("").List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Services("").Watch(ctx, o)
		}), &corev1.Service{})
	mk(endpointSlices, listWatch(c,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.DiscoveryV1().EndpointSlices("").List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.DiscoveryV1().EndpointSlices("").Watch(ctx, o)
		}), &discoveryv1.EndpointSlice{})
	mk(pods, listWatch(c,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Pods("").List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Pods("").Watch(ctx, o)
		}), &corev1.Pod{})
	return refs, stores
}

// Start runs every reflector until ctx ends.
func (s *Source) Start(ctx context.Context) {
	for _, refs := range s.refs {
		for _, r := range refs {
			go r.RunWithContext(ctx)
		}
	}
}

// Synced reports whether partition i's reflectors have all listed once, and
// so delivered their initial objects to the index.
func (s *Source) Synced(i int) bool {
	if i < 0 || i >= len(s.stores) {
		return false
	}
	for _, st := range s.stores[i] {
		if !st.synced.Load() {
			return false
		}
	}
	return true
}

// WaitForSync waits until every partition has synced, ctx ends or timeout
// passes, and reports whether all synced. Unsynced partitions keep trying.
func (s *Source) WaitForSync(ctx context.Context, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		all := true
		for i := range s.parts {
			all = all && s.Synced(i)
		}
		if all {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// State is one partition's state as DNS sees it.
type State struct {
	Name      string
	Synced    bool
	Reachable bool
	// Stale: synced once, now unreachable; its last records are served.
	Stale     bool
	LastError string
}

// States returns every partition's state, in order.
func (s *Source) States() []State {
	out := make([]State, len(s.parts))
	for i, p := range s.parts {
		st := State{Name: p.Name, Synced: s.Synced(i), Reachable: true}
		if p.Status != nil {
			ps := p.Status()
			st.Reachable, st.LastError = ps.Reachable || (ps.LastError == "" && st.Synced), ps.LastError
		}
		st.Stale = st.Synced && !st.Reachable
		out[i] = st
	}
	return out
}

// CheckReady is the readiness check: every reachable partition has synced,
// and at least one has. A stale partition does not make the server unready:
// it still answers from the last known records.
func (s *Source) CheckReady() error {
	var bad []string
	any := false
	for _, st := range s.States() {
		any = any || st.Synced
		if !st.Synced && st.Reachable {
			bad = append(bad, "partition "+st.Name+" has not synced")
		}
	}
	if !any {
		bad = append(bad, "no partition has synced")
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}
