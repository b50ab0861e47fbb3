package index

import (
	"context"
	"hash/maphash"
	"iter"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// manyEndpoints is the endpoint count above which distinctAddrs finds
// repeats with a map rather than by scanning.
const manyEndpoints = 8

type nsKey struct{ tenant, ns string }

type nsRec struct {
	// key holds the namespace's own copies of its tenant and name, which
	// every record of the namespace shares; id holds them too, for the
	// address maps.
	key    nsKey
	id     *NamespaceID
	object bool
	// services counts the namespace's services: the published ones with
	// the pending changes applied. Their specs are in the snapshot's views
	// and, until published, in pending.specs; the Builder keeps no map of
	// its own.
	services int
	// own holds the slices named after their service, by that name: every
	// core/v1 Endpoints (Arktos's kind) is one, and needs no more than its
	// endpoints here (the views of a service with only this slice share
	// them). A present key with nil views is a slice with no ready endpoint.
	own map[string][]EndpointView
	// slicesBySvc holds the other slices (upstream's EndpointSlices, named
	// <service>-<suffix>), few per service: a slice beats a map.
	slicesBySvc map[string][]sliceRec
	sliceSvc    map[string]string // their names → their services
	// pods holds the namespace's pods by the hash of their name (podID):
	// 24 bytes a pod where name and record took about 60.
	pods   map[podID]podRec
	podIPs map[podID][]netip.Addr // the pods not of one IPv4 address
	// podAddrs is the number of distinct addresses of the namespace's pods
	// in the current snapshot. The per-address pod counts live in the
	// snapshot's source map.
	podAddrs int
}

// podRec is what a pod's later update or delete needs. Nearly every pod
// has one IPv4 address: that one is kept inline, others in the namespace's
// podIPs. A podRec holds no pointer, so the collector need not scan the
// pod maps.
type podRec struct {
	v4          [4]byte
	single      bool // the pod's one address is v4; else see nsRec.podIPs
	hostNetwork bool
}

// setPodRec records pod id with addresses ips.
func (r *nsRec) setPodRec(id podID, ips []netip.Addr, hostNetwork bool) {
	if r.pods == nil {
		r.pods = map[podID]podRec{}
	}
	if len(ips) == 1 && ips[0].Is4() {
		r.pods[id] = podRec{v4: ips[0].As4(), single: true, hostNetwork: hostNetwork}
		delete(r.podIPs, id)
		return
	}
	r.pods[id] = podRec{hostNetwork: hostNetwork}
	if r.podIPs == nil {
		r.podIPs = map[podID][]netip.Addr{}
	}
	r.podIPs[id] = ips
}

// addrsOf returns pod id's addresses, using buf for an inline one.
func (r *nsRec) addrsOf(id podID, pr podRec, buf *[1]netip.Addr) []netip.Addr {
	if pr.single {
		buf[0] = netip.AddrFrom4(pr.v4)
		return buf[:]
	}
	return r.podIPs[id]
}

// hasPod reports whether pod id is recorded with these addresses.
func (r *nsRec) hasPod(id podID, ips []netip.Addr, hostNetwork bool) bool {
	pr, ok := r.pods[id]
	if !ok || pr.hostNetwork != hostNetwork {
		return false
	}
	var buf [1]netip.Addr
	return slices.Equal(r.addrsOf(id, pr, &buf), ips)
}

// dropPodRec forgets pod id; it returns its addresses and whether it is on
// the host network, or false when it was not recorded.
func (r *nsRec) dropPodRec(id podID, buf *[1]netip.Addr) ([]netip.Addr, bool, bool) {
	pr, ok := r.pods[id]
	if !ok {
		return nil, false, false
	}
	ips := r.addrsOf(id, pr, buf)
	delete(r.pods, id)
	delete(r.podIPs, id)
	return ips, pr.hostNetwork, true
}

// podID stands for a pod's name in its namespace: the name's 64-bit hash
// under the Builder's random seed. Two names of one namespace share one
// with a chance of n²/2⁶⁵ (10⁻⁹ for 200,000 pods), and the seed differs
// in every process.
type podID uint64

func (b *Builder) podID(name string) podID { return podID(maphash.String(b.seed, name)) }

// podDelta is a pending change to the count of a namespace's pods with one
// address, and of those of them that are not on the host network.
type podDelta struct{ pods, notHostNetwork int32 }

// countPod adds (d = 1) or removes (d = -1) a pod's addresses in p's
// pending counts.
func (p *pending) countPod(ips []netip.Addr, hostNetwork bool, d int32) {
	if p.podAddrs == nil {
		p.podAddrs = map[netip.Addr]podDelta{}
	}
	for _, a := range ips {
		c := p.podAddrs[a]
		c.pods += d
		if !hostNetwork {
			c.notHostNetwork += d
		}
		p.podAddrs[a] = c
	}
}

// sliceRec is what the Builder keeps of an endpoint slice: its name and its
// endpoints in the form answers use (which a service view with this one
// slice shares).
type sliceRec struct {
	name  string
	views []EndpointView
}

// removeSlice drops slice name of service svc.
func (r *nsRec) removeSlice(svc, name string) {
	if name == svc {
		delete(r.own, name)
		return
	}
	delete(r.sliceSvc, name)
	l := r.slicesBySvc[svc]
	out := l[:0]
	for _, e := range l {
		if e.name != name {
			out = append(out, e)
		}
	}
	clear(l[len(out):])
	if len(out) == 0 {
		delete(r.slicesBySvc, svc)
		return
	}
	r.slicesBySvc[svc] = out
}

// hasSlice reports whether slice name of service svc is recorded with
// these endpoints.
func (r *nsRec) hasSlice(svc, name string, views []EndpointView) bool {
	if old, ok := r.serviceOfSlice(name); !ok || old != svc {
		return false
	}
	same := func(have []EndpointView) bool {
		return slices.EqualFunc(have, views, func(x, y EndpointView) bool {
			return x.addr == y.addr && x.Hostname() == y.Hostname() && x.meta.ports == y.meta.ports // interned: equal lists share one
		})
	}
	if name == svc {
		return same(r.own[name])
	}
	for _, e := range r.slicesBySvc[svc] {
		if e.name == name {
			return same(e.views)
		}
	}
	return false
}

// serviceOfSlice returns the service of slice name, if it is recorded.
func (r *nsRec) serviceOfSlice(name string) (string, bool) {
	if _, ok := r.own[name]; ok {
		return name, true
	}
	svc, ok := r.sliceSvc[name]
	return svc, ok
}

// sliceNames yields the names of the recorded slices.
func (r *nsRec) sliceNames(yield func(string) bool) {
	for name := range r.own {
		if !yield(name) {
			return
		}
	}
	for _, l := range r.slicesBySvc {
		for _, e := range l {
			if !yield(e.name) {
				return
			}
		}
	}
}

func (r *nsRec) empty() bool {
	return !r.object && r.services == 0 && len(r.own) == 0 && len(r.slicesBySvc) == 0 && len(r.pods) == 0
}

type pending struct {
	services map[string]struct{}     // services whose views need building
	specs    map[string]*ServiceSpec // services set (or, nil, deleted) since the last publish
	podAddrs map[netip.Addr]podDelta
	object   bool
}

type dirtyKey struct {
	tp int
	nsKey
}

// Options configure a Builder.
type Options struct {
	// Partitions names the partitions, in index order.
	Partitions []string
	// ObserveLatency, when set, receives for each publish the time from the
	// oldest change it contains to the moment the snapshot was swapped in.
	ObserveLatency func(time.Duration)
}

// Builder collects records from the reflectors and publishes snapshots.
// Its methods are safe for concurrent use.
type Builder struct {
	opts Options

	mu     sync.Mutex
	tps    []map[nsKey]*nsRec
	dirty  map[dirtyKey]*pending
	oldest time.Time
	notify chan struct{}
	// work counts the records and addresses changed since the last
	// publish; full is signalled when it reaches maxWork (maxPendingWork
	// but in tests; see Run).
	work, maxWork int
	full          chan struct{}

	ports portTable // guarded by mu
	seed  maphash.Seed
	// lists holds, for each list in progress (BeginList), the objects
	// there before it that it has not delivered yet.
	lists map[listKey]*unlisted
	// ended are the lists that have ended at least once, and endedPublished
	// how many of them the last Publish folded in, so that readiness can
	// wait for every first list to be answered from, not only delivered
	// (FirstListsPublished).
	ended          map[listKey]bool
	endedPublished int

	pubMu sync.Mutex // serialises Publish
	cur   atomicSnapshot

	// nsIDs numbers every namespace the address tables have named
	// (revOwner.ns, srcOwner.ns), its number in nsNums. It only grows, so that a
	// snapshot keeps its own prefix of it (Snapshot.nsIDs) while later
	// publishes append: a namespace keeps its number and NamespaceID (all
	// of whose fields are its key) when it goes and comes back.
	nsIDs  []*NamespaceID
	nsNums map[dirtyKey]uint32
}

// nsNum numbers namespace dk for the address tables, with id (or, when
// nil, a new one) as its NamespaceID when it has none yet. Callers hold
// b.mu.
func (b *Builder) nsNum(dk dirtyKey, id *NamespaceID) uint32 {
	if n, ok := b.nsNums[dk]; ok {
		return n
	}
	if b.nsNums == nil {
		b.nsNums = map[dirtyKey]uint32{}
	}
	if id == nil {
		id = &NamespaceID{TP: dk.tp, Tenant: dk.tenant, Namespace: dk.ns}
	}
	n := uint32(len(b.nsIDs))
	b.nsIDs = append(b.nsIDs, id)
	b.nsNums[dk] = n
	return n
}

// srcOwner is a namespace with pods that have an address: how many, and
// how many of them are not on the host network. The namespace is its
// number in the snapshot's nsIDs (Builder.nsNum), not a pointer: the
// source table then holds no pointer for the collector to follow, where
// it held one for each of 1.25M pod addresses in a start at 1.5M objects.
type srcOwner struct {
	ns                   uint32
	pods, notHostNetwork uint32
}

// NewBuilder returns a Builder whose current snapshot is empty.
func NewBuilder(o Options) *Builder {
	b := &Builder{opts: o, dirty: map[dirtyKey]*pending{}, notify: make(chan struct{}, 1),
		full: make(chan struct{}, 1), maxWork: maxPendingWork, seed: maphash.MakeSeed()}
	b.tps = make([]map[nsKey]*nsRec, len(o.Partitions))
	s := &Snapshot{home: map[string]int{}}
	for i, name := range o.Partitions {
		b.tps[i] = map[nsKey]*nsRec{}
		s.TPs = append(s.TPs, &TPView{Name: name, Index: i, Tenants: map[string]*TenantView{}})
	}
	b.cur.Store(s)
	return b
}

// Current returns the snapshot queries should read.
func (b *Builder) Current() *Snapshot { return b.cur.Load() }

// FirstListsPublished reports whether the current snapshot holds what
// every ended first list of a partition and kind delivered. A partition
// counts as synced once its lists have been delivered (EndList), but it is
// answered from only after the next Publish, which Run may hold back for a
// few seconds during a large start; a relist does not count, as the
// snapshot answers from the earlier list meanwhile.
func (b *Builder) FirstListsPublished() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.endedPublished == len(b.ended)
}

