/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubeproxy

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Options configure a View.
type Options struct {
	// Tenants, when set, says where regular tenants live; a regular
	// tenant's service seen in another TP is not served. Call
	// View.TenantMoved when its answer for a tenant changes.
	Tenants TenantPartitions
	// Logger receives the view's log lines (input skipped as invalid, at
	// warning level); nil discards them.
	Logger corelog.Logger
}

// View is the multi-TP state of services and endpoints, and the change
// tracker between the handlers and a proxier: the endpoint filter that keeps
// each service's endpoints in its own TP. It implements ServiceHandler and
// EndpointsHandler and is safe for concurrent use.
//
// Events only update records and mark their service pending; Apply turns
// pending services into snapshot entries. So an event costs O(size of the
// object) and an Apply costs O(size of the changed services), whatever the
// total number of services.
//
// An update's old record is not read (it may be nil), and nothing of a
// record is kept once the call returns (its strings are, being immutable):
// a caller converting API objects may skip the old one and reuse its
// records and their slices.
type View struct {
	// skipped and dropped are updated with sync/atomic; they come first
	// so that they are 64-bit aligned on 32-bit platforms too.
	skipped, dropped uint64

	opts Options
	log  corelog.Logger

	mu         sync.Mutex
	partitions map[int]bool
	svcSynced  map[int]bool
	epSynced   map[int]bool
	services   map[ServiceName]*serviceState
	owner      map[ServiceName]string              // endpoints object -> service it feeds, when not its namesake (ownerLocked)
	byTenant   map[string]map[ServiceName]struct{} // regular tenant -> its services, all TPs
	pending    map[ServiceName]struct{}            // services changed since the consumer's last Apply
	svcCount   map[int]int                         // TP -> services (with a service object) it has
	epCount    map[int]int                         // TP -> endpoints objects feeding a service it has
	consumer   *Snapshot                           // the snapshot pending is relative to
	wake       chan struct{}
}

// serviceState is what the view knows of one service name: the service, if
// seen, and the endpoints objects that name it, if any.
type serviceState struct {
	svc *service
	// sets are the endpoints objects feeding it, by name: a slice, as a
	// service usually has one (core/v1 Endpoints) or a few (slices).
	sets []*endpointSet
}

// set returns the index of the set named name, or -1.
func (st *serviceState) set(name string) int {
	for i, s := range st.sets {
		if s.name == name {
			return i
		}
	}
	return -1
}

// NewView returns an empty view of the TPs tenantPartitionIDs. Events from
// other TPs are dropped.
func NewView(tenantPartitionIDs []int, o Options) *View {
	v := &View{
		opts:       o,
		log:        corelog.OrDiscard(o.Logger),
		partitions: make(map[int]bool, len(tenantPartitionIDs)),
		svcSynced:  map[int]bool{},
		epSynced:   map[int]bool{},
		services:   map[ServiceName]*serviceState{},
		owner:      map[ServiceName]string{},
		byTenant:   map[string]map[ServiceName]struct{}{},
		pending:    map[ServiceName]struct{}{},
		svcCount:   map[int]int{},
		epCount:    map[int]int{},
		wake:       make(chan struct{}, 1),
	}
	for _, p := range tenantPartitionIDs {
		v.partitions[p] = true
	}
	return v
}

// Changed is signalled (without blocking, at most one signal queued) when
// services become pending or a TP reports synced.
func (v *View) Changed() <-chan struct{} { return v.wake }

func (v *View) signal() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// Synced reports whether every served TP has reported both its services and
// its endpoints synced. (Arktos's proxier counts as initialised after the
// first TP; a dataplane fed from here waits for all of them.)
func (v *View) Synced() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for p := range v.partitions {
		if !v.svcSynced[p] || !v.epSynced[p] {
			return false
		}
	}
	return true
}

