package tporigin

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// WireOptions say which informers feed the tracker.
type WireOptions struct {
	// NodeName, when set, tracks the pods bound to this node (kubelet use),
	// through a per-TP informer filtered by spec.nodeName.
	NodeName string
	// Services and EndpointSlices track those kinds (kube-proxy and DNS
	// use), through each partition's shared informer factory.
	Services       bool
	EndpointSlices bool
	// Resync of the pod informers; zero disables it.
	Resync time.Duration
}

// Wiring connects a Tracker to the informers of a partition set.
type Wiring struct {
	t       *Tracker
	set     *partition.Set
	podFacs map[string]informers.SharedInformerFactory
	feeds   []*feed
}

// feed is one informer of one TP feeding the tracker.
type feed struct {
	tp   string
	kind Kind
	inf  cache.SharedIndexInformer
	reg  cache.ResourceEventHandlerRegistration
	// pruned is set once the origins missing from the synced informer
	// are removed.
	pruned atomic.Bool
}

// uidIndex finds an informer's object by UID, for pruning.
const uidIndex = "tporigin-uid"

func uidIndexFunc(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	return []string{string(m.GetUID())}, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("tporigin: informer delivered %T, not an API object", obj)
	}
	return m, nil
}

// Wire registers the informers o asks for on every TP of set and feeds
// them to t: adds and updates are observed, deletes forgotten, and after a
// TP's informer has synced, the origins it no longer reports are pruned.
// Call it before set.Start; then call Start. Wire starts nothing.
func Wire(t *Tracker, set *partition.Set, o WireOptions) (*Wiring, error) {
	if !o.Services && !o.EndpointSlices && o.NodeName == "" {
		return nil, fmt.Errorf("tporigin: nothing to wire: set a node name, services or endpointslices")
	}
	w := &Wiring{t: t, set: set, podFacs: map[string]informers.SharedInformerFactory{}}
	for _, p := range set.Partitions() {
		if o.NodeName != "" {
			sel := fields.OneTermEqualSelector("spec.nodeName", o.NodeName).String()
			fac := informers.NewSharedInformerFactoryWithOptions(p.Client, o.Resync,
				informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = sel }))
			w.podFacs[p.Name] = fac
			if err := w.add(p.Name, KindPod, fac.Core().V1().Pods().Informer()); err != nil {
				return nil, err
			}
		}
		if o.Services {
			if err := w.add(p.Name, KindService, p.Informers.Core().V1().Services().Informer()); err != nil {
				return nil, err
			}
		}
		if o.EndpointSlices {
			if err := w.add(p.Name, KindEndpointSlice, p.Informers.Discovery().V1().EndpointSlices().Informer()); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

func (w *Wiring) add(tp string, kind Kind, inf cache.SharedIndexInformer) error {
	if _, exists := inf.GetIndexer().GetIndexers()[uidIndex]; !exists {
		if err := inf.AddIndexers(cache.Indexers{uidIndex: uidIndexFunc}); err != nil {
			return fmt.Errorf("tporigin: partition %s %s informer: %w", tp, kind, err)
		}
	}
	f := &feed{tp: tp, kind: kind, inf: inf}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.observe(w.t, obj) },
		UpdateFunc: func(_, obj any) { f.observe(w.t, obj) },
		DeleteFunc: func(obj any) { f.forget(w.t, obj) },
	})
	if err != nil {
		return fmt.Errorf("tporigin: partition %s %s informer: %w", tp, kind, err)
	}
	f.reg = reg
	w.feeds = append(w.feeds, f)
	return nil
}

// observe turns an API object into an Observation at the informer boundary.
func (f *feed) observe(t *Tracker, obj any) {
	m, err := metaOf(obj)
	if err != nil {
		klog.ErrorS(err, "Ignoring informer object", "partition", f.tp, "kind", f.kind)
		return
	}
	if _, err := t.Observe(Observation{UID: m.GetUID(), Kind: f.kind, Partition: f.tp, Tenant: tenancy.TenantOf(m)}); err != nil && err != ErrClosed {
		klog.ErrorS(err, "Cannot record origin", "partition", f.tp, "kind", f.kind, "namespace", m.GetNamespace(), "name", m.GetName())
	}
}

func (f *feed) forget(t *Tracker, obj any) {
	m, err := metaOf(obj)
	if err != nil {
		klog.ErrorS(err, "Ignoring informer delete", "partition", f.tp, "kind", f.kind)
		return
	}
	_, _ = t.Forget(m.GetUID(), f.tp)
}

// Start starts the pod informers Wire created (the set's own factories
// start with set.Start) and, per TP and kind, a goroutine that prunes once
// the informer has synced and its handler has seen the initial list. It
// returns at once; everything stops when ctx ends.
func (w *Wiring) Start(ctx context.Context) {
	for _, fac := range w.podFacs {
		fac.Start(ctx.Done())
	}
	for _, f := range w.feeds {
		go w.pruneAfterSync(ctx, f)
	}
}

func (w *Wiring) pruneAfterSync(ctx context.Context, f *feed) {
	if !cache.WaitForCacheSync(ctx.Done(), f.reg.HasSynced) {
		return
	}
	idx := f.inf.GetIndexer()
	live := func(uid types.UID) bool {
		objs, err := idx.ByIndex(uidIndex, string(uid))
		return err == nil && len(objs) > 0
	}
	if _, err := w.t.Prune(f.tp, f.kind, live); err != nil && err != ErrClosed {
		klog.ErrorS(err, "Pruning origins after sync failed", "partition", f.tp, "kind", f.kind)
		return
	}
	f.pruned.Store(true)
}

// HasSynced is true once every wired informer's handler has seen its
// initial list and the origins its TP no longer reports are pruned.
func (w *Wiring) HasSynced() bool {
	for _, f := range w.feeds {
		if !f.pruned.Load() {
			return false
		}
	}
	return true
}

// PodInformer returns the node-filtered pod informer of partition tp, for
// components that want the same pods, or nil without a node name.
func (w *Wiring) PodInformer(tp string) cache.SharedIndexInformer {
	fac := w.podFacs[tp]
	if fac == nil {
		return nil
	}
	return fac.Core().V1().Pods().Informer()
}