// Notify is signalled (without blocking) whenever a change is pending.
func (b *Builder) Notify() <-chan struct{} { return b.notify }

// nsKeyOf is a namespace's key: the one place an event's tenant is made
// normal ("system" for none), so the helpers below take keys.
func nsKeyOf(tenant, ns string) nsKey { return nsKey{tenancy.NormalTenant(tenant), ns} }

// touch returns the record of a namespace, creating it, and marks it dirty.
// Callers hold b.mu.
func (b *Builder) touch(tp int, k nsKey) (*nsRec, *pending) {
	r := b.tps[tp][k]
	if r == nil {
		// Copies: the caller's strings may be parts of larger ones (a
		// decoded object's fields) that should not stay alive.
		k = nsKey{strings.Clone(k.tenant), strings.Clone(k.ns)}
		r = &nsRec{key: k, id: &NamespaceID{TP: tp, Tenant: k.tenant, Namespace: k.ns}}
		b.tps[tp][k] = r
	}
	k = r.key
	dk := dirtyKey{tp, k}
	p := b.dirty[dk]
	if p == nil {
		p = &pending{}
		b.dirty[dk] = p
	}
	if b.oldest.IsZero() {
		b.oldest = time.Now()
	}
	select {
	case b.notify <- struct{}{}:
	default:
	}
	b.addWork(1)
	return r, p
}

