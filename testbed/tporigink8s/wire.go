package tporigink8s

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// WireOptions say which objects feed the tracker.
type WireOptions struct {
	// NodeName, when set, tracks the pods bound to this node (kubelet use),
	// every tenant's, listed and watched with the field selector
	// spec.nodeName.
	NodeName string
	// Services and Endpoints track those kinds of every tenant (kube-proxy
	// and DNS use). Endpoints are core/v1 Endpoints or EndpointSlices, as the
	// partition's endpoints mode picks for each TP.
	Services  bool
	Endpoints bool
	// PageSize is the most objects of one list page (500 when zero;
	// negative lists in one piece). Each page is recorded before the next
	// is read, and the feeds of every TP read one page at a time, so the
	// initial lists never hold more than a page of API objects.
	PageSize int64
}

// Wiring connects a Tracker to every TP of a partition set.
type Wiring struct {
	t     *tporigin.Tracker
	feeds []*feed
	// pageSize and gate page the feeds' lists (WireOptions.PageSize).
	pageSize int64
	gate     chan struct{}
}

// feed is one list/watch of one kind in one TP, and its sink. The sink is
// the tracker itself, keyed by UID: an upstream informer store keys by
// namespace/name, so two tenants' objects of equal namespace and name would
// hide each other there, and the hidden one would be pruned.
type feed struct {
	tp string
	// kind is the kind the TP serves; for endpoints it is known only once
	// the first list has chosen between Endpoints and EndpointSlices.
	kind func() tporigin.Kind
	t    *tporigin.Tracker
	f    *informer.Feed
	// synced is set once a full list has been applied and the origins it
	// no longer reports are pruned.
	synced atomic.Bool
	// live holds the UIDs of a paged list's pages so far (see ListPage).
	live map[string]struct{}
}

// metaOf is obj as an API object. A reflector hands its sink the objects of
// a list or a watch event, never a cache.DeletedFinalStateUnknown.
func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("tporigin: list/watch delivered %T, not an API object", obj)
	}
	return m, nil
}

// Wire prepares, for every TP of set, the list/watches o asks for (every
// tenant, through Arktos's /tenants/all/ paths), feeding t: objects added or
// updated are observed, deleted ones forgotten, and after every full list
// (the first, and each relist after a 410 or a lost connection) the origins
// the TP no longer reports are pruned. Each feed is tracked by its partition
// (Partition.TrackSynced). Wire starts nothing; call Start.
func Wire(t *tporigin.Tracker, set *partition.Set, o WireOptions) (*Wiring, error) {
	if !o.Services && !o.Endpoints && o.NodeName == "" {
		return nil, fmt.Errorf("tporigin: nothing to wire: set a node name, services or endpoints")
	}
	w := &Wiring{t: t, pageSize: o.PageSize, gate: make(chan struct{}, 1)}
	if w.pageSize == 0 {
		w.pageSize = 500
	}
	for _, p := range set.Partitions() {
		if o.NodeName != "" {
			sel := fields.OneTermEqualSelector("spec.nodeName", o.NodeName).String()
			lw, err := informer.NewListWatch(p.Client, informer.Pods, informer.Scope{FieldSelector: sel})
			if err != nil {
				return nil, err
			}
			w.add(p, "pods", fixed(tporigin.KindPod), lw, &corev1.Pod{})
		}
		if o.Services {
			lw, err := informer.NewListWatch(p.Client, informer.Services, informer.Scope{})
			if err != nil {
				return nil, err
			}
			w.add(p, "services", fixed(tporigin.KindService), lw, &corev1.Service{})
		}
		if o.Endpoints {
			lw, err := p.EndpointsListWatch(informer.Scope{})
			if err != nil {
				return nil, err
			}
			w.add(p, "endpoints", func() tporigin.Kind {
				if lw.Chosen() == informer.EndpointSlices.Name {
					return tporigin.KindEndpointSlice
				}
				return tporigin.KindEndpoints
			}, lw, nil)
		}
	}
	return w, nil
}