// ViewStats are a view's counters, for a program to publish.
type ViewStats struct {
	// Skipped counts records, or parts of them, skipped as invalid.
	Skipped uint64
	// Dropped counts events from TPs the view does not serve.
	Dropped uint64
	// Pending is the number of services changed since the last Apply.
	Pending int
	// Partitions are the served TPs' figures, by tenantPartitionId.
	Partitions []PartitionStats
}

// PartitionStats are the figures of one served TP.
type PartitionStats struct {
	// TenantPartitionID is the TP's id (its client's index).
	TenantPartitionID int
	// ServicesSynced and EndpointsSynced say whether the TP has reported
	// its services and its endpoints synced (or a caller marked them so,
	// as a sync timeout does).
	ServicesSynced, EndpointsSynced bool
	// Services is the number of the TP's services the view holds (served
	// or not: an ExternalName service counts too).
	Services int
	// Endpoints is the number of the TP's endpoints objects that feed a
	// service.
	Endpoints int
}

// Stats returns the view's counters and the served TPs' figures. Its cost is
// proportional to the number of TPs, not of services: the counts are kept as
// events arrive.
func (v *View) Stats() ViewStats {
	v.mu.Lock()
	pending := len(v.pending)
	parts := make([]PartitionStats, 0, len(v.partitions))
	for p := range v.partitions {
		parts = append(parts, PartitionStats{TenantPartitionID: p, ServicesSynced: v.svcSynced[p], EndpointsSynced: v.epSynced[p],
			Services: v.svcCount[p], Endpoints: v.epCount[p]})
	}
	v.mu.Unlock()
	sort.Slice(parts, func(i, j int) bool { return parts[i].TenantPartitionID < parts[j].TenantPartitionID })
	return ViewStats{Skipped: atomic.LoadUint64(&v.skipped), Dropped: atomic.LoadUint64(&v.dropped), Pending: pending, Partitions: parts}
}

// OnServiceAdd records a service of TP tenantPartitionId.
func (v *View) OnServiceAdd(service *Service, tenantPartitionId int) {
	v.upsertService(service, tenantPartitionId)
}

// OnServiceUpdate records the new state of a service of TP
// tenantPartitionId; the old record is not read.
func (v *View) OnServiceUpdate(_, service *Service, tenantPartitionId int) {
	v.upsertService(service, tenantPartitionId)
}

// OnServiceDelete forgets a service of TP tenantPartitionId. Its endpoints
// stay, as the API keeps them until their controller deletes them, but feed
// nothing.
func (v *View) OnServiceDelete(service *Service, tenantPartitionId int) {
	if service == nil {
		return
	}
	name := nameOf(tenantPartitionId, service.Tenant, service.Namespace, service.Name)
	v.mu.Lock()
	defer v.mu.Unlock()
	st := v.services[name]
	if st == nil || st.svc == nil {
		return
	}
	st.svc = nil
	v.svcCount[tenantPartitionId]--
	v.forgetTenantLocked(name)
	if len(st.sets) == 0 {
		delete(v.services, name)
	}
	v.markLocked(name)
}

// OnServiceSynced marks the services of TP tenantPartitionId synced.
func (v *View) OnServiceSynced(tenantPartitionId int) {
	v.mu.Lock()
	v.svcSynced[tenantPartitionId] = true
	v.mu.Unlock()
	v.signal()
}

// OnEndpointsAdd records an endpoints object of TP tenantPartitionId.
func (v *View) OnEndpointsAdd(endpoints *Endpoints, tenantPartitionId int) {
	v.upsertEndpoints(endpoints, tenantPartitionId)
}

// OnEndpointsUpdate records the new state of an endpoints object of TP
// tenantPartitionId; the old record is not read.
func (v *View) OnEndpointsUpdate(_, endpoints *Endpoints, tenantPartitionId int) {
	v.upsertEndpoints(endpoints, tenantPartitionId)
}