// maxPendingWork is how many changed records and addresses a publish folds
// in at most while lists load (Run): what is pending, and the edits a
// publish makes of it, take ~100 bytes an address until it is published,
// and a list read faster than the index publishes must not pile up more
// than ~15 MB of them (a start at 1.5M objects held 100 MB in its last
// publish).
const maxPendingWork = 1 << 17

// addWork counts n more changes pending, and signals full at maxWork.
// Callers hold b.mu.
func (b *Builder) addWork(n int) {
	b.work += n
	if b.work >= b.maxWork {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

func (b *Builder) valid(tp int) bool { return tp >= 0 && tp < len(b.tps) }

// lookup returns the record of a namespace and its pending changes, either
// nil when there are none; unlike touch it marks nothing dirty. Callers
// hold b.mu.
func (b *Builder) lookup(tp int, k nsKey) (*nsRec, *pending) {
	r := b.tps[tp][k]
	if r == nil {
		return nil, nil
	}
	return r, b.dirty[dirtyKey{tp, r.key}]
}

// SetNamespace records whether namespace ns of tenant exists in partition tp.
func (b *Builder) SetNamespace(tp int, tenant, ns string, present bool) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setNamespace(tp, tenant, ns, present)
}

func (b *Builder) setNamespace(tp int, tenant, ns string, present bool) {
	k := nsKeyOf(tenant, ns)
	b.listed(tp, Namespaces, k, "")
	if r, _ := b.lookup(tp, k); (r == nil && !present) || (r != nil && r.object == present) {
		return
	}
	r, p := b.touch(tp, k)
	r.object = present
	p.object = true
}

// SetService adds or replaces a service of partition tp. The Builder keeps
// s's ServiceSpec, sharing s's slices.
func (b *Builder) SetService(tp int, s *Service) {
	if !b.valid(tp) || s == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setService(tp, s)
}

func (b *Builder) setService(tp int, s *Service) {
	k := nsKeyOf(s.Tenant, s.Namespace)
	b.listed(tp, Services, k, s.Name)
	if r, p := b.lookup(tp, k); r != nil && sameService(b.service(tp, r, p, s.Name), s) {
		return // a resync, a relist or a change DNS does not see
	}
	r, p := b.touch(tp, k)
	spec := newServiceSpec(s, b.ports.intern(s.Ports))
	b.putService(tp, r, p, s.Name, &spec)
}

// sameService reports whether spec already says what s says.
func sameService(spec *ServiceSpec, s *Service) bool {
	return spec != nil && spec.Name == s.Name && spec.Type == s.Type && spec.ExternalName() == s.ExternalName &&
		slices.Equal(spec.ClusterIPs(), s.ClusterIPs) && slices.Equal(spec.Ports(), s.Ports)
}

// published returns namespace k of partition tp in the current snapshot,
// or nil.
func (b *Builder) published(tp int, k nsKey) *NamespaceView {
	if tv := b.cur.Load().TPs[tp].Tenants[k.tenant]; tv != nil {
		return tv.Namespaces[k.ns]
	}
	return nil
}

// service returns service name of namespace r as the Builder has it: its
// pending spec, else the published one, else nil. Callers hold b.mu.
func (b *Builder) service(tp int, r *nsRec, p *pending, name string) *ServiceSpec {
	if p != nil {
		if s, ok := p.specs[name]; ok {
			return s
		}
	}
	if nv := b.published(tp, r.key); nv != nil {
		if sv := nv.Service(name); sv != nil {
			return &sv.ServiceSpec
		}
	}
	return nil
}

// putService sets (or, with a nil s, deletes) service name of namespace r.
// Callers hold b.mu.
func (b *Builder) putService(tp int, r *nsRec, p *pending, name string, s *ServiceSpec) {
	switch had := b.service(tp, r, p, name) != nil; {
	case had && s == nil:
		r.services--
	case !had && s != nil:
		r.services++
	}
	if p.specs == nil {
		p.specs = map[string]*ServiceSpec{}
	}
	p.specs[name] = s
	p.addService(name)
}

// serviceNames yields the names of namespace r's services (some may come
// twice). Callers hold b.mu.
func (b *Builder) serviceNames(tp int, r *nsRec) iter.Seq[string] {
	return func(yield func(string) bool) {
		if nv := b.published(tp, r.key); nv != nil {
			for sv := range nv.Services() {
				if !yield(sv.Name) {
					return
				}
			}
		}
		if p := b.dirty[dirtyKey{tp, r.key}]; p != nil {
			for name, s := range p.specs {
				if s != nil && !yield(name) {
					return
				}
			}
		}
	}
}

// DeleteService removes a service of partition tp.
func (b *Builder) DeleteService(tp int, tenant, ns, name string) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deleteService(tp, tenant, ns, name)
}

