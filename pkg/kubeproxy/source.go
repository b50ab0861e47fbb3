package kubeproxy

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Source feeds handlers from the Service and EndpointSlice informers of
// every TP of a partition.Set, tagging each event with its TP.
//
// Use: NewSource, then set.Start, then Run. Run fires the Synced calls once
// every TP has synced, never earlier: a TP that is down holds Synced back,
// while events of the other TPs keep flowing.
type Source struct {
	set        *partition.Set
	svc        []ServiceHandler
	ep         []EndpointSliceHandler
	svcSynced  []cache.InformerSynced
	epSynced   []cache.InformerSynced
	svcStores  map[string]cache.Store
	epStores   map[string]cache.Store
	mu         sync.RWMutex
	removed    map[string]bool
	runOnce    sync.Once
	syncedOnce sync.Once
	synced     chan struct{}
}

// NewSource registers informers and event handlers on every TP of set. It
// must run before set.Start. It trims the objects the informers cache
// (managed fields, last-applied annotations), which is safe for other users
// of the same informers; an informer that has already started keeps its
// objects whole. An informer has one transform: a package that installs
// its own on the same informers later replaces this one, and must still
// deliver *v1.Service and *discoveryv1.EndpointSlice objects, or Source
// ignores them.
func NewSource(set *partition.Set, services []ServiceHandler, slices []EndpointSliceHandler) (*Source, error) {
	if set == nil {
		return nil, fmt.Errorf("kubeproxy: nil partition set")
	}
	s := &Source{
		set: set, svc: services, ep: slices,
		svcStores: map[string]cache.Store{}, epStores: map[string]cache.Store{},
		removed: map[string]bool{}, synced: make(chan struct{}),
	}
	for _, p := range set.Partitions() {
		tp := p.Name
		si := p.Informers.Core().V1().Services().Informer()
		ei := p.Informers.Discovery().V1().EndpointSlices().Informer()
		for _, inf := range []cache.SharedIndexInformer{si, ei} {
			if err := inf.SetTransform(TrimObject); err != nil {
				klog.V(2).InfoS("Informer already started; objects stay untrimmed", "partition", tp, "err", err)
			}
		}
		sr, err := si.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if o, ok := obj.(*corev1.Service); ok {
					s.forward(tp, func() {
						for _, h := range s.svc {
							h.OnServiceAdd(tp, o)
						}
					})
				}
			},
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*corev1.Service)
				c, ok2 := cur.(*corev1.Service)
				if ok1 && ok2 {
					s.forward(tp, func() {
						for _, h := range s.svc {
							h.OnServiceUpdate(tp, o, c)
						}
					})
				}
			},
			DeleteFunc: func(obj any) {
				if o, ok := tombstone(obj).(*corev1.Service); ok {
					s.forward(tp, func() {
						for _, h := range s.svc {
							h.OnServiceDelete(tp, o)
						}
					})
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("kubeproxy: partition %s: service handler: %w", tp, err)
		}
		er, err := ei.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if o, ok := obj.(*discoveryv1.EndpointSlice); ok {
					s.forward(tp, func() {
						for _, h := range s.ep {
							h.OnEndpointSliceAdd(tp, o)
						}
					})
				}
			},
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*discoveryv1.EndpointSlice)
				c, ok2 := cur.(*discoveryv1.EndpointSlice)
				if ok1 && ok2 {
					s.forward(tp, func() {
						for _, h := range s.ep {
							h.OnEndpointSliceUpdate(tp, o, c)
						}
					})
				}
			},
			DeleteFunc: func(obj any) {
				if o, ok := tombstone(obj).(*discoveryv1.EndpointSlice); ok {
					s.forward(tp, func() {
						for _, h := range s.ep {
							h.OnEndpointSliceDelete(tp, o)
						}
					})
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("kubeproxy: partition %s: endpoint slice handler: %w", tp, err)
		}
		s.svcSynced = append(s.svcSynced, sr.HasSynced)
		s.epSynced = append(s.epSynced, er.HasSynced)
		s.svcStores[tp] = si.GetStore()
		s.epStores[tp] = ei.GetStore()
	}
	return s, nil
}

func tombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// forward runs fn unless tp was removed. The read lock makes removal and
// forwarding exclusive, so no event of a removed TP lands after its deletes.
func (s *Source) forward(tp string, fn func()) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.removed[tp] {
		fn()
	}
}

// Run waits until every TP's services have synced and calls OnServiceSynced
// on every service handler, then does the same for endpoint slices. It
// returns when both are done or ctx ends, and does nothing when called
// again.
func (s *Source) Run(ctx context.Context) {
	s.runOnce.Do(func() {
		if !cache.WaitForCacheSync(ctx.Done(), s.svcSynced...) {
			return
		}
		for _, h := range s.svc {
			h.OnServiceSynced()
		}
		if !cache.WaitForCacheSync(ctx.Done(), s.epSynced...) {
			return
		}
		for _, h := range s.ep {
			h.OnEndpointSlicesSynced()
		}
		s.syncedOnce.Do(func() { close(s.synced) })
		klog.InfoS("Services and endpoint slices synced in every tenant partition", "partitions", s.set.Len())
	})
}

// Synced is closed once Run has fired both Synced calls.
func (s *Source) Synced() <-chan struct{} { return s.synced }

// RemovePartition stops forwarding tp's events and sends a delete for each
// of its services and slices still cached, so every handler forgets the TP:
// it was removed from the configuration. Stop tp's informers separately.
func (s *Source) RemovePartition(tp string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed[tp] {
		return nil
	}
	ss, ok := s.svcStores[tp]
	if !ok {
		return fmt.Errorf("kubeproxy: no partition %q", tp)
	}
	s.removed[tp] = true
	for _, obj := range s.epStores[tp].List() {
		if o, ok := obj.(*discoveryv1.EndpointSlice); ok {
			for _, h := range s.ep {
				h.OnEndpointSliceDelete(tp, o)
			}
		}
	}
	for _, obj := range ss.List() {
		if o, ok := obj.(*corev1.Service); ok {
			for _, h := range s.svc {
				h.OnServiceDelete(tp, o)
			}
		}
	}
	return nil
}

// TrimObject is an informer transform that drops what no proxy reads from
// Services and EndpointSlices: managed fields and the last-applied
// annotation. Other objects pass unchanged.
func TrimObject(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		o.ManagedFields = nil
		delete(o.Annotations, corev1.LastAppliedConfigAnnotation)
	case *discoveryv1.EndpointSlice:
		o.ManagedFields = nil
		delete(o.Annotations, corev1.LastAppliedConfigAnnotation)
	}
	return obj, nil
}