// OnEndpointsDelete forgets an endpoints object of TP tenantPartitionId.
func (v *View) OnEndpointsDelete(endpoints *Endpoints, tenantPartitionId int) {
	if endpoints == nil {
		return
	}
	key := nameOf(tenantPartitionId, endpoints.Tenant, endpoints.Namespace, endpoints.Name)
	v.mu.Lock()
	defer v.mu.Unlock()
	if svc, ok := v.ownerLocked(key); ok {
		v.removeEndpointsLocked(key, svc)
	}
}

// OnEndpointsSynced marks the endpoints of TP tenantPartitionId synced.
func (v *View) OnEndpointsSynced(tenantPartitionId int) {
	v.mu.Lock()
	v.epSynced[tenantPartitionId] = true
	v.mu.Unlock()
	v.signal()
}

func (v *View) upsertService(rec *Service, tp int) {
	svc, err := parseService(tp, rec)
	if err != nil {
		atomic.AddUint64(&v.skipped, 1)
		v.log.Warningf("kubeproxy: skipping invalid service data from TP %d: %v", tp, err)
	}
	if svc == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.acceptLocked(tp) {
		return
	}
	st := v.services[svc.name]
	if st == nil {
		st = &serviceState{}
		v.services[svc.name] = st
	} else if equalService(st.svc, svc) {
		return // a resync or a change the proxy does not see
	}
	if st.svc == nil {
		v.svcCount[tp]++
	}
	st.svc = svc
	if !tenancy.IsSystem(svc.name.Tenant) {
		m := v.byTenant[svc.name.Tenant]
		if m == nil {
			m = map[ServiceName]struct{}{}
			v.byTenant[svc.name.Tenant] = m
		}
		m[svc.name] = struct{}{}
	}
	v.markLocked(svc.name)
}

func (v *View) upsertEndpoints(rec *Endpoints, tp int) {
	key, set, err := parseEndpoints(tp, rec)
	if err != nil {
		atomic.AddUint64(&v.skipped, 1)
		v.log.Warningf("kubeproxy: skipping invalid endpoints data from TP %d: %v", tp, err)
	}
	if set == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.acceptLocked(tp) {
		return
	}
	prev, known := v.ownerLocked(key)
	if known && prev != set.service {
		// The object feeds another service now, or none: take it from the
		// old one.
		v.removeEndpointsLocked(key, prev)
		known = false
	}
	if set.service == "" {
		return
	}
	svcName := key
	svcName.Name = set.service
	st := v.services[svcName]
	if st == nil {
		st = &serviceState{}
		v.services[svcName] = st
	}
	if i := st.set(key.Name); i < 0 {
		st.sets = append(st.sets, set)
	} else if equalEndpoints(st.sets[i], set) {
		return
	} else {
		st.sets[i] = set
	}
	if !known {
		v.epCount[tp]++
		if set.service != key.Name {
			v.owner[key] = set.service
		}
	}
	v.markLocked(svcName)
}

// ownerLocked returns the service that the endpoints object key feeds, if
// the view holds the object. An object named after its service, as every
// core/v1 Endpoints is, is found among that service's sets; only the others
// (EndpointSlices) take an entry in owner, which at 30k services saves a
// map of 30k names.
func (v *View) ownerLocked(key ServiceName) (string, bool) {
	if svc, ok := v.owner[key]; ok {
		return svc, true
	}
	if st := v.services[key]; st != nil && st.set(key.Name) >= 0 {
		return key.Name, true
	}
	return "", false
}

func (v *View) removeEndpointsLocked(key ServiceName, service string) {
	if _, ok := v.ownerLocked(key); ok {
		v.epCount[key.TenantPartitionID]--
	}
	delete(v.owner, key)
	svcName := key
	svcName.Name = service
	st := v.services[svcName]
	if st == nil {
		return
	}
	i := st.set(key.Name)
	if i < 0 {
		return
	}
	last := len(st.sets) - 1
	st.sets[i] = st.sets[last]
	st.sets[last] = nil
	st.sets = st.sets[:last]
	if st.svc == nil && len(st.sets) == 0 {
		delete(v.services, svcName)
	}
	v.markLocked(svcName)
}

