package kubeproxyk8s

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Source feeds the core's handlers from a Service and an endpoints
// list/watch of every TP of a partition.Set, each event converted into the
// core's records and tagged with its TP's tenantPartitionId (the TP's
// Index). Each TP is read through Arktos's /tenants/all/ paths; its
// endpoints are core/v1 Endpoints or EndpointSlices, as the set's endpoints
// mode picks for it, and reach the EndpointsHandlers either way.
//
// Use: NewSource, then Run. Run calls OnServiceSynced and OnEndpointsSynced
// for each TP once its list has arrived; when SourceOptions.SyncTimeout
// passes first, it calls them for the TPs still missing too, so that the
// handlers stop waiting, and names those TPs (Missing). Their events keep
// flowing as they arrive.
//
// Source does not use client-go's informers: their stores key by
// namespace/name, so two tenants of one TP with equal service names would
// hide each other, and an update of one would reach the handlers paired with
// the other. Its informers (keyedInformer) key by tenant/namespace/name.
type Source struct {
	set     *partition.Set
	opts    SourceOptions
	svc     []kubeproxy.ServiceHandler
	eps     []kubeproxy.EndpointsHandler
	tps     []*tpSource // in set order
	byName  map[string]*tpSource
	mu      sync.RWMutex
	removed map[string]bool
	stop    map[string]context.CancelFunc // per TP, set by Run
	runOnce sync.Once
	synced  chan struct{}
	missing atomic.Pointer[[]string] // TPs not synced when the sync timeout passed
}

// SourceOptions configure a Source.
type SourceOptions struct {
	// SyncTimeout bounds how long Run waits for a TP's lists before it
	// reports the TP synced anyway and names it in Missing; 0 waits for all
	// (--partition-sync-timeout).
	SyncTimeout time.Duration
	// PageSize is the most objects of one list page (DefaultPageSize when
	// 0; a negative size lists whole). The TPs' lists take turns page by
	// page, each page made records before the next is read, so the peak
	// memory of a start does not grow with the number of TPs.
	PageSize int64
	// Clock replaces the real clock (tests).
	Clock clock.WithTicker
}

// DefaultPageSize is SourceOptions.PageSize's default, client-go's list
// page.
const DefaultPageSize = 500

// pageTurns is how many list pages are read at once, over all TPs: two,
// so that one is fetched while the other is decoded. At 600k objects over
// 10 TPs, whole lists peaked at 1,029 MB RSS; pages two at a time at
// 558-580 MB, with the first complete view as soon (3.9 s), where one at a
// time took 6.2 s to it for 489 MB.
const pageTurns = 2

// tpSource is one TP's list/watches.
type tpSource struct {
	name    string
	id      int
	svc, ep *keyedInformer
}

// NewSource prepares the list/watches and handlers for every TP of set; Run
// starts them. The informers keep the objects' records (serviceEntry,
// endpointsEntry).
func NewSource(set *partition.Set, services []kubeproxy.ServiceHandler, endpoints []kubeproxy.EndpointsHandler, o SourceOptions) (*Source, error) {
	if set == nil {
		return nil, fmt.Errorf("kubeproxy: nil partition set")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	var gate chan struct{} // pageTurns pages at a time, across TPs and kinds
	if o.PageSize > 0 {
		gate = make(chan struct{}, pageTurns)
	}
	s := &Source{
		set: set, opts: o, svc: services, eps: endpoints,
		byName:  map[string]*tpSource{},
		removed: map[string]bool{}, stop: map[string]context.CancelFunc{}, synced: make(chan struct{}),
	}
	for _, p := range set.Partitions() {
		t := &tpSource{name: p.Name, id: p.Index}
		svcLW, err := informer.NewListWatch(p.Client, informer.Services, informer.Scope{})
		if err != nil {
			return nil, err
		}
		epLW, err := p.EndpointsListWatch(informer.Scope{})
		if err != nil {
			return nil, err
		}
		t.svc = newInformer(svcLW, &corev1.Service{}, s.serviceEvents(t), informerOptions{Name: "kubeproxy " + t.name + " services", Transform: keepService,
			PageSize: max(o.PageSize, 0), PageGate: gate})
		// The endpoints informer delivers Endpoints or EndpointSlices.
		t.ep = newInformer(epLW, nil, s.endpointsEvents(t), informerOptions{Name: "kubeproxy " + t.name + " endpoints", Transform: keepEndpoints(t.name),
			PageSize: max(o.PageSize, 0), PageGate: gate})
		s.tps = append(s.tps, t)
		s.byName[t.name] = t
		svcInf, epInf := t.svc, t.ep
		p.TrackSynced("kubeproxy", func() bool { return svcInf.HasSynced() && epInf.HasSynced() })
	}
	return s, nil
}

// serviceEvents converts t's Service events and passes them on.
func (s *Source) serviceEvents(t *tpSource) cache.ResourceEventHandler {
	return forwarding(s, t, s.svc, serviceRecord,
		kubeproxy.ServiceHandler.OnServiceAdd, kubeproxy.ServiceHandler.OnServiceUpdate, kubeproxy.ServiceHandler.OnServiceDelete)
}

// endpointsEvents converts t's Endpoints or EndpointSlice events and passes
// them on.
func (s *Source) endpointsEvents(t *tpSource) cache.ResourceEventHandler {
	return forwarding(s, t, s.eps, endpointsRecord,
		kubeproxy.EndpointsHandler.OnEndpointsAdd, kubeproxy.EndpointsHandler.OnEndpointsUpdate, kubeproxy.EndpointsHandler.OnEndpointsDelete)
}

// forwarding is the event handler of one TP and kind: it converts each
// object to its record (conv; tombstones unwrapped, other types dropped)
// and hands it to every handler, in the TP's turn (Source.forward).
func forwarding[H, R any](s *Source, t *tpSource, hs []H, conv func(any) (R, bool),
	add func(H, R, int), update func(H, R, R, int), del func(H, R, int)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if rec, ok := conv(obj); ok {
				s.forward(t, func() {
					for _, h := range hs {
						add(h, rec, t.id)
					}
				})
			}
		},
		UpdateFunc: func(old, cur any) {
			oldRec, ok1 := conv(old)
			rec, ok2 := conv(cur)
			if ok1 && ok2 {
				s.forward(t, func() {
					for _, h := range hs {
						update(h, oldRec, rec, t.id)
					}
				})
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if rec, ok := conv(obj); ok {
				s.forward(t, func() {
					for _, h := range hs {
						del(h, rec, t.id)
					}
				})
			}
		},
	}
}

