package index

import (
	"iter"
	"net/netip"
	"unsafe"
)

// Snapshot is an immutable view of every partition's records.
type Snapshot struct {
	// TPs holds one view per partition, by index.
	TPs []*TPView
	// home maps each regular tenant to the partition that answers for it.
	home map[string]int
	// Conflicts lists regular tenants found in more than one partition.
	Conflicts []string
	// Serial is the Unix time of the publish that made the snapshot, for
	// the SOA serial.
	Serial uint32

	rev addrMap[revOwner]
	src addrMap[srcOwner]
	// nsIDs are the namespaces rev and src number (Builder.nsIDs when this
	// snapshot was made).
	nsIDs []*NamespaceID
}

// TPView is one partition's records by tenant.
type TPView struct {
	Name    string
	Index   int
	Tenants map[string]*TenantView
}

// TenantView is one tenant's namespaces in one partition.
type TenantView struct {
	Namespaces map[string]*NamespaceView
}

// NamespaceView is one namespace's services. Its pod addresses are in the
// snapshot's address map (Snapshot.HasPod), not here: one map for all pods
// is smaller than one per namespace, and a pod change edits it in place of
// rebuilding a whole namespace's.
type NamespaceView struct {
	// ID names the namespace.
	ID *NamespaceID
	// Object is true when the namespace object itself has been seen.
	Object   bool
	services serviceList
	// PodAddrs is the number of distinct pod addresses in the namespace.
	PodAddrs int
}

// Exists reports whether the namespace exists for DNS: its object has been
// seen, or it holds services.
func (n *NamespaceView) Exists() bool { return n != nil && (n.Object || n.services.n > 0) }

// Service returns the service called name, or nil.
func (n *NamespaceView) Service(name string) *ServiceView {
	return n.services.get(name)
}

// ServiceBytes is Service for a name in bytes (a query's), without copying
// it.
func (n *NamespaceView) ServiceBytes(name []byte) *ServiceView {
	return n.Service(unsafe.String(unsafe.SliceData(name), len(name)))
}

// Services yields the namespace's services, in no particular order.
func (n *NamespaceView) Services() iter.Seq[*ServiceView] { return n.services.all() }

// ServiceCount is the number of services.
func (n *NamespaceView) ServiceCount() int { return n.services.n }

// ServiceView is one service with its ready endpoints. Views are immutable;
// a change to a service makes a new one.
type ServiceView struct {
	ServiceSpec
	// Endpoints lists every ready endpoint address of every slice.
	Endpoints []EndpointView
	// more is what only some views need; nil for most, which keeps a view
	// at 96 bytes.
	more *viewMore
}

// Shared reports whether another partition holds a service of the same
// name in the same namespace of the system tenant: then a querier in that
// partition would get another answer for the name. It is computed when a
// snapshot is published (Builder.markShared), so that an answer reads a
// flag instead of looking in every other partition; it is always false for
// a regular tenant's service, which only its home partition answers.
func (s *ServiceView) Shared() bool { return s.shared }

// viewMore holds a service view's rarely needed parts.
type viewMore struct {
	// addrs lists the distinct endpoint addresses, in endpoint order, when
	// some endpoints share one; else it is nil and they are the endpoints'
	// (see AddrCount and Addr).
	addrs []netip.Addr
}

// EndpointView is one ready endpoint address. A view takes 24 bytes (it
// took 64 with its address as a netip.Addr, its label as a string and its
// ports as a slice): at 1.5M objects there are more than a million.
type EndpointView struct {
	addr addrKey
	// meta holds the endpoint's ports and own hostname. Endpoints
	// without a hostname of their own share one per port list (their
	// name is their address's label, made when an answer needs it).
	meta *endpointMeta
}

// endpointMeta is what endpoints share: their slice's (interned) ports,
// and a hostname, which only endpoints that have one do not share.
type endpointMeta struct {
	ports    *[]Port
	hostname string
}

// Addr is the endpoint's address.
func (e *EndpointView) Addr() netip.Addr { return e.addr.addr() }

// Hostname is the endpoint's own hostname; empty when its name is its
// address's label.
func (e *EndpointView) Hostname() string { return e.meta.hostname }

