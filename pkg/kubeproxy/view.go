package kubeproxy

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Options configure a View.
type Options struct {
	// Tenants, when set, says where regular tenants live; a regular
	// tenant's service seen in another TP is not served. Call
	// View.TenantMoved when its answer for a tenant changes.
	Tenants TenantPartitions
}

// View is the multi-TP state of services and endpoint slices, and the change
// tracker between informer events and a proxier. It implements
// ServiceHandler and EndpointSliceHandler; it is safe for concurrent use.
//
// Events only update records and mark their service pending; Apply turns
// pending services into snapshot entries. So an event costs O(size of the
// object) and an Apply costs O(size of the changed services), whatever the
// total number of services.
type View struct {
	opts Options

	mu         sync.Mutex
	partitions map[string]bool
	services   map[tenancy.Key]*serviceState
	sliceOwner map[tenancy.Key]string              // slice key -> service name it feeds
	subsets    map[tenancy.Key]int                 // Endpoints key -> its subset records, named by subsetName
	byTenant   map[string]map[tenancy.Key]struct{} // regular tenant -> its services' keys, all TPs
	pending    map[tenancy.Key]struct{}            // services changed since the consumer's last Apply
	consumer   *Snapshot                           // the snapshot pending is relative to
	svcSynced  bool
	epSynced   bool
	wake       chan struct{}

	skipped atomic.Uint64
	dropped atomic.Uint64
}

// serviceState is what the view knows of one service key: the service, if
// seen, and the slices that name it, if any.
type serviceState struct {
	svc    *Service
	slices map[string]*EndpointSlice // slice name -> record
}

// NewView returns an empty view of the TPs named in partitions. Events from
// other TPs are dropped.
func NewView(partitions []string, o Options) *View {
	v := &View{
		opts:       o,
		partitions: make(map[string]bool, len(partitions)),
		services:   map[tenancy.Key]*serviceState{},
		sliceOwner: map[tenancy.Key]string{},
		subsets:    map[tenancy.Key]int{},
		byTenant:   map[string]map[tenancy.Key]struct{}{},
		pending:    map[tenancy.Key]struct{}{},
		wake:       make(chan struct{}, 1),
	}
	for _, p := range partitions {
		v.partitions[p] = true
	}
	return v
}

// Changed is signalled (without blocking, at most one signal queued) when
// services become pending or the view becomes synced.
func (v *View) Changed() <-chan struct{} { return v.wake }

func (v *View) signal() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// Synced reports whether services and slices of every TP have synced.
func (v *View) Synced() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.svcSynced && v.epSynced
}

// Skipped counts objects, or parts of them, skipped as invalid.
func (v *View) Skipped() uint64 { return v.skipped.Load() }

// Dropped counts events from TPs the view does not serve.
func (v *View) Dropped() uint64 { return v.dropped.Load() }

// Pending is the number of services changed since the last Apply.
func (v *View) Pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.pending)
}

// OnServiceAdd records a service of tp.
func (v *View) OnServiceAdd(tp string, service *corev1.Service) { v.upsertService(tp, service) }

// OnServiceUpdate records the new state of a service of tp.
func (v *View) OnServiceUpdate(tp string, _, service *corev1.Service) { v.upsertService(tp, service) }

// OnServiceDelete forgets a service of tp. Its slices stay, as the API keeps
// them until their controller deletes them, but feed nothing.
func (v *View) OnServiceDelete(tp string, service *corev1.Service) {
	if service == nil {
		return
	}
	v.DeleteService(keyIn(tp, service))
}

// OnServiceSynced marks services synced in every TP.
func (v *View) OnServiceSynced() {
	v.mu.Lock()
	v.svcSynced = true
	v.mu.Unlock()
	v.signal()
}

// OnEndpointSliceAdd records a slice of tp.
func (v *View) OnEndpointSliceAdd(tp string, slice *discoveryv1.EndpointSlice) {
	v.upsertSlice(tp, slice)
}

// OnEndpointSliceUpdate records the new state of a slice of tp.
func (v *View) OnEndpointSliceUpdate(tp string, _, slice *discoveryv1.EndpointSlice) {
	v.upsertSlice(tp, slice)
}

// OnEndpointSliceDelete forgets a slice of tp.
func (v *View) OnEndpointSliceDelete(tp string, slice *discoveryv1.EndpointSlice) {
	if slice == nil {
		return
	}
	v.DeleteSlice(keyIn(tp, slice))
}

// OnEndpointSlicesSynced marks endpoints synced in every TP.
func (v *View) OnEndpointSlicesSynced() {
	v.mu.Lock()
	v.epSynced = true
	v.mu.Unlock()
	v.signal()
}

// OnEndpointsAdd records the endpoints of a service of tp.
func (v *View) OnEndpointsAdd(tp string, endpoints *corev1.Endpoints) {
	v.upsertEndpoints(tp, endpoints)
}

// OnEndpointsUpdate records the new endpoints of a service of tp.
func (v *View) OnEndpointsUpdate(tp string, _, endpoints *corev1.Endpoints) {
	v.upsertEndpoints(tp, endpoints)
}

