package kubeproxy

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Source feeds handlers from a Service and an endpoints list/watch of
// every TP of a partition.Set, tagging each event with its TP. Each TP is
// read through Arktos's /tenants/all/ paths; its endpoints are core/v1
// Endpoints or EndpointSlices, as the set's endpoints mode picks for it.
//
// Use: NewSource, then Run. Run fires the Synced calls once every TP has
// synced, or, when SourceOptions.SyncTimeout passes first, with the TPs that
// have (naming those that have not); events of the others keep flowing.
//
// Source does not use client-go's informers: their stores key by
// namespace/name, so two tenants of one TP with equal service names would
// hide each other, and an update of one would reach the handlers paired with
// the other. Its informers (pkg/informer) key by tenant/namespace/name.
type Source struct {
	set     *partition.Set
	opts    SourceOptions
	svc     []ServiceHandler
	eps     []EndpointsHandler
	slices  []EndpointSliceHandler
	infs    map[string]tpInformers
	mu      sync.RWMutex
	removed map[string]bool
	stop    map[string]context.CancelFunc // per TP, set by Run
	runOnce sync.Once
	synced  chan struct{}
	missing atomic.Pointer[[]string] // TPs not synced when the Synced calls fired
}

// SourceOptions configure a Source.
type SourceOptions struct {
	// SyncTimeout bounds how long Run waits for every TP before it fires
	// the Synced calls with the TPs that have synced; 0 waits for all
	// (--partition-sync-timeout).
	SyncTimeout time.Duration
	// Clock replaces the real clock (tests).
	Clock clock.WithTicker
}

// NewSource prepares the list/watches and handlers for every TP of set; Run
// starts them. Core/v1 Endpoints go to endpoints, EndpointSlices to slices:
// give a handler that takes either (View does) in both lists. The informers
// keep trimmed objects (TrimObject).
func NewSource(set *partition.Set, services []ServiceHandler, endpoints []EndpointsHandler, slices []EndpointSliceHandler, o SourceOptions) (*Source, error) {
	if set == nil {
		return nil, fmt.Errorf("kubeproxy: nil partition set")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	s := &Source{
		set: set, opts: o, svc: services, eps: endpoints, slices: slices,
		infs:    map[string]tpInformers{},
		removed: map[string]bool{}, stop: map[string]context.CancelFunc{}, synced: make(chan struct{}),
	}
	for _, p := range set.Partitions() {
		tp := p.Name
		svcHandler := forwarding(s, tp, s.svc, ServiceHandler.OnServiceAdd, ServiceHandler.OnServiceUpdate, ServiceHandler.OnServiceDelete)
		epHandler := forwarding(s, tp, s.eps, EndpointsHandler.OnEndpointsAdd, EndpointsHandler.OnEndpointsUpdate, EndpointsHandler.OnEndpointsDelete)
		sliceHandler := forwarding(s, tp, s.slices, EndpointSliceHandler.OnEndpointSliceAdd, EndpointSliceHandler.OnEndpointSliceUpdate, EndpointSliceHandler.OnEndpointSliceDelete)
		svcLW, err := informer.NewListWatch(p.Client, informer.Services, informer.Scope{})
		if err != nil {
			return nil, err
		}
		epLW, err := p.EndpointsListWatch(informer.Scope{})
		if err != nil {
			return nil, err
		}
		si := informer.New(svcLW, &corev1.Service{}, svcHandler, informer.Options{Name: "kubeproxy " + tp + " services", Transform: TrimObject})
		// The endpoints informer delivers Endpoints or EndpointSlices.
		ei := informer.New(epLW, nil, cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { epHandler.OnAdd(obj, false); sliceHandler.OnAdd(obj, false) },
			UpdateFunc: func(old, cur any) {
				epHandler.OnUpdate(old, cur)
				sliceHandler.OnUpdate(old, cur)
			},
			DeleteFunc: func(obj any) { epHandler.OnDelete(obj); sliceHandler.OnDelete(obj) },
		}, informer.Options{Name: "kubeproxy " + tp + " endpoints", Transform: TrimObject})
		s.infs[tp] = tpInformers{svc: si, ep: ei}
		p.TrackSynced("kubeproxy", func() bool { return si.HasSynced() && ei.HasSynced() })
	}
	return s, nil
}

// tpInformers are one TP's list/watches.
type tpInformers struct{ svc, ep *informer.Informer }

