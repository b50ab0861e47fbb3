package source

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Options scope what is served, after the --dns-namespace of the proposal "Namespace-specific DNS servers in Kubernetes".
type Options struct {
	// Namespaces, when not empty, limits the served namespaces to these
	// plus "default". Their services and endpoints are read one namespace
	// at a time, so a TP never sends those of the other namespaces.
	Namespaces []string
	// Tenant, when set, limits the served tenant to this one, and to the
	// system tenant's default/kubernetes, the API server's service that
	// every pod reaches it by (kubernetes.default).
	Tenant string
	// Resync is the feeds' resync period; 0 disables it. The sinks
	// keep no objects, so a resync changes nothing in the index.
	Resync time.Duration
	// PageSize is the most objects of one list page (DefaultPageSize when
	// zero; negative lists in one piece). Each page becomes index records
	// before the next is read, and all partitions' feeds read one page at
	// a time, so a start's peak memory is the index plus one page, however
	// many objects and partitions there are.
	PageSize int64
}

// DefaultPageSize is Options.PageSize's default, client-go's list page.
const DefaultPageSize = 500

// Source runs a feed per partition and kind (namespaces, services,
// endpoints, pods) whose sink is the index itself.
type Source struct {
	b      *index.Builder
	parts  []*partition.Partition
	opts   Options
	ns     map[string]bool // --dns-namespace and default; nil serves all
	nsList []string        // the keys of ns, default first
	feeds  [][]*informer.Feed
	stores [][]*store
	eps    []*informer.EndpointsListWatch // per partition
	// pageGate lets one list page at a time be read and applied (see
	// Options.PageSize).
	pageGate chan struct{}
}

// New builds the feeds of the TPs parts (a partition.Set's Partitions);
// nothing runs before Start.
func New(parts []*partition.Partition, b *index.Builder, o Options) (*Source, error) {
	s := &Source{b: b, parts: parts, opts: o, pageGate: make(chan struct{}, 1)}
	if s.opts.PageSize == 0 {
		s.opts.PageSize = DefaultPageSize
	}
	if o.Tenant != "" {
		if err := tenancy.ValidateTenantName(o.Tenant); err != nil && o.Tenant != tenancy.SystemTenant {
			return nil, fmt.Errorf("--dns-tenant: %w", err)
		}
	}
	if len(o.Namespaces) > 0 {
		s.ns, s.nsList = map[string]bool{"default": true}, []string{"default"}
		for _, n := range o.Namespaces {
			if err := tenancy.ValidateLabel("namespace", n); err != nil {
				return nil, fmt.Errorf("--dns-namespace: %w", err)
			}
			if !s.ns[n] {
				s.ns[n] = true
				s.nsList = append(s.nsList, n)
			}
		}
	}
	for i, p := range parts {
		feeds, stores, eps, err := s.newFeeds(p)
		if err != nil {
			return nil, fmt.Errorf("partition %s: %w", p.Name, err)
		}
		s.eps = append(s.eps, eps)
		s.feeds = append(s.feeds, feeds)
		s.stores = append(s.stores, stores)
		p.TrackSynced("partition-dns", func() bool { return s.Synced(i) })
	}
	return s, nil
}

// newFeeds makes p's feeds, one per kind, each over the kind's scopes.
func (s *Source) newFeeds(p *partition.Partition) ([]*informer.Feed, []*store, *informer.EndpointsListWatch, error) {
	var feeds []*informer.Feed
	var stores []*store
	mk := func(k kind, lw listWatcher, expected runtime.Object) {
		st := &store{s: s, tp: p.Index, kind: k}
		feeds = append(feeds, informer.NewFeed(lw, expected, st, informer.FeedOptions{
			Name: "partition-dns " + k.String() + " of " + p.Name, Resync: s.opts.Resync,
			PageSize: max(s.opts.PageSize, 0), PageGate: s.pageGate,
		}))
		stores = append(stores, st)
	}
	for _, r := range []struct {
		k   kind
		res informer.Resource
	}{
		{namespaces, informer.Namespaces},
		{services, informer.Services},
		{pods, informer.Pods},
	} {
		var lws []listWatcher
		for _, sc := range s.scopes(r.k) {
			lw, err := informer.NewListWatch(p.Client, r.res, sc)
			if err != nil {
				return nil, nil, nil, err
			}
			lw.SetListAs(slimList)
			lws = append(lws, lw)
		}
		mk(r.k, merge(lws), r.res.New())
	}
	scopes := s.scopes(endpoints)
	eps, err := p.EndpointsListWatch(scopes[0])
	if err != nil {
		return nil, nil, nil, err
	}
	eps.SetListAs(slimList)
	lws := []listWatcher{eps}
	for _, sc := range scopes[1:] {
		lws = append(lws, &followEndpoints{first: eps, client: p.Client, name: p.Name, scope: sc})
	}
	mk(endpoints, merge(lws), nil)
	return feeds, stores, eps, nil
}

// Start runs every feed until ctx ends.
func (s *Source) Start(ctx context.Context) {
	for _, feeds := range s.feeds {
		for _, f := range feeds {
			go f.Run(ctx)
		}
	}
}

// Synced reports whether partition i's feeds have all listed once, and
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
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for i := range s.parts {
			if !s.Synced(i) {
				return false, nil
			}
		}
		return true, nil
	}) == nil
}

// State is one partition's state as DNS sees it.
type State struct {
	Name      string
	Synced    bool
	Reachable bool
	// Stale: synced once, now unreachable; its last records are served.
	Stale     bool
	LastError string
	// Endpoints is the resource the TP's endpoints are read from
	// ("endpoints" or "endpointslices"), "" until its first list.
	Endpoints string
}

// States returns every partition's state, in order.
func (s *Source) States() []State {
	out := make([]State, len(s.parts))
	for i, p := range s.parts {
		st := State{Name: p.Name, Synced: s.Synced(i), Endpoints: s.eps[i].Chosen()}
		ps := p.Status()
		st.Reachable, st.LastError = ps.Reachable || (ps.LastError == "" && st.Synced), ps.LastError
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
