package index

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// manyEndpoints is the endpoint count above which a service gets a hostname
// map; below it, a scan of the endpoints is cheaper than a map.
const manyEndpoints = 8

type nsKey struct{ tenant, ns string }

type nsRec struct {
	object      bool
	services    map[string]*Service
	slicesBySvc map[string]map[string]*EndpointSlice
	sliceSvc    map[string]string // slice name → service name
	pods        map[string]*Pod
}

func (r *nsRec) empty() bool {
	return !r.object && len(r.services) == 0 && len(r.sliceSvc) == 0 && len(r.pods) == 0
}

type pending struct {
	services map[string]struct{}
	pods     bool
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

// Builder collects records from informer handlers and publishes snapshots.
// Its methods are safe for concurrent use.
type Builder struct {
	opts Options

	mu     sync.Mutex
	tps    []map[nsKey]*nsRec
	dirty  map[dirtyKey]*pending
	oldest time.Time
	revM   [shards]map[netip.Addr][]PTR
	srcM   [shards]map[netip.Addr][]srcOwner
	notify chan struct{}

	pubMu sync.Mutex // serialises Publish
	cur   atomicSnapshot
}

type srcOwner struct {
	tp            int
	tenant, ns    string
	notHostNetwrk bool
}

// NewBuilder returns a Builder whose current snapshot is empty.
func NewBuilder(o Options) *Builder {
	b := &Builder{opts: o, dirty: map[dirtyKey]*pending{}, notify: make(chan struct{}, 1)}
	b.tps = make([]map[nsKey]*nsRec, len(o.Partitions))
	s := &Snapshot{home: map[string]int{}}
	for i, name := range o.Partitions {
		b.tps[i] = map[nsKey]*nsRec{}
		s.TPs = append(s.TPs, &TPView{Name: name, Index: i, Tenants: map[string]*TenantView{}})
	}
	for i := range b.revM {
		b.revM[i] = map[netip.Addr][]PTR{}
		b.srcM[i] = map[netip.Addr][]srcOwner{}
	}
	b.cur.Store(s)
	return b
}

// Current returns the snapshot queries should read.
func (b *Builder) Current() *Snapshot { return b.cur.Load() }

// Notify is signalled (without blocking) whenever a change is pending.
func (b *Builder) Notify() <-chan struct{} { return b.notify }

func normTenant(t string) string {
	if tenancy.IsSystem(t) {
		return tenancy.SystemTenant
	}
	return t
}

// rec returns the record of a namespace, creating it, and marks it dirty.
// Callers hold b.mu.
func (b *Builder) touch(tp int, tenant, ns string) (*nsRec, *pending) {
	k := nsKey{normTenant(tenant), ns}
	r := b.tps[tp][k]
	if r == nil {
		r = &nsRec{}
		b.tps[tp][k] = r
	}
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
	return r, p
}

func (b *Builder) valid(tp int) bool { return tp >= 0 && tp < len(b.tps) }

// SetNamespace records whether namespace ns of tenant exists in partition tp.
func (b *Builder) SetNamespace(tp int, tenant, ns string, present bool) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, p := b.touch(tp, tenant, ns)
	r.object = present
	p.object = true
}

// SetService adds or replaces a service of partition tp.
func (b *Builder) SetService(tp int, s *Service) {
	if !b.valid(tp) || s == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, p := b.touch(tp, s.Tenant, s.Namespace)
	if r.services == nil {
		r.services = map[string]*Service{}
	}
	r.services[s.Name] = s
	p.addService(s.Name)
}

// DeleteService removes a service of partition tp.
func (b *Builder) DeleteService(tp int, tenant, ns, name string) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, p := b.touch(tp, tenant, ns)
	delete(r.services, name)
	p.addService(name)
}