// forwarding is an informer handler that passes tp's events for objects of
// type T to every handler in hs (through add, update and del, method
// expressions of H), by way of s.forward; objects of other types are
// ignored.
func forwarding[H, T any](s *Source, tp string, hs []H, add func(H, string, T), update func(H, string, T, T), del func(H, string, T)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(T); ok {
				s.forward(tp, func() {
					for _, h := range hs {
						add(h, tp, o)
					}
				})
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(T)
			c, ok2 := cur.(T)
			if ok1 && ok2 {
				s.forward(tp, func() {
					for _, h := range hs {
						update(h, tp, o, c)
					}
				})
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(T); ok {
				s.forward(tp, func() {
					for _, h := range hs {
						del(h, tp, o)
					}
				})
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

// Run starts every TP's informers, waits until every TP's services have
// synced (or SyncTimeout passes) and calls OnServiceSynced on every service
// handler, then does the same for endpoints. It returns when both are done
// or ctx ends, and does nothing when called again.
func (s *Source) Run(ctx context.Context) {
	s.runOnce.Do(func() {
		// A TP removed now or later no longer holds Synced back.
		var svcSynced, epSynced []tpSynced
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
			svcSynced = append(svcSynced, tpSynced{tp, func() bool { return i.svc.HasSynced() || s.isRemoved(tp) }})
			epSynced = append(epSynced, tpSynced{tp, func() bool { return i.ep.HasSynced() || s.isRemoved(tp) }})
		}
		s.mu.Unlock()
		// expired closes when SyncTimeout passes; both waits below see it.
		expired := make(chan struct{})
		if s.opts.SyncTimeout > 0 {
			timer := s.opts.Clock.NewTimer(s.opts.SyncTimeout)
			defer timer.Stop()
			go func() {
				select {
				case <-timer.C():
					close(expired)
				case <-ctx.Done():
				}
			}()
		}
		missing, ok := s.waitSynced(ctx, expired, svcSynced)
		if !ok {
			return
		}
		for _, h := range s.svc {
			h.OnServiceSynced()
		}
		missingEp, ok := s.waitSynced(ctx, expired, epSynced)
		if !ok {
			return
		}
		for _, h := range s.eps {
			h.OnEndpointsSynced()
		}
		for _, h := range s.slices {
			h.OnEndpointSlicesSynced()
		}
		missing = append(missing, missingEp...)
		slices.Sort(missing)
		missing = slices.Compact(missing)
		s.missing.Store(&missing)
		close(s.synced) // once: Run's body runs once
		if len(missing) > 0 {
			klog.InfoS("Tenant partitions not synced within the sync timeout; programming the others, the rest follow as they sync",
				"missing", missing, "timeout", s.opts.SyncTimeout)
			return
		}
		klog.InfoS("Services and endpoints synced in every tenant partition", "partitions", s.set.Len())
	})
}

// tpSynced is one TP's sync check.
type tpSynced struct {
	tp     string
	synced func() bool
}

// waitSynced waits until every check is true (nil missing), or expired
// closes (the TPs still missing then), or ctx ends (ok false).
func (s *Source) waitSynced(ctx context.Context, expired <-chan struct{}, checks []tpSynced) (missing []string, ok bool) {
	t := s.opts.Clock.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for timedOut := false; ; {
		missing = missing[:0]
		for _, c := range checks {
			if !c.synced() {
				missing = append(missing, c.tp)
			}
		}
		if len(missing) == 0 {
			return nil, true
		}
		if timedOut {
			return missing, true
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-expired:
			timedOut = true // look once more: a TP may have synced meanwhile
		case <-t.C():
		}
	}
}

// Missing lists the TPs that had not synced when Run fired the Synced calls
// after SyncTimeout; nil before then, or when every TP had.
func (s *Source) Missing() []string {
	if m := s.missing.Load(); m != nil {
		return *m
	}
	return nil
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
		switch o := obj.(type) {
		case *corev1.Endpoints:
			for _, h := range s.eps {
				h.OnEndpointsDelete(tp, o)
			}
		case *discoveryv1.EndpointSlice:
			for _, h := range s.slices {
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
// Services, Endpoints and EndpointSlices: managed fields and the
// last-applied annotation. Other objects pass unchanged.
func TrimObject(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		o.ManagedFields = nil
		delete(o.Annotations, corev1.LastAppliedConfigAnnotation)
	case *corev1.Endpoints:
		o.ManagedFields = nil
		delete(o.Annotations, corev1.LastAppliedConfigAnnotation)
	case *discoveryv1.EndpointSlice:
		o.ManagedFields = nil
		delete(o.Annotations, corev1.LastAppliedConfigAnnotation)
	}
	return obj, nil
}