// Host is the endpoint's DNS label (EndpointHostname). It allocates for a
// label made from the address; answers use AppendHost, HostIs and
// SameHost.
func (e *EndpointView) Host() string { return EndpointHostname(e.Hostname(), e.Addr()) }

// AppendHost appends the endpoint's DNS label to b. With room for 63
// bytes in b it does not allocate.
func (e *EndpointView) AppendHost(b []byte) []byte {
	if h := e.meta.hostname; h != "" {
		return append(b, h...)
	}
	return appendAddrLabel(b, e.Addr())
}

// HostIs reports whether the endpoint's DNS label is label, without
// allocating.
func (e *EndpointView) HostIs(label []byte) bool {
	if h := e.meta.hostname; h != "" {
		return h == string(label)
	}
	var buf [maxAddrLabel]byte
	return string(appendAddrLabel(buf[:0], e.Addr())) == string(label)
}

// SameHost reports whether e and o have the same DNS label, without
// allocating.
func (e *EndpointView) SameHost(o *EndpointView) bool {
	eh, oh := e.meta.hostname, o.meta.hostname
	switch {
	case eh == "" && oh == "":
		return e.addr == o.addr // address labels are distinct
	case eh != "" && oh != "":
		return eh == oh
	case eh != "":
		return o.HostIs([]byte(eh))
	}
	return e.HostIs([]byte(oh))
}

// Ports are the ports of the endpoint's slice (or subset).
func (e *EndpointView) Ports() []Port { return derefPorts(e.meta.ports) }

// AddrCount is the number of distinct endpoint addresses.
func (s *ServiceView) AddrCount() int {
	if s.more != nil && s.more.addrs != nil {
		return len(s.more.addrs)
	}
	return len(s.Endpoints)
}

// Addr returns distinct endpoint address i (0 <= i < AddrCount()), in
// endpoint order.
func (s *ServiceView) Addr(i int) netip.Addr {
	if s.more != nil && s.more.addrs != nil {
		return s.more.addrs[i]
	}
	return s.Endpoints[i].Addr()
}

// NamespaceID names a namespace of a partition. The Builder makes one per
// namespace, and every entry of the address maps that the namespace owns
// points to it.
type NamespaceID struct {
	TP        int
	Tenant    string
	Namespace string
}

// PTR is an owner of an address, a service's cluster IP or an endpoint,
// as Snapshot.PTRs finds it: the snapshot's own views, not copies.
type PTR struct {
	*NamespaceID
	view *ServiceView
	ep   *EndpointView // nil for a cluster IP
}

// Service is the name of the owning service.
func (p *PTR) Service() string { return p.view.Name }

// Host is the endpoint's DNS label; empty for a cluster IP. It allocates
// for a label made from the address (see Endpoint).
func (p *PTR) Host() string {
	if p.ep == nil {
		return ""
	}
	return p.ep.Host()
}

// Endpoint is the owning endpoint; nil for a cluster IP.
func (p *PTR) Endpoint() *EndpointView { return p.ep }

// IsEndpoint reports whether the owner is an endpoint of the service rather
// than one of its cluster IPs.
func (p *PTR) IsEndpoint() bool { return p.ep != nil }

// View is the owning service's view.
func (p *PTR) View() *ServiceView { return p.view }

// revOwner is an owner of an address as the reverse table keeps it: the
// namespace's number in the snapshot's nsIDs, the hash of the service's
// name, and the endpoint's index in the service's view. It holds no
// pointer, so the collector need not scan the table: with three pointers
// an owner, at 1.5M objects its 1.4M owners cost every collection 4.2M
// pointers to follow, and a change's rewritten blocks as many write
// barriers while one ran. Two services of one namespace whose names share
// the 64-bit hash (a chance of n²/2⁶⁵ for n services) would share their
// owners' key, as podID's pods would; PTRs still checks each view's
// address.
type revOwner struct {
	svc uint64 // nameHash of the service's name
	ns  uint32
	ep  int32 // index in the view's Endpoints; -1 for a cluster IP
}

// clusterIP marks a revOwner of a cluster IP.
const clusterIP = -1