// serviceRecord is the record an informer keeps of a Service; ok is false
// for other values.
func serviceRecord(obj any) (*kubeproxy.Service, bool) {
	e, ok := obj.(serviceEntry)
	return e.Service, ok
}

// endpointsRecord is the record an informer keeps of an Endpoints or an
// EndpointSlice; ok is false for other values.
func endpointsRecord(obj any) (*kubeproxy.Endpoints, bool) {
	e, ok := obj.(endpointsEntry)
	return e.Endpoints, ok
}

// forward runs fn unless t was removed. The read lock makes removal and
// forwarding exclusive, so no event of a removed TP lands after its deletes.
func (s *Source) forward(t *tpSource, fn func()) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.removed[t.name] {
		fn()
	}
}

// Run starts every TP's informers and calls each TP's Synced methods on
// every handler once its services (then its endpoints) have listed, or the
// TP was removed, or SyncTimeout passed. It returns when every TP's Synced
// calls are made or ctx ends, and does nothing when called again.
func (s *Source) Run(ctx context.Context) {
	s.runOnce.Do(func() {
		s.mu.Lock()
		var waits []*tpWait
		for _, t := range s.tps {
			if s.removed[t.name] {
				continue
			}
			tpCtx, cancel := context.WithCancel(ctx)
			s.stop[t.name] = cancel
			go t.svc.Run(tpCtx)
			go t.ep.Run(tpCtx)
			waits = append(waits, &tpWait{tp: t})
		}
		s.mu.Unlock()
		// expired closes when SyncTimeout passes.
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
		missing, ok := s.waitSynced(ctx, expired, waits)
		if !ok {
			return
		}
		sort.Strings(missing)
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

// tpWait is one TP's progress towards its Synced calls.
type tpWait struct {
	tp               *tpSource
	svcDone, epsDone bool
}

// waitSynced makes each TP's Synced calls as its lists arrive, until every
// TP's are made (nil missing) or expired closes (then it makes the rest and
// returns their TPs) or ctx ends (ok false).
func (s *Source) waitSynced(ctx context.Context, expired <-chan struct{}, waits []*tpWait) (missing []string, ok bool) {
	t := s.opts.Clock.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for timedOut := false; ; {
		pending := false
		for _, w := range waits {
			removed := s.isRemoved(w.tp.name)
			if !w.svcDone && (removed || w.tp.svc.HasSynced()) {
				s.servicesSynced(w)
			}
			// Endpoints after services, as a TP lists them.
			if w.svcDone && !w.epsDone && (removed || w.tp.ep.HasSynced()) {
				s.endpointsSynced(w)
			}
			pending = pending || !w.epsDone
		}
		if !pending {
			return missing, true
		}
		if timedOut {
			// Looked once more after the timeout: stop waiting for the rest.
			for _, w := range waits {
				if w.epsDone {
					continue
				}
				missing = append(missing, w.tp.name)
				if !w.svcDone {
					s.servicesSynced(w)
				}
				s.endpointsSynced(w)
			}
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

// servicesSynced tells every service handler that w's TP has synced.
func (s *Source) servicesSynced(w *tpWait) {
	w.svcDone = true
	for _, h := range s.svc {
		h.OnServiceSynced(w.tp.id)
	}
}

// endpointsSynced tells every endpoints handler that w's TP has synced.
func (s *Source) endpointsSynced(w *tpWait) {
	w.epsDone = true
	for _, h := range s.eps {
		h.OnEndpointsSynced(w.tp.id)
	}
}

// Missing lists the TPs (by name) whose Synced calls Run made because the
// sync timeout passed; nil before then, or when every TP synced in time.
func (s *Source) Missing() []string {
	if m := s.missing.Load(); m != nil && len(*m) > 0 {
		return *m
	}
	return nil
}

// Synced is closed once Run has made every TP's Synced calls.
func (s *Source) Synced() <-chan struct{} { return s.synced }

func (s *Source) isRemoved(tp string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.removed[tp]
}

// RemovePartition stops the list/watches of the TP called name and the
// forwarding of its events, and sends a delete for each of its endpoints
// and services still held, so every handler forgets the TP: it was removed
// from the configuration.
func (s *Source) RemovePartition(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed[name] {
		return nil
	}
	t, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("kubeproxy: no partition %q", name)
	}
	s.removed[name] = true
	if stop := s.stop[name]; stop != nil {
		stop()
	}
	for _, obj := range t.ep.List() {
		if rec, ok := endpointsRecord(obj); ok {
			for _, h := range s.eps {
				h.OnEndpointsDelete(rec, t.id)
			}
		}
	}
	for _, obj := range t.svc.List() {
		if rec, ok := serviceRecord(obj); ok {
			for _, h := range s.svc {
				h.OnServiceDelete(rec, t.id)
			}
		}
	}
	return nil
}