func fixed(k tporigin.Kind) func() tporigin.Kind { return func() tporigin.Kind { return k } }

// add prepares one feed of p; expected is nil for the endpoints feed, whose
// objects are Endpoints or EndpointSlices.
func (w *Wiring) add(p *partition.Partition, what string, kind func() tporigin.Kind, lw cache.ListerWatcherWithContext, expected runtime.Object) {
	f := &feed{tp: p.Name, kind: kind, t: w.t}
	f.f = informer.NewFeed(lw, expected, f, informer.FeedOptions{Name: "tporigin " + p.Name + " " + what,
		PageSize: max(w.pageSize, 0), PageGate: w.gate})
	p.TrackSynced("tporigin", f.synced.Load)
	w.feeds = append(w.feeds, f)
}

// Start runs every feed until ctx ends. It returns at once.
func (w *Wiring) Start(ctx context.Context) {
	for _, f := range w.feeds {
		go f.f.Run(ctx)
	}
}

// HasSynced is true once every feed has applied a full list of its TP and
// pruned the origins that TP no longer reports.
func (w *Wiring) HasSynced() bool {
	for _, f := range w.feeds {
		if !f.synced.Load() {
			return false
		}
	}
	return true
}

// The reflector's store (cache.ReflectorStore).

func (f *feed) Add(obj any) error    { f.observe(obj); return nil }
func (f *feed) Update(obj any) error { f.observe(obj); return nil }
func (f *feed) Resync() error        { return nil }

func (f *feed) Delete(obj any) error {
	m, err := metaOf(obj)
	if err != nil {
		klog.ErrorS(err, "Ignoring a delete", "partition", f.tp, "kind", f.kind())
		return nil
	}
	_, _ = f.t.Forget(string(m.GetUID()), f.tp)
	return nil
}

// StartList begins a paged list (informer.PagedSink).
func (f *feed) StartList() { f.live = map[string]struct{}{} }

// ListPage observes one page of a list at once, and keeps its UIDs for the
// prune that ends the list: an origin observed early is still true, but
// nothing is pruned before the whole list is in.
func (f *feed) ListPage(items []any) error {
	for _, obj := range items {
		if uid := f.observe(obj); uid != "" {
			f.live[uid] = struct{}{}
		}
	}
	return nil
}

// Replace is a full list of the TP (with paged lists, its last part): everything
// in it is observed, and the origins of this TP and kind that the list lacks
// are pruned, so objects deleted while nobody watched are forgotten too.
func (f *feed) Replace(list []any, _ string) error {
	live := f.live
	f.live = nil
	if live == nil {
		live = make(map[string]struct{}, len(list))
	}
	for _, obj := range list {
		if uid := f.observe(obj); uid != "" {
			live[uid] = struct{}{}
		}
	}
	n, err := f.t.Prune(f.tp, f.kind(), func(uid string) bool { _, ok := live[uid]; return ok })
	if err != nil {
		if err != tporigin.ErrClosed {
			klog.ErrorS(err, "Pruning origins after a full list failed", "partition", f.tp, "kind", f.kind())
		}
		return nil
	}
	if n > 0 {
		klog.V(2).InfoS("Pruned origins the partition no longer reports", "partition", f.tp, "kind", f.kind(), "count", n)
	}
	f.synced.Store(true)
	return nil
}

// observe records obj's origin at the list/watch boundary and returns its UID.
func (f *feed) observe(obj any) string {
	m, err := metaOf(obj)
	if err != nil {
		klog.ErrorS(err, "Ignoring an object", "partition", f.tp, "kind", f.kind())
		return ""
	}
	kind := f.kind()
	uid := string(m.GetUID())
	if _, err := f.t.Observe(tporigin.Observation{UID: uid, Kind: kind, Partition: f.tp, Tenant: tenancy.TenantOf(m)}); err != nil && err != tporigin.ErrClosed {
		klog.ErrorS(err, "Cannot record origin", "partition", f.tp, "kind", kind, "namespace", m.GetNamespace(), "name", m.GetName())
	}
	return uid
}