// OnEndpointsDelete forgets the endpoints of a service of tp.
func (v *View) OnEndpointsDelete(tp string, endpoints *corev1.Endpoints) {
	if endpoints == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.setSubsetsLocked(keyIn(tp, endpoints), nil)
}

// OnEndpointsSynced marks endpoints synced in every TP.
func (v *View) OnEndpointsSynced() { v.OnEndpointSlicesSynced() }

func (v *View) upsertEndpoints(tp string, endpoints *corev1.Endpoints) {
	recs, err := EndpointsFromAPI(tp, endpoints)
	if err != nil {
		v.skipped.Add(1)
		klog.V(2).InfoS("Skipping invalid endpoints data", "partition", tp, "err", err)
		if recs == nil {
			return
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.acceptLocked(tp) {
		return
	}
	v.setSubsetsLocked(keyIn(tp, endpoints), recs)
}

// setSubsetsLocked makes recs the subset records of the Endpoints with key,
// removing those of subsets it no longer has.
func (v *View) setSubsetsLocked(key tenancy.Key, recs []*EndpointSlice) {
	for _, rec := range recs {
		v.upsertSliceLocked(rec)
	}
	for i := len(recs); i < v.subsets[key]; i++ {
		sk := key
		sk.Name = subsetName(key.Name, i)
		if svc, ok := v.sliceOwner[sk]; ok {
			v.removeSliceLocked(sk, svc)
		}
	}
	if len(recs) == 0 {
		delete(v.subsets, key)
	} else {
		v.subsets[key] = len(recs)
	}
}

func (v *View) upsertService(tp string, service *corev1.Service) {
	rec, err := ServiceFromAPI(tp, service)
	if err != nil {
		v.skipped.Add(1)
		klog.V(2).InfoS("Skipping invalid service data", "partition", tp, "err", err)
	}
	if rec != nil {
		v.UpsertService(rec)
	}
}

func (v *View) upsertSlice(tp string, slice *discoveryv1.EndpointSlice) {
	rec, err := SliceFromAPI(tp, slice)
	if err != nil {
		v.skipped.Add(1)
		klog.V(2).InfoS("Skipping invalid endpoint slice data", "partition", tp, "err", err)
	}
	switch {
	case rec != nil:
		v.UpsertSlice(rec)
	case err == nil && slice != nil:
		// The slice no longer feeds a service (its label went away): forget
		// what it fed before.
		v.DeleteSlice(keyIn(tp, slice))
	}
}

// UpsertService records a service. Feeding records directly is for tests
// and programs that build records themselves; informer-fed programs use the
// handler methods.
func (v *View) UpsertService(rec *Service) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.acceptLocked(rec.Key.Partition) {
		return
	}
	st := v.services[rec.Key]
	if st == nil {
		st = &serviceState{}
		v.services[rec.Key] = st
	} else if equalService(st.svc, rec) {
		return // a resync or a change the proxy does not see
	}
	st.svc = rec
	if !tenancy.IsSystem(rec.Key.Tenant) {
		m := v.byTenant[rec.Key.Tenant]
		if m == nil {
			m = map[tenancy.Key]struct{}{}
			v.byTenant[rec.Key.Tenant] = m
		}
		m[rec.Key] = struct{}{}
	}
	v.markLocked(rec.Key)
}

// DeleteService forgets the service with key.
func (v *View) DeleteService(key tenancy.Key) {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := v.services[key]
	if st == nil || st.svc == nil {
		return
	}
	st.svc = nil
	v.forgetTenantLocked(key)
	if len(st.slices) == 0 {
		delete(v.services, key)
	}
	v.markLocked(key)
}

// UpsertSlice records an endpoint slice.
func (v *View) UpsertSlice(rec *EndpointSlice) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.acceptLocked(rec.Key.Partition) {
		return
	}
	v.upsertSliceLocked(rec)
}

func (v *View) upsertSliceLocked(rec *EndpointSlice) {
	if prev, ok := v.sliceOwner[rec.Key]; ok && prev != rec.Service {
		// The slice moved to another service: take it from the old one.
		v.removeSliceLocked(rec.Key, prev)
	}
	svcKey := rec.ServiceKey()
	st := v.services[svcKey]
	if st == nil {
		st = &serviceState{}
		v.services[svcKey] = st
	}
	if st.slices == nil {
		st.slices = map[string]*EndpointSlice{}
	} else if equalSlice(st.slices[rec.Key.Name], rec) {
		return
	}
	st.slices[rec.Key.Name] = rec
	v.sliceOwner[rec.Key] = rec.Service
	v.markLocked(svcKey)
}

// DeleteSlice forgets the endpoint slice with key (the slice's own key).
func (v *View) DeleteSlice(key tenancy.Key) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if svc, ok := v.sliceOwner[key]; ok {
		v.removeSliceLocked(key, svc)
	}
}