func (b *Builder) deleteService(tp int, tenant, ns, name string) {
	k := nsKeyOf(tenant, ns)
	b.listed(tp, Services, k, name)
	if r, p := b.lookup(tp, k); r == nil || b.service(tp, r, p, name) == nil {
		return
	}
	r, p := b.touch(tp, k)
	b.putService(tp, r, p, name, nil)
}

// SetEndpointSlice adds or replaces an endpoint slice of partition tp. The
// Builder keeps its name and endpoints, not e.
func (b *Builder) SetEndpointSlice(tp int, e *EndpointSlice) {
	if !b.valid(tp) || e == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setEndpointSlice(tp, e)
}

func (b *Builder) setEndpointSlice(tp int, e *EndpointSlice) {
	k := nsKeyOf(e.Tenant, e.Namespace)
	b.listed(tp, EndpointSlices, k, e.Name)
	views := endpointViews(e, &b.ports)
	if r, _ := b.lookup(tp, k); r != nil && r.hasSlice(e.Service, e.Name, views) {
		return
	}
	r, p := b.touch(tp, k)
	b.addWork(len(views))
	e.Tenant, e.Namespace = r.key.tenant, r.key.ns
	if old, ok := r.serviceOfSlice(e.Name); ok {
		r.removeSlice(old, e.Name)
		if old != e.Service {
			p.addService(old)
		}
	}
	if e.Name == e.Service {
		if r.own == nil {
			r.own = map[string][]EndpointView{}
		}
		r.own[e.Name] = views
	} else {
		if r.slicesBySvc == nil {
			r.slicesBySvc, r.sliceSvc = map[string][]sliceRec{}, map[string]string{}
		}
		r.sliceSvc[e.Name] = e.Service
		r.slicesBySvc[e.Service] = append(r.slicesBySvc[e.Service], sliceRec{name: e.Name, views: views})
	}
	p.addService(e.Service)
}

// DeleteEndpointSlice removes an endpoint slice of partition tp.
func (b *Builder) DeleteEndpointSlice(tp int, tenant, ns, name string) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deleteEndpointSlice(tp, tenant, ns, name)
}

func (b *Builder) deleteEndpointSlice(tp int, tenant, ns, name string) {
	k := nsKeyOf(tenant, ns)
	b.listed(tp, EndpointSlices, k, name)
	r, _ := b.lookup(tp, k)
	if r == nil {
		return
	}
	svc, ok := r.serviceOfSlice(name)
	if !ok {
		return
	}
	r, p := b.touch(tp, k)
	r.removeSlice(svc, name)
	p.addService(svc)
}

