package kubeproxy

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Source feeds handlers from a Service and an EndpointSlice list/watch of
// every TP of a partition.Set, tagging each event with its TP.
//
// Use: NewSource, then Run. Run fires the Synced calls once every TP has
// synced, never earlier: a TP that is down holds Synced back, while events of
// the other TPs keep flowing.
//
// Source does not use the set's shared informer factories: their stores key
// by namespace/name, so two tenants of one TP with equal service names would
// hide each other, and an update of one would reach the handlers paired with
// the other. Its informers (pkg/informer) key by tenant/namespace/name.
type Source struct {
	set     *partition.Set
	svc     []ServiceHandler
	ep      []EndpointSliceHandler
	infs    map[string]tpInformers
	mu      sync.RWMutex
	removed map[string]bool
	stop    map[string]context.CancelFunc // per TP, set by Run
	runOnce sync.Once
	synced  chan struct{}
}

// NewSource prepares the list/watches and handlers for every TP of set; Run
// starts them. The informers keep trimmed objects (TrimObject).
func NewSource(set *partition.Set, services []ServiceHandler, slices []EndpointSliceHandler) (*Source, error) {
	if set == nil {
		return nil, fmt.Errorf("kubeproxy: nil partition set")
	}
	s := &Source{
		set: set, svc: services, ep: slices,
		infs:    map[string]tpInformers{},
		removed: map[string]bool{}, stop: map[string]context.CancelFunc{}, synced: make(chan struct{}),
	}
	for _, p := range set.Partitions() {
		tp := p.Name
		c := p.Client
		svcHandler := forwarding(s, tp,
			func(o *corev1.Service) {
				for _, h := range s.svc {
					h.OnServiceAdd(tp, o)
				}
			},
			func(old, cur *corev1.Service) {
				for _, h := range s.svc {
					h.OnServiceUpdate(tp, old, cur)
				}
			},
			func(o *corev1.Service) {
				for _, h := range s.svc {
					h.OnServiceDelete(tp, o)
				}
			})
		sliceHandler := forwarding(s, tp,
			func(o *discoveryv1.EndpointSlice) {
				for _, h := range s.ep {
					h.OnEndpointSliceAdd(tp, o)
				}
			},
			func(old, cur *discoveryv1.EndpointSlice) {
				for _, h := range s.ep {
					h.OnEndpointSliceUpdate(tp, old, cur)
				}
			},
			func(o *discoveryv1.EndpointSlice) {
				for _, h := range s.ep {
					h.OnEndpointSliceDelete(tp, o)
				}
			})
		si := informer.New(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.CoreV1().Services("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.CoreV1().Services("").Watch(ctx, o)
			},
		}, &corev1.Service{}, svcHandler, informer.Options{Name: "kubeproxy " + tp + " services", Transform: TrimObject})
		ei := informer.New(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.DiscoveryV1().EndpointSlices("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.DiscoveryV1().EndpointSlices("").Watch(ctx, o)
			},
		}, &discoveryv1.EndpointSlice{}, sliceHandler, informer.Options{Name: "kubeproxy " + tp + " endpointslices", Transform: TrimObject})
		s.infs[tp] = tpInformers{svc: si, ep: ei}
	}
	return s, nil
}

// tpInformers are one TP's list/watches.
type tpInformers struct{ svc, ep *informer.Informer }

// forwarding is an informer handler that passes tp's events for objects of
// type T to add, update and del, through s.forward.
func forwarding[T any](s *Source, tp string, add func(T), update func(old, cur T), del func(T)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(T); ok {
				s.forward(tp, func() { add(o) })
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(T)
			c, ok2 := cur.(T)
			if ok1 && ok2 {
				s.forward(tp, func() { update(o, c) })
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(T); ok {
				s.forward(tp, func() { del(o) })
			}
		},
	}
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
		// A TP removed now or later no longer holds Synced back.
		var svcSynced, epSynced []cache.InformerSynced
		s.mu.Lock()
		for _, p := range s.set.Partitions() {
			tp := p.Name
			if s.removed[tp] {
				continue
			}
			tpCtx, cancel := context.WithCancel(ctx)
			s.stop[tp] = cancel
			i := s.infs[tp]
			go i.svc.Run(tpCtx)
			go i.ep.Run(tpCtx)
			svcSynced = append(svcSynced, func() bool { return i.svc.HasSynced() || s.isRemoved(tp) })
			epSynced = append(epSynced, func() bool { return i.ep.HasSynced() || s.isRemoved(tp) })
		}
		s.mu.Unlock()
		if !cache.WaitForCacheSync(ctx.Done(), svcSynced...) {
			return
		}
		for _, h := range s.svc {
			h.OnServiceSynced()
		}
		if !cache.WaitForCacheSync(ctx.Done(), epSynced...) {
			return
		}
		for _, h := range s.ep {
			h.OnEndpointSlicesSynced()
		}
		close(s.synced) // once: Run's body runs once
		klog.InfoS("Services and endpoint slices synced in every tenant partition", "partitions", s.set.Len())
	})
}

// Synced is closed once Run has fired both Synced calls.
func (s *Source) Synced() <-chan struct{} { return s.synced }

func (s *Source) isRemoved(tp string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.removed[tp]
}

// RemovePartition stops tp's list/watches and the forwarding of its events,
// and sends a delete for each of its services and slices still held, so
// every handler forgets the TP: it was removed from the configuration.
func (s *Source) RemovePartition(tp string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed[tp] {
		return nil
	}
	infs, ok := s.infs[tp]
	if !ok {
		return fmt.Errorf("kubeproxy: no partition %q", tp)
	}
	s.removed[tp] = true
	if stop := s.stop[tp]; stop != nil {
		stop()
	}
	for _, obj := range infs.ep.List() {
		if o, ok := obj.(*discoveryv1.EndpointSlice); ok {
			for _, h := range s.ep {
				h.OnEndpointSliceDelete(tp, o)
			}
		}
	}
	for _, obj := range infs.svc.List() {
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