func (v *View) removeSliceLocked(sliceKey tenancy.Key, service string) {
	delete(v.sliceOwner, sliceKey)
	svcKey := sliceKey
	svcKey.Name = service
	st := v.services[svcKey]
	if st == nil {
		return
	}
	if _, ok := st.slices[sliceKey.Name]; !ok {
		return
	}
	delete(st.slices, sliceKey.Name)
	if st.svc == nil && len(st.slices) == 0 {
		delete(v.services, svcKey)
	}
	v.markLocked(svcKey)
}

func (v *View) forgetTenantLocked(key tenancy.Key) {
	if m := v.byTenant[key.Tenant]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(v.byTenant, key.Tenant)
		}
	}
}

func (v *View) acceptLocked(tp string) bool {
	if v.partitions[tp] {
		return true
	}
	v.dropped.Add(1)
	return false
}

func (v *View) markLocked(key tenancy.Key) {
	v.pending[key] = struct{}{}
	v.signal()
}

// TenantMoved says the TenantPartitions answer for tenant may have changed:
// its services in every TP are looked at again at the next Apply.
func (v *View) TenantMoved(tenant string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k := range v.byTenant[tenant] {
		v.markLocked(k)
	}
}

// RemovePartition deletes every service and slice of tp and stops accepting
// its events: the TP was removed from the configuration. A TP that is only
// unreachable must not be removed; its last state stays served.
func (v *View) RemovePartition(tp string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.removePartitionLocked(tp)
}

func (v *View) removePartitionLocked(tp string) {
	delete(v.partitions, tp)
	for k := range v.services {
		if k.Partition == tp {
			v.forgetTenantLocked(k)
			delete(v.services, k)
			v.markLocked(k)
		}
	}
	for k := range v.sliceOwner {
		if k.Partition == tp {
			delete(v.sliceOwner, k)
		}
	}
	for k := range v.subsets {
		if k.Partition == tp {
			delete(v.subsets, k)
		}
	}
}

// SetPartitions makes partitions the served TPs: TPs no longer listed are
// removed as by RemovePartition; new ones are accepted from now on.
func (v *View) SetPartitions(partitions []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	keep := make(map[string]bool, len(partitions))
	for _, p := range partitions {
		keep[p] = true
	}
	for p := range v.partitions {
		if !keep[p] {
			v.removePartitionLocked(p)
		}
	}
	v.partitions = keep
}

// Partitions returns the served TP names, unordered.
func (v *View) Partitions() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]string, 0, len(v.partitions))
	for p := range v.partitions {
		out = append(out, p)
	}
	return out
}

// servedLocked reports whether svc is served: system-tenant services always,
// a regular tenant's only from the TP it lives in when that is known.
func (v *View) servedLocked(svc *Service) bool {
	if v.opts.Tenants == nil || tenancy.IsSystem(svc.Key.Tenant) {
		return true
	}
	tp, ok := v.opts.Tenants.PartitionOfTenant(svc.Key.Tenant)
	return !ok || tp == svc.Key.Partition
}

func (v *View) portsLocked(key tenancy.Key) []*PortInfo {
	st := v.services[key]
	if st == nil || st.svc == nil || !v.servedLocked(st.svc) {
		return nil
	}
	return buildPorts(st.svc, st.slices)
}

// Changes says what an Apply changed.
type Changes struct {
	// Full is true when the snapshot was rebuilt from scratch (its first
	// Apply, or after another snapshot was applied in between); Services is
	// then nil and every service may have changed.
	Full bool
	// Services are the services whose served ports or endpoints changed:
	// added, updated or deleted. A deleted service has no ports in the
	// snapshot.
	Services []tenancy.Key
}

// Apply brings s up to date. It is for the view's one incremental consumer
// (a proxier): the view tracks pending changes relative to the snapshot
// applied last, so its cost is proportional to the changed services. A
// snapshot other than the last one applied is rebuilt in full.
func (v *View) Apply(s *Snapshot) Changes {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s.view != v || v.consumer != s {
		s.reset()
		for k := range v.services {
			s.set(k, v.portsLocked(k))
		}
		s.view, v.consumer = v, s
		v.resetPendingLocked()
		return Changes{Full: true}
	}
	var c Changes
	for k := range v.pending {
		if s.set(k, v.portsLocked(k)) {
			c.Services = append(c.Services, k)
		}
	}
	v.resetPendingLocked()
	return c
}

// resetPendingLocked empties pending. Clearing a map costs as much as the
// largest it has been, so a big one is replaced instead: after the initial
// list, an update must not pay for 30k old entries.
func (v *View) resetPendingLocked() {
	if len(v.pending) > 256 {
		v.pending = map[tenancy.Key]struct{}{}
		return
	}
	clear(v.pending)
}

// Snapshot returns a complete new snapshot. It does not touch the pending
// changes of the incremental consumer.
func (v *View) Snapshot() *Snapshot {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := &Snapshot{
		ports:     make(map[ServicePortName]*PortInfo, len(v.services)),
		byService: make(map[tenancy.Key][]*PortInfo, len(v.services)),
	}
	for k := range v.services {
		s.set(k, v.portsLocked(k))
	}
	return s
}