// SetPod adds or replaces a pod of partition tp. The Builder owns pod from
// then on.
func (b *Builder) SetPod(tp int, pod *Pod) {
	if !b.valid(tp) || pod == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setPod(tp, pod)
}

func (b *Builder) setPod(tp int, pod *Pod) {
	id := b.podID(pod.Name)
	k := nsKeyOf(pod.Tenant, pod.Namespace)
	b.listedPod(tp, k, id)
	if r, _ := b.lookup(tp, k); r != nil && r.hasPod(id, pod.IPs, pod.HostNetwork) {
		return
	}
	r, p := b.touch(tp, k)
	var buf [1]netip.Addr
	if ips, hostNetwork, ok := r.dropPodRec(id, &buf); ok {
		p.countPod(ips, hostNetwork, -1)
	}
	r.setPodRec(id, pod.IPs, pod.HostNetwork)
	p.countPod(pod.IPs, pod.HostNetwork, 1)
}

// DeletePod removes a pod of partition tp.
func (b *Builder) DeletePod(tp int, tenant, ns, name string) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deletePod(tp, tenant, ns, name)
}

func (b *Builder) deletePod(tp int, tenant, ns, name string) {
	id := b.podID(name)
	k := nsKeyOf(tenant, ns)
	b.listedPod(tp, k, id)
	if r, _ := b.lookup(tp, k); r != nil {
		b.dropPod(tp, r, id)
	}
}

// dropPod deletes pod id of namespace r, if it is there. Callers hold b.mu.
func (b *Builder) dropPod(tp int, r *nsRec, id podID) {
	if _, ok := r.pods[id]; !ok {
		return
	}
	r, p := b.touch(tp, r.key)
	var buf [1]netip.Addr
	ips, hostNetwork, _ := r.dropPodRec(id, &buf)
	p.countPod(ips, hostNetwork, -1)
}

func (p *pending) addService(name string) {
	if p.services == nil {
		p.services = map[string]struct{}{}
	}
	p.services[name] = struct{}{}
}

// Run publishes pending changes until ctx ends, at most once per interval so
// that a burst of events becomes one publish. A publish copies the parts of
// the index it changes, which during a list is most of it: while one is in
// progress, after a publish that took d the next waits at least
// publishSpacing × d, so that publishing takes at most a fifth of the time
// however large the index grows, unless maxPendingWork changes are pending
// first: their memory, not the time, then sets the pace. Watch events alone
// wait only interval.
func (b *Builder) Run(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.notify:
		}
		start := time.Now()
		b.Publish()
		wait := interval
		if b.listing() {
			wait = max(interval, publishSpacing*time.Since(start))
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			case <-b.full:
			}
		}
	}
}

// listing reports whether a list is in progress.
func (b *Builder) listing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.lists) > 0
}

// publishSpacing is how many times its own duration Run waits after a
// publish before the next one.
const publishSpacing = 4

// Publish folds every pending change into a new snapshot and makes it
// current. It returns false when nothing was pending.
func (b *Builder) Publish() bool {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	// Everything delivered so far is folded in below (or there was nothing).
	b.endedPublished = len(b.ended)
	b.work = 0
	select {
	case <-b.full:
	default:
	}
	if len(b.dirty) == 0 {
		return false
	}
	old := b.cur.Load()
	e := newSnapshotEdit(old)
	s := e.s
	w := &ipWriter{rev: addrEdits[revOwner]{old: &old.rev}, src: addrEdits[srcOwner]{old: &old.src}}
	tenantsChanged := false
	var touched map[nsName]struct{} // system services that may have gained or lost a partition
	for dk, p := range b.dirty {
		rec := b.tps[dk.tp][dk.nsKey]
		var oldNS *NamespaceView
		if tv := s.TPs[dk.tp].Tenants[dk.tenant]; tv != nil {
			oldNS = tv.Namespaces[dk.ns]
		}
		b.setPodAddrs(w, dk, rec, p.podAddrs)
		newNS := b.buildNamespace(dk, oldNS, rec, p, w)
		if dk.tenant == tenancy.SystemTenant && len(s.TPs) > 1 {
			touched = touchedServices(touched, dk.ns, oldNS, newNS, p)
		}
		if rec != nil && rec.empty() {
			delete(b.tps[dk.tp], dk.nsKey)
		}
		if newNS != oldNS && e.setNamespace(dk, oldNS, newNS) {
			tenantsChanged = true
		}
	}
	markShared(e, old, touched)
	if tenantsChanged || old.home == nil {
		s.home, s.Conflicts = homes(s.TPs)
	} else {
		s.home, s.Conflicts = old.home, old.Conflicts
	}
	s.Serial = uint32(time.Now().Unix())
	clear(b.dirty)
	oldest := b.oldest
	b.oldest = time.Time{}
	b.storeAddrs(s, w)
	if b.opts.ObserveLatency != nil && !oldest.IsZero() {
		b.opts.ObserveLatency(time.Since(oldest))
	}
	return true
}