// SetEndpointSlice adds or replaces an endpoint slice of partition tp.
func (b *Builder) SetEndpointSlice(tp int, e *EndpointSlice) {
	if !b.valid(tp) || e == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, p := b.touch(tp, e.Tenant, e.Namespace)
	if old, ok := r.sliceSvc[e.Name]; ok && old != e.Service {
		delete(r.slicesBySvc[old], e.Name)
		if len(r.slicesBySvc[old]) == 0 {
			delete(r.slicesBySvc, old)
		}
		p.addService(old)
	}
	if r.sliceSvc == nil {
		r.sliceSvc = map[string]string{}
		r.slicesBySvc = map[string]map[string]*EndpointSlice{}
	}
	r.sliceSvc[e.Name] = e.Service
	m := r.slicesBySvc[e.Service]
	if m == nil {
		m = map[string]*EndpointSlice{}
		r.slicesBySvc[e.Service] = m
	}
	m[e.Name] = e
	p.addService(e.Service)
}

// DeleteEndpointSlice removes an endpoint slice of partition tp.
func (b *Builder) DeleteEndpointSlice(tp int, tenant, ns, name string) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, p := b.touch(tp, tenant, ns)
	svc, ok := r.sliceSvc[name]
	if !ok {
		return
	}
	delete(r.sliceSvc, name)
	delete(r.slicesBySvc[svc], name)
	if len(r.slicesBySvc[svc]) == 0 {
		delete(r.slicesBySvc, svc)
	}
	p.addService(svc)
}

// SetPod adds or replaces a pod of partition tp.
func (b *Builder) SetPod(tp int, pod *Pod) {
	if !b.valid(tp) || pod == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, p := b.touch(tp, pod.Tenant, pod.Namespace)
	if r.pods == nil {
		r.pods = map[string]*Pod{}
	}
	r.pods[pod.Name] = pod
	p.pods = true
}

// DeletePod removes a pod of partition tp.
func (b *Builder) DeletePod(tp int, tenant, ns, name string) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, p := b.touch(tp, tenant, ns)
	delete(r.pods, name)
	p.pods = true
}

func (p *pending) addService(name string) {
	if p.services == nil {
		p.services = map[string]struct{}{}
	}
	p.services[name] = struct{}{}
}

// Run publishes pending changes until ctx ends, at most once per interval so
// that a burst of events (a TP's initial list) becomes one publish.
func (b *Builder) Run(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.notify:
		}
		b.Publish()
		if interval > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}
}

// Publish folds every pending change into a new snapshot and makes it
// current. It returns false when nothing was pending.
func (b *Builder) Publish() bool {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dirty) == 0 {
		return false
	}
	old := b.cur.Load()
	s := &Snapshot{TPs: slices.Clone(old.TPs), rev: old.rev, src: old.src}
	clonedTP := map[int]bool{}
	type tpTenant struct {
		tp     int
		tenant string
	}
	clonedTenant := map[tpTenant]bool{}
	dirtyRev := [shards]bool{}
	dirtySrc := [shards]bool{}
	tenantsChanged := false

	for dk, p := range b.dirty {
		rec := b.tps[dk.tp][dk.nsKey]
		tpv := s.TPs[dk.tp]
		var oldNS *NamespaceView
		if tv := tpv.Tenants[dk.tenant]; tv != nil {
			oldNS = tv.Namespaces[dk.ns]
		}
		newNS := b.buildNamespace(dk, oldNS, rec, p, &dirtyRev, &dirtySrc)
		if rec != nil && rec.empty() {
			delete(b.tps[dk.tp], dk.nsKey)
		}
		if newNS == oldNS {
			continue
		}
		if !clonedTP[dk.tp] {
			c := *tpv
			c.Tenants = maps.Clone(tpv.Tenants)
			tpv = &c
			s.TPs[dk.tp] = tpv
			clonedTP[dk.tp] = true
		}
		tv := tpv.Tenants[dk.tenant]
		if tk := (tpTenant{dk.tp, dk.tenant}); !clonedTenant[tk] {
			n := &TenantView{}
			if tv != nil {
				n.Namespaces = maps.Clone(tv.Namespaces)
			} else {
				n.Namespaces = map[string]*NamespaceView{}
			}
			tv = n
			tpv.Tenants[dk.tenant] = tv
			clonedTenant[tk] = true
		}
		if newNS == nil {
			delete(tv.Namespaces, dk.ns)
			tenantsChanged = true
			if len(tv.Namespaces) == 0 {
				delete(tpv.Tenants, dk.tenant)
			}
		} else {
			if oldNS == nil {
				tenantsChanged = true
			}
			tv.Namespaces[dk.ns] = newNS
		}
	}
	for i := range dirtyRev {
		if dirtyRev[i] {
			s.rev[i] = maps.Clone(b.revM[i])
		}
		if dirtySrc[i] {
			s.src[i] = b.sources(i)
		}
	}
	if tenantsChanged || old.home == nil {
		s.home, s.Conflicts = homes(s.TPs)
	} else {
		s.home, s.Conflicts = old.home, old.Conflicts
	}
	s.Serial = uint32(time.Now().Unix())
	clear(b.dirty)
	oldest := b.oldest
	b.oldest = time.Time{}
	b.cur.Store(s)
	if b.opts.ObserveLatency != nil && !oldest.IsZero() {
		b.opts.ObserveLatency(time.Since(oldest))
	}
	return true
}