func (v *View) forgetTenantLocked(name ServiceName) {
	if m := v.byTenant[name.Tenant]; m != nil {
		delete(m, name)
		if len(m) == 0 {
			delete(v.byTenant, name.Tenant)
		}
	}
}

func (v *View) acceptLocked(tp int) bool {
	if v.partitions[tp] {
		return true
	}
	atomic.AddUint64(&v.dropped, 1)
	return false
}

func (v *View) markLocked(name ServiceName) {
	v.pending[name] = struct{}{}
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

// RemovePartition deletes every service and endpoints object of TP
// tenantPartitionId and stops accepting its events: the TP was removed from
// the configuration. A TP that is only unreachable must not be removed; its
// last state stays served.
func (v *View) RemovePartition(tenantPartitionId int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.removePartitionLocked(tenantPartitionId)
}

func (v *View) removePartitionLocked(tp int) {
	delete(v.partitions, tp)
	delete(v.svcSynced, tp)
	delete(v.epSynced, tp)
	delete(v.svcCount, tp)
	delete(v.epCount, tp)
	for k := range v.services {
		if k.TenantPartitionID == tp {
			v.forgetTenantLocked(k)
			delete(v.services, k)
			v.markLocked(k)
		}
	}
	for k := range v.owner {
		if k.TenantPartitionID == tp {
			delete(v.owner, k)
		}
	}
}

// SetPartitions makes tenantPartitionIDs the served TPs: TPs no longer
// listed are removed as by RemovePartition; new ones are accepted from now
// on (and waited for by Synced).
func (v *View) SetPartitions(tenantPartitionIDs []int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	keep := make(map[int]bool, len(tenantPartitionIDs))
	for _, p := range tenantPartitionIDs {
		keep[p] = true
	}
	for p := range v.partitions {
		if !keep[p] {
			v.removePartitionLocked(p)
		}
	}
	v.partitions = keep
}

// Partitions returns the served tenantPartitionIds, unordered.
func (v *View) Partitions() []int {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]int, 0, len(v.partitions))
	for p := range v.partitions {
		out = append(out, p)
	}
	return out
}

// servedLocked reports whether svc is served: system-tenant services always,
// a regular tenant's only from the TP it lives in when that is known.
func (v *View) servedLocked(svc *service) bool {
	if v.opts.Tenants == nil || tenancy.IsSystem(svc.name.Tenant) {
		return true
	}
	tp, ok := v.opts.Tenants.PartitionOfTenant(svc.name.Tenant)
	return !ok || tp == svc.name.TenantPartitionID
}

func (v *View) portsLocked(name ServiceName) []*PortInfo {
	st := v.services[name]
	if st == nil || st.svc == nil || !v.servedLocked(st.svc) {
		return nil
	}
	return buildPorts(st.svc, st.sets)
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
	Services []ServiceName
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

// resetPendingLocked empties pending. Emptying a map costs as much as the
// largest it has been, so a big one is replaced instead: after the initial
// list, an update must not pay for 30k old entries.
func (v *View) resetPendingLocked() {
	if len(v.pending) > 256 {
		v.pending = map[ServiceName]struct{}{}
		return
	}
	for k := range v.pending {
		delete(v.pending, k)
	}
}

// Snapshot returns a complete new snapshot. It does not touch the pending
// changes of the incremental consumer.
func (v *View) Snapshot() *Snapshot {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := &Snapshot{
		ports:     make(map[ServicePortName]*PortInfo, len(v.services)),
		byService: make(map[ServiceName][]*PortInfo, len(v.services)),
	}
	for k := range v.services {
		s.set(k, v.portsLocked(k))
	}
	return s
}