// nsName is a service of the system tenant by namespace and name, in
// whichever partitions hold it.
type nsName struct{ ns, name string }

// touchedServices adds to touched the system services of namespace ns
// whose views a publish built or dropped (p's), or all of old's when the
// namespace went: only these can have gained or lost a partition. Every
// view built in the publish is among them, so markShared gives each its
// mark.
func touchedServices(touched map[nsName]struct{}, ns string, old, n *NamespaceView, p *pending) map[nsName]struct{} {
	if touched == nil {
		touched = map[nsName]struct{}{}
	}
	if n == nil && old != nil {
		for sv := range old.Services() {
			touched[nsName{ns, sv.Name}] = struct{}{}
		}
	}
	for name := range p.services {
		touched[nsName{ns, name}] = struct{}{}
	}
	return touched
}

// markShared sets ServiceView.Shared on every view of the touched system
// services in e's snapshot: true when more than one partition holds the
// name. A view built in this publish (not in old) is marked in place, as
// no query has seen it yet; a published one is copied with its mark
// flipped, and its namespace's list edited (copy on write), which happens
// only when a name gains its second partition or loses all but one.
func markShared(e *snapshotEdit, old *Snapshot, touched map[nsName]struct{}) {
	if len(touched) == 0 {
		return
	}
	s := e.s
	views := make([]*ServiceView, len(s.TPs))
	var flips map[dirtyKey]map[string]struct{}
	for k := range touched {
		held := 0
		for tp := range s.TPs {
			views[tp] = nil
			if n := namespace(s, tp, tenancy.SystemTenant, k.ns); n != nil {
				views[tp] = n.Service(k.name)
			}
			if views[tp] != nil {
				held++
			}
		}
		shared := held > 1
		for tp, v := range views {
			if v == nil || v.shared == shared {
				continue
			}
			if n := namespace(old, tp, tenancy.SystemTenant, k.ns); n == nil || n.Service(k.name) != v {
				v.shared = shared // built in this publish: unseen yet
				continue
			}
			if flips == nil {
				flips = map[dirtyKey]map[string]struct{}{}
			}
			dk := dirtyKey{tp, nsKey{tenancy.SystemTenant, k.ns}}
			if flips[dk] == nil {
				flips[dk] = map[string]struct{}{}
			}
			flips[dk][k.name] = struct{}{}
		}
	}
	for dk, names := range flips {
		n := namespace(s, dk.tp, dk.tenant, dk.ns)
		c := *n
		c.services = n.services.edit(names, func(_ string, ov *ServiceView) *ServiceView {
			if ov == nil {
				return nil
			}
			nv := *ov
			nv.shared = !ov.shared
			return &nv
		})
		e.setNamespace(dk, n, &c)
	}
}

// storeAddrs writes s's address tables from old's and w's edits, and makes
// s current. When the edits change many shards (a list's pages touch nearly
// all of them), it writes them in addrSteps steps and makes each step's
// snapshot current in turn: the old shards of a step become garbage before
// the next is written, so a publish holds one step's worth of old shards
// beside the new ones, not a copy of both tables (about 25 MB at 600k
// objects). Between steps the names are new and some addresses old, for
// as long as a merge of one step takes; reverse and source lookups are only
// eventually consistent with names anyway.
func (b *Builder) storeAddrs(s *Snapshot, w *ipWriter) {
	s.rev, s.src, s.nsIDs = *w.rev.old, *w.src.old, b.nsIDs
	// The old snapshot must not stay reachable through the edits.
	w.rev.old, w.src.old = nil, nil
	steps := 1
	if w.rev.changed()+w.src.changed() > shards/4 {
		steps = addrSteps
	}
	for i := range steps {
		lo, hi := i*shards/steps, (i+1)*shards/steps
		wrote := w.rev.applyTo(&s.rev, lo, hi)
		wrote = w.src.applyTo(&s.src, lo, hi) || wrote
		if wrote && i < steps-1 {
			step := *s
			b.cur.Store(&step)
		}
	}
	b.cur.Store(s)
}

// addrSteps is how many steps storeAddrs writes a large edit in.
const addrSteps = 8

// homes picks the partition of every regular tenant by tenancy.TenantHome
// (the first partition in flag order among those where it has
// namespaces), and lists the tenants in conflict.
func homes(tps []*TPView) (map[string]int, []string) {
	held := map[string][]int{}
	for _, tp := range tps {
		for t := range tp.Tenants {
			if t != tenancy.SystemTenant {
				held[t] = append(held[t], tp.Index)
			}
		}
	}
	home := make(map[string]int, len(held))
	var conflicts []string
	for t, in := range held {
		h, conflict := tenancy.TenantHome(in, -1)
		home[t] = h
		if conflict {
			conflicts = append(conflicts, t)
		}
	}
	sort.Strings(conflicts)
	return home, conflicts
}