// owns reports whether view v, of the service o names, owns address k as o
// says: v's endpoint o.ep has it, or it is one of v's cluster IPs.
func (o revOwner) owns(v *ServiceView, k addrKey) bool {
	if o.ep == clusterIP {
		if v.Type != ClusterIP {
			return false
		}
		for _, a := range v.ClusterIPs() {
			if keyOf(a) == k {
				return true
			}
		}
		return false
	}
	return int(o.ep) < len(v.Endpoints) && v.Endpoints[o.ep].addr == k
}

// Source is what a client address says about the querier: the partition and
// tenant of the pod that has the address.
type Source struct {
	TP     int
	Tenant string
}

// Tenant returns tenant's view in partition tp, or nil.
func (s *Snapshot) Tenant(tp int, tenant []byte) *TenantView {
	return tenantView(s, tp, tenant)
}

// Namespace returns the namespace view, or nil.
func (s *Snapshot) Namespace(tp int, tenant, ns []byte) *NamespaceView {
	return namespace(s, tp, tenant, ns)
}

// tenantView and namespace are Snapshot.Tenant and Snapshot.Namespace for
// names as queries carry them (bytes) and as NamespaceID keeps them
// (strings); string(b) in a map index does not allocate.
func tenantView[T string | []byte](s *Snapshot, tp int, tenant T) *TenantView {
	if tp < 0 || tp >= len(s.TPs) {
		return nil
	}
	return s.TPs[tp].Tenants[string(tenant)]
}

func namespace[T string | []byte](s *Snapshot, tp int, tenant, ns T) *NamespaceView {
	t := tenantView(s, tp, tenant)
	if t == nil {
		return nil
	}
	return t.Namespaces[string(ns)]
}

// Home returns the partition that answers for a regular tenant.
func (s *Snapshot) Home(tenant []byte) (int, bool) {
	tp, ok := s.home[string(tenant)]
	return tp, ok
}

// PTRs appends the owners of address a to dst and returns it. An owner
// is found through the snapshot's names: between the steps of a large
// publish (Builder.storeAddrs) an owner whose view has already changed is
// left out.
func (s *Snapshot) PTRs(a netip.Addr, dst []PTR) []PTR {
	owners := s.rev.get(a)
	if len(owners) == 0 {
		return dst
	}
	k := keyOf(a)
	for _, o := range owners {
		id := s.nsIDs[o.ns]
		n := namespace(s, id.TP, id.Tenant, id.Namespace)
		if n == nil {
			continue
		}
		for _, e := range n.services.withHash(o.svc) {
			if v := e.view; o.owns(v, k) {
				p := PTR{NamespaceID: id, view: v}
				if o.ep != clusterIP {
					p.ep = &v.Endpoints[o.ep]
				}
				dst = append(dst, p)
				break
			}
		}
	}
	return dst
}

// Source returns the partition and tenant of the pod with address a. When
// several pods have it, a pod off the host network wins, then the lowest
// partition; host-network pods alone say nothing (the address is a node's).
func (s *Snapshot) Source(a netip.Addr) (Source, bool) {
	best := -1
	owners := s.src.get(a)
	for j := range owners {
		o := &owners[j]
		if o.notHostNetwork == 0 {
			continue
		}
		if best < 0 || s.nsIDs[o.ns].TP < s.nsIDs[owners[best].ns].TP {
			best = j
		}
	}
	if best < 0 {
		return Source{}, false
	}
	id := s.nsIDs[owners[best].ns]
	return Source{TP: id.TP, Tenant: id.Tenant}, true
}

// HasPod reports whether some pod of namespace ns of tenant in partition tp
// has address a.
func (s *Snapshot) HasPod(a netip.Addr, tp int, tenant, ns []byte) bool {
	for _, o := range s.src.get(a) {
		if id := s.nsIDs[o.ns]; id.TP == tp && id.Tenant == string(tenant) && id.Namespace == string(ns) {
			return true
		}
	}
	return false
}

// Counts returns the number of services and pod addresses in partition tp.
func (s *Snapshot) Counts(tp int) (services, pods int) {
	if tp < 0 || tp >= len(s.TPs) {
		return 0, 0
	}
	for _, t := range s.TPs[tp].Tenants {
		for _, n := range t.Namespaces {
			services += n.services.n
			pods += n.PodAddrs
		}
	}
	return services, pods
}