// homes picks the partition of every regular tenant: the lowest index among
// the partitions where it has namespaces.
func homes(tps []*TPView) (map[string]int, []string) {
	home := map[string]int{}
	var conflicts []string
	seen := map[string]bool{}
	for _, tp := range tps {
		for t := range tp.Tenants {
			if t == tenancy.SystemTenant {
				continue
			}
			if prev, ok := home[t]; ok {
				if prev != tp.Index && !seen[t] {
					seen[t] = true
					conflicts = append(conflicts, t)
				}
				if tp.Index < prev {
					home[t] = tp.Index
				}
				continue
			}
			home[t] = tp.Index
		}
	}
	sort.Strings(conflicts)
	return home, conflicts
}

// sources resolves each address of shard i to one source: the lowest
// partition, preferring pods that are not on the host network.
func (b *Builder) sources(i int) map[netip.Addr]Source {
	out := make(map[netip.Addr]Source, len(b.srcM[i]))
	for a, owners := range b.srcM[i] {
		best := -1
		for j, o := range owners {
			if best < 0 {
				best = j
				continue
			}
			bo := owners[best]
			if (o.notHostNetwrk && !bo.notHostNetwrk) || (o.notHostNetwrk == bo.notHostNetwrk && o.tp < bo.tp) {
				best = j
			}
		}
		if best >= 0 && owners[best].notHostNetwrk {
			out[a] = Source{TP: owners[best].tp, Tenant: owners[best].tenant}
		}
	}
	return out
}

// buildNamespace returns the new view of one namespace (nil when it is
// gone), reusing every unchanged service view, and updates the IP maps.
func (b *Builder) buildNamespace(dk dirtyKey, old *NamespaceView, rec *nsRec, p *pending, dirtyRev, dirtySrc *[shards]bool) *NamespaceView {
	if rec == nil || rec.empty() {
		if old == nil {
			return nil
		}
		for name, sv := range old.Services {
			b.unindexService(dk, name, sv, dirtyRev)
		}
		b.unindexPods(dk, old, dirtySrc)
		return nil
	}
	n := &NamespaceView{Object: rec.object}
	if old != nil {
		n.Services, n.Pods = old.Services, old.Pods
	}
	if len(p.services) > 0 {
		n.Services = maps.Clone(n.Services)
		if n.Services == nil {
			n.Services = map[string]*ServiceView{}
		}
		for name := range p.services {
			if ov := n.Services[name]; ov != nil {
				b.unindexService(dk, name, ov, dirtyRev)
			}
			sv := buildService(rec.services[name], rec.slicesBySvc[name])
			if sv == nil {
				delete(n.Services, name)
				continue
			}
			n.Services[name] = sv
			b.indexService(dk, name, sv, dirtyRev)
		}
	}
	if p.pods {
		if old != nil {
			b.unindexPods(dk, old, dirtySrc)
		}
		n.Pods = make(map[netip.Addr]bool, len(rec.pods))
		for _, pod := range rec.pods {
			for _, a := range pod.IPs {
				n.Pods[a] = n.Pods[a] || !pod.HostNetwork
			}
		}
		b.indexPods(dk, n, dirtySrc)
	}
	return n
}