// snapshotEdit makes the next snapshot from the current one, copy on
// write: a partition's view and a tenant's view are cloned the first time
// one of their namespaces changes, and everything unchanged is shared.
type snapshotEdit struct {
	s            *Snapshot
	clonedTP     map[int]bool
	clonedTenant map[tpTenant]bool
}

type tpTenant struct {
	tp     int
	tenant string
}

func newSnapshotEdit(old *Snapshot) *snapshotEdit {
	return &snapshotEdit{s: &Snapshot{TPs: slices.Clone(old.TPs)}, clonedTP: map[int]bool{}, clonedTenant: map[tpTenant]bool{}}
}

// setNamespace puts newNS (nil: none) in place of oldNS for dk. It reports
// whether a namespace appeared or went, which may change tenants' homes.
func (e *snapshotEdit) setNamespace(dk dirtyKey, oldNS, newNS *NamespaceView) (tenantsChanged bool) {
	tpv := e.s.TPs[dk.tp]
	if !e.clonedTP[dk.tp] {
		c := *tpv
		c.Tenants = maps.Clone(tpv.Tenants)
		tpv = &c
		e.s.TPs[dk.tp] = tpv
		e.clonedTP[dk.tp] = true
	}
	tv := tpv.Tenants[dk.tenant]
	if tk := (tpTenant{dk.tp, dk.tenant}); !e.clonedTenant[tk] {
		n := &TenantView{}
		if tv != nil {
			n.Namespaces = maps.Clone(tv.Namespaces)
		} else {
			n.Namespaces = map[string]*NamespaceView{}
		}
		tv = n
		tpv.Tenants[dk.tenant] = tv
		e.clonedTenant[tk] = true
	}
	if newNS == nil {
		delete(tv.Namespaces, dk.ns)
		if len(tv.Namespaces) == 0 {
			delete(tpv.Tenants, dk.tenant)
		}
		return true
	}
	tv.Namespaces[dk.ns] = newNS
	return oldNS == nil
}

// buildNamespace returns the new view of one namespace (nil when it is
// gone), reusing every unchanged service view, and updates the IP maps.
func (b *Builder) buildNamespace(dk dirtyKey, old *NamespaceView, rec *nsRec, p *pending, w *ipWriter) *NamespaceView {
	if rec == nil || rec.empty() {
		if old == nil {
			return nil
		}
		ns := b.nsNum(dk, nil)
		for sv := range old.Services() {
			w.unindexService(ns, sv)
		}
		return nil
	}
	n := &NamespaceView{ID: rec.id, Object: rec.object, PodAddrs: rec.podAddrs}
	if old != nil {
		n.services = old.services
	}
	if len(p.services) > 0 {
		n.services = rebuildServices(&n.services, b.nsNum(dk, rec.id), rec, p, w)
	}
	if old != nil && old.ID == n.ID && old.Object == n.Object && old.PodAddrs == n.PodAddrs && len(p.services) == 0 {
		return old // only pod addresses changed, and those are not here
	}
	return n
}

// rebuildServices returns a namespace's new service list: old's, with the
// views of the services p names built again (or dropped), and updates the
// reverse map, where the namespace is number ns. old is not changed.
func rebuildServices(old *serviceList, ns uint32, rec *nsRec, p *pending, w *ipWriter) serviceList {
	return old.edit(p.services, func(name string, ov *ServiceView) *ServiceView {
		spec, changed := p.specs[name]
		if ov != nil {
			w.unindexService(ns, ov)
			if !changed {
				spec = &ov.ServiceSpec
			}
		}
		sv := buildService(spec, rec.endpointsOf(name))
		if sv != nil {
			w.indexService(ns, sv)
		}
		return sv
	})
}

// endpointsOf returns the endpoints of all of service svc's slices, in the
// order of their names (a stable answer order). With one slice, the common
// case, they are that slice's own (both are immutable once published).
func (r *nsRec) endpointsOf(svc string) []EndpointView {
	own, hasOwn := r.own[svc]
	others := r.slicesBySvc[svc]
	switch {
	case len(others) == 0:
		return own
	case !hasOwn && len(others) == 1:
		return others[0].views
	}
	all := slices.Clone(others)
	if hasOwn {
		all = append(all, sliceRec{name: svc, views: own})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	n := 0
	for _, e := range all {
		n += len(e.views)
	}
	out := make([]EndpointView, 0, n)
	for _, e := range all {
		out = append(out, e.views...)
	}
	return out
}

func buildService(s *ServiceSpec, endpoints []EndpointView) *ServiceView {
	if s == nil {
		return nil
	}
	sv := &ServiceView{ServiceSpec: *s}
	if s.Type == ExternalName {
		return sv
	}
	sv.Endpoints = endpoints
	// No index by hostname: answers scan the endpoints anyway (their order
	// is the answer's), and a map per service of more than a few endpoints
	// took ~650 bytes, a fifth of the index for services of 10 endpoints.
	if addrs := distinctAddrs(sv.Endpoints); addrs != nil {
		sv.more = &viewMore{addrs: addrs}
	}
	return sv
}

// endpointViews lists a slice's endpoints one address each, as answers use
// them, with their ports interned and, but for endpoints with a hostname
// of their own, shared with every endpoint of the same ports.
func endpointViews(e *EndpointSlice, t *portTable) []EndpointView {
	n := 0
	for _, ep := range e.Endpoints {
		n += len(ep.Addrs)
	}
	if n == 0 {
		return nil
	}
	out := make([]EndpointView, 0, n)
	sliceMeta := t.meta(e.Ports)
	var lastIn []Port // a core/v1 subset's endpoints share one list: intern it once
	var last *endpointMeta
	for _, ep := range e.Endpoints {
		meta := sliceMeta
		if ep.Ports != nil {
			if len(ep.Ports) == 0 || len(ep.Ports) != len(lastIn) || &ep.Ports[0] != &lastIn[0] {
				lastIn, last = ep.Ports, t.meta(ep.Ports)
			}
			meta = last
		}
		if ep.Hostname != "" {
			meta = &endpointMeta{ports: meta.ports, hostname: ep.Hostname}
		}
		for _, a := range ep.Addrs {
			out = append(out, EndpointView{addr: keyOf(a), meta: meta})
		}
	}
	return out
}

// ipWriter edits the address maps of the snapshot being built; the
// published maps are never touched, and unchanged shards are shared with
// the previous snapshot.
type ipWriter struct {
	rev addrEdits[revOwner]
	src addrEdits[srcOwner]
}

// indexService adds the addresses of sv, of namespace number ns, to the
// reverse map.
func (w *ipWriter) indexService(ns uint32, sv *ServiceView) {
	h := nameHash(sv.Name)
	add := func(a netip.Addr, ep int32) {
		old := w.rev.get(a)
		w.rev.set(a, append(append(w.rev.alloc(len(old)+1), old...), revOwner{svc: h, ns: ns, ep: ep}))
	}
	if sv.Type == ClusterIP {
		for _, a := range sv.ClusterIPs() {
			add(a, clusterIP)
		}
	}
	for i := range sv.Endpoints {
		add(sv.Endpoints[i].Addr(), int32(i))
	}
}

// unindexService removes the addresses of sv, of namespace number ns, from
// the reverse map.
func (w *ipWriter) unindexService(ns uint32, sv *ServiceView) {
	h := nameHash(sv.Name)
	del := func(a netip.Addr) {
		old := w.rev.get(a)
		if len(old) == 0 {
			return
		}
		n := w.rev.alloc(len(old))
		for _, o := range old {
			if o.ns != ns || o.svc != h {
				n = append(n, o)
			}
		}
		w.rev.set(a, n)
	}
	for _, a := range sv.ClusterIPs() {
		del(a)
	}
	for _, e := range sv.Endpoints {
		del(e.Addr())
	}
}

// setPodAddrs applies namespace dk's pending pod counts to w's source
// map, and keeps rec.podAddrs in line. Callers hold b.mu.
func (b *Builder) setPodAddrs(w *ipWriter, dk dirtyKey, rec *nsRec, deltas map[netip.Addr]podDelta) {
	if len(deltas) == 0 {
		return
	}
	var id *NamespaceID
	if rec != nil {
		id = rec.id
	}
	ns := b.nsNum(dk, id)
	for a, d := range deltas {
		if d == (podDelta{}) {
			continue
		}
		old := w.src.get(a)
		n := w.src.alloc(len(old) + 1)
		own := srcOwner{ns: ns}
		had := false
		for _, o := range old {
			if o.ns == ns {
				own, had = o, true
				continue
			}
			n = append(n, o)
		}
		own.pods = uint32(int64(own.pods) + int64(d.pods))
		own.notHostNetwork = uint32(int64(own.notHostNetwork) + int64(d.notHostNetwork))
		has := int32(own.pods) > 0
		if has {
			n = append(n, own)
		}
		if rec != nil && has != had {
			if has {
				rec.podAddrs++
			} else {
				rec.podAddrs--
			}
		}
		w.src.set(a, n)
	}
}

// distinctAddrs lists the endpoint addresses without repeats, in order, or
// returns nil when there are no repeats (the common case: the endpoints
// list them already).
func distinctAddrs(eps []EndpointView) []netip.Addr {
	var buf [manyEndpoints]netip.Addr
	out := buf[:0]
	if len(eps) <= manyEndpoints {
		for _, e := range eps {
			out = appendNew(out, e.Addr())
		}
	} else {
		seen := make(map[netip.Addr]struct{}, len(eps))
		out = make([]netip.Addr, 0, len(eps))
		for _, e := range eps {
			if _, dup := seen[e.Addr()]; !dup {
				seen[e.Addr()] = struct{}{}
				out = append(out, e.Addr())
			}
		}
	}
	if len(out) == len(eps) {
		return nil
	}
	return slices.Clone(out)
}

// appendNew appends a to out unless out has it.
func appendNew(out []netip.Addr, a netip.Addr) []netip.Addr {
	for _, o := range out {
		if o == a {
			return out
		}
	}
	return append(out, a)
}