func buildService(s *Service, slices map[string]*EndpointSlice) *ServiceView {
	if s == nil {
		return nil
	}
	sv := &ServiceView{Name: s.Name, Type: s.Type, ClusterIPs: s.ClusterIPs, Ports: s.Ports, ExternalName: s.ExternalName}
	if s.Type == ExternalName {
		return sv
	}
	names := make([]string, 0, len(slices))
	for n := range slices {
		names = append(names, n)
	}
	sort.Strings(names) // a stable order of answers between publishes
	for _, n := range names {
		e := slices[n]
		for _, ep := range e.Endpoints {
			for _, a := range ep.Addrs {
				sv.Endpoints = append(sv.Endpoints, EndpointView{Addr: a, Host: EndpointHostname(ep.Hostname, a), Ports: e.Ports})
			}
		}
	}
	seen := make(map[netip.Addr]struct{}, len(sv.Endpoints))
	for _, e := range sv.Endpoints {
		if _, dup := seen[e.Addr]; !dup {
			seen[e.Addr] = struct{}{}
			sv.Addrs = append(sv.Addrs, e.Addr)
		}
	}
	if len(sv.Endpoints) > manyEndpoints {
		sv.hosts = make(map[string][]int32, len(sv.Endpoints))
		for i, e := range sv.Endpoints {
			sv.hosts[e.Host] = append(sv.hosts[e.Host], int32(i))
		}
	}
	return sv
}

func (b *Builder) indexService(dk dirtyKey, name string, sv *ServiceView, dirty *[shards]bool) {
	add := func(a netip.Addr, host string) {
		i := shardOf(a)
		dirty[i] = true
		old := b.revM[i][a]
		n := make([]PTR, len(old), len(old)+1)
		copy(n, old)
		b.revM[i][a] = append(n, PTR{TP: dk.tp, Tenant: dk.tenant, Namespace: dk.ns, Service: name, Host: host})
	}
	if sv.Type == ClusterIP {
		for _, a := range sv.ClusterIPs {
			add(a, "")
		}
	}
	for _, e := range sv.Endpoints {
		add(e.Addr, e.Host)
	}
}

func (b *Builder) unindexService(dk dirtyKey, name string, sv *ServiceView, dirty *[shards]bool) {
	del := func(a netip.Addr) {
		i := shardOf(a)
		old := b.revM[i][a]
		if len(old) == 0 {
			return
		}
		dirty[i] = true
		n := make([]PTR, 0, len(old))
		for _, p := range old {
			if p.TP == dk.tp && p.Tenant == dk.tenant && p.Namespace == dk.ns && p.Service == name {
				continue
			}
			n = append(n, p)
		}
		if len(n) == 0 {
			delete(b.revM[i], a)
			return
		}
		b.revM[i][a] = n
	}
	for _, a := range sv.ClusterIPs {
		del(a)
	}
	for _, e := range sv.Endpoints {
		del(e.Addr)
	}
}

func (b *Builder) indexPods(dk dirtyKey, n *NamespaceView, dirty *[shards]bool) {
	for a, notHost := range n.Pods {
		i := shardOf(a)
		dirty[i] = true
		old := b.srcM[i][a]
		c := make([]srcOwner, len(old), len(old)+1)
		copy(c, old)
		b.srcM[i][a] = append(c, srcOwner{tp: dk.tp, tenant: dk.tenant, ns: dk.ns, notHostNetwrk: notHost})
	}
}

func (b *Builder) unindexPods(dk dirtyKey, n *NamespaceView, dirty *[shards]bool) {
	for a := range n.Pods {
		i := shardOf(a)
		old := b.srcM[i][a]
		dirty[i] = true
		c := make([]srcOwner, 0, len(old))
		for _, o := range old {
			if o.tp == dk.tp && o.tenant == dk.tenant && o.ns == dk.ns {
				continue
			}
			c = append(c, o)
		}
		if len(c) == 0 {
			delete(b.srcM[i], a)
			continue
		}
		b.srcM[i][a] = c
	}
}
