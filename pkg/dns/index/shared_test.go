package index

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// sharedOp is one change a step of TestSharedMark makes before it
// publishes.
type sharedOp func(b *Builder)

func addSystem(tp int, ns, name string) sharedOp {
	return func(b *Builder) {
		b.SetService(tp, svc("", ns, name, fmt.Sprintf("10.%d.0.%d", tp, len(name))))
	}
}

func delSystem(tp int, ns, name string) sharedOp {
	return func(b *Builder) { b.DeleteService(tp, "", ns, name) }
}

func addTenant(tp int, tenant, ns, name string) sharedOp {
	return func(b *Builder) {
		b.SetService(tp, svc(tenant, ns, name, fmt.Sprintf("10.%d.%d.%d", tp, len(tenant), len(name))))
	}
}

// endpoints gives headless service ns/name of tp one endpoint at ip.
func endpoints(tp int, ns, name, ip string) sharedOp {
	return func(b *Builder) {
		b.SetService(tp, &Service{Namespace: ns, Name: name, Type: Headless, Ports: []Port{{Port: NoPort}}})
		b.SetEndpointSlice(tp, &EndpointSlice{Namespace: ns, Name: name, Service: name, Ports: []Port{{Port: NoPort}},
			Endpoints: []Endpoint{{Addrs: []netip.Addr{a(ip)}}}})
	}
}

// tpGone relists every kind of partition tp and finds nothing: all its
// records go, as when the TP is emptied.
func tpGone(tp int) sharedOp {
	return func(b *Builder) {
		for _, k := range []Kind{Services, EndpointSlices, Pods, Namespaces} {
			relist(b, tp, k, func() {})
		}
	}
}

// sharedStep is one publish: ops, then the views that must be marked
// shared ("tp/tenant/ns/name"); every other view must not be.
type sharedStep struct {
	ops    []sharedOp
	shared []string
}

// TestSharedMark: ServiceView.Shared says whether another partition holds
// the same system-tenant name, as a look in every other partition would,
// after each publish: a name added to or removed from a second partition
// flips the mark of the others, a partition emptied drops its share, and
// an old snapshot's views keep their marks.
func TestSharedMark(t *testing.T) {
	tests := []struct {
		name  string
		steps []sharedStep
	}{
		{"one partition", []sharedStep{
			{ops: []sharedOp{addSystem(0, "kube-system", "kube-dns")}},
		}},
		{"two partitions in one publish", []sharedStep{
			{ops: []sharedOp{addSystem(0, "kube-system", "kube-dns"), addSystem(1, "kube-system", "kube-dns")},
				shared: []string{"0/system/kube-system/kube-dns", "1/system/kube-system/kube-dns"}},
		}},
		{"three partitions, then removed one by one", []sharedStep{
			{ops: []sharedOp{addSystem(0, "kube-system", "kube-dns"), addSystem(1, "kube-system", "kube-dns"), addSystem(2, "kube-system", "kube-dns")},
				shared: []string{"0/system/kube-system/kube-dns", "1/system/kube-system/kube-dns", "2/system/kube-system/kube-dns"}},
			{ops: []sharedOp{delSystem(2, "kube-system", "kube-dns")},
				shared: []string{"0/system/kube-system/kube-dns", "1/system/kube-system/kube-dns"}},
			{ops: []sharedOp{delSystem(1, "kube-system", "kube-dns")}},
			{ops: []sharedOp{delSystem(0, "kube-system", "kube-dns")}},
		}},
		{"added to a second partition later", []sharedStep{
			{ops: []sharedOp{addSystem(0, "kube-system", "kube-dns"), addSystem(0, "kube-system", "metrics")}},
			{ops: []sharedOp{addSystem(1, "kube-system", "kube-dns")},
				shared: []string{"0/system/kube-system/kube-dns", "1/system/kube-system/kube-dns"}},
			{ops: []sharedOp{addSystem(2, "kube-system", "metrics")},
				shared: []string{"0/system/kube-system/kube-dns", "1/system/kube-system/kube-dns", "0/system/kube-system/metrics", "2/system/kube-system/metrics"}},
		}},
		{"removed from the second partition", []sharedStep{
			{ops: []sharedOp{addSystem(0, "default", "kubernetes"), addSystem(1, "default", "kubernetes")},
				shared: []string{"0/system/default/kubernetes", "1/system/default/kubernetes"}},
			{ops: []sharedOp{delSystem(0, "default", "kubernetes")}},
			{ops: []sharedOp{addSystem(0, "default", "kubernetes")},
				shared: []string{"0/system/default/kubernetes", "1/system/default/kubernetes"}},
		}},
		{"removed and added in one publish", []sharedStep{
			{ops: []sharedOp{addSystem(0, "default", "kubernetes"), addSystem(1, "default", "kubernetes")},
				shared: []string{"0/system/default/kubernetes", "1/system/default/kubernetes"}},
			{ops: []sharedOp{delSystem(1, "default", "kubernetes"), addSystem(2, "default", "kubernetes")},
				shared: []string{"0/system/default/kubernetes", "2/system/default/kubernetes"}},
		}},
		{"a partition going away", []sharedStep{
			{ops: []sharedOp{
				addSystem(0, "kube-system", "kube-dns"), addSystem(1, "kube-system", "kube-dns"), addSystem(2, "kube-system", "kube-dns"),
				addSystem(0, "default", "kubernetes"), addSystem(1, "default", "kubernetes"),
			}, shared: []string{
				"0/system/kube-system/kube-dns", "1/system/kube-system/kube-dns", "2/system/kube-system/kube-dns",
				"0/system/default/kubernetes", "1/system/default/kubernetes",
			}},
			{ops: []sharedOp{tpGone(1)},
				shared: []string{"0/system/kube-system/kube-dns", "2/system/kube-system/kube-dns"}},
			{ops: []sharedOp{tpGone(2)}},
			{ops: []sharedOp{addSystem(1, "kube-system", "kube-dns")},
				shared: []string{"0/system/kube-system/kube-dns", "1/system/kube-system/kube-dns"}},
		}},
		{"same name in another namespace", []sharedStep{
			{ops: []sharedOp{addSystem(0, "kube-system", "api"), addSystem(1, "default", "api")}},
		}},
		{"regular tenants are never marked", []sharedStep{
			{ops: []sharedOp{addTenant(0, "acme", "web", "api"), addTenant(1, "acme", "web", "api"), addTenant(1, "other", "web", "api")}},
			{ops: []sharedOp{addSystem(1, "web", "api")}},
		}},
		{"an endpoint change keeps the mark", []sharedStep{
			{ops: []sharedOp{endpoints(0, "kube-system", "dns", "10.9.0.1"), endpoints(1, "kube-system", "dns", "10.9.1.1")},
				shared: []string{"0/system/kube-system/dns", "1/system/kube-system/dns"}},
			{ops: []sharedOp{endpoints(0, "kube-system", "dns", "10.9.0.2")},
				shared: []string{"0/system/kube-system/dns", "1/system/kube-system/dns"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(Options{Partitions: []string{"tp1", "tp2", "tp3"}})
			for i, st := range tc.steps {
				before := b.Current()
				marks := sharedMarks(before)
				for _, op := range st.ops {
					op(b)
				}
				b.Publish()
				s := b.Current()
				got := sharedMarks(s)
				var shared []string
				for k, m := range got {
					if m {
						shared = append(shared, k)
					}
				}
				slices.Sort(shared)
				want := slices.Sorted(slices.Values(st.shared))
				if !slices.Equal(shared, want) {
					t.Errorf("step %d: shared %q, want %q", i, shared, want)
				}
				for k, m := range got {
					if ref := heldElsewhere(s, k); m != ref {
						t.Errorf("step %d: %s marked %v, other partitions say %v", i, k, m, ref)
					}
				}
				if again := sharedMarks(before); !maps.Equal(again, marks) {
					t.Errorf("step %d: the previous snapshot's marks changed: %v, were %v", i, again, marks)
				}
				for k := range got {
					// A view copied to flip its mark still owns its address.
					if v := viewOf(s, k); v.Type == ClusterIP && len(s.PTRs(v.ClusterIPs()[0], nil)) != 1 {
						t.Errorf("step %d: %s: its cluster IP has no PTR", i, k)
					}
				}
			}
		})
	}
}

// sharedMarks maps every view of s, "tp/tenant/ns/name", to its mark.
func sharedMarks(s *Snapshot) map[string]bool {
	m := map[string]bool{}
	for _, tp := range s.TPs {
		for tenant, tv := range tp.Tenants {
			for ns, nv := range tv.Namespaces {
				for sv := range nv.Services() {
					m[fmt.Sprintf("%d/%s/%s/%s", tp.Index, tenant, ns, sv.Name)] = sv.Shared()
				}
			}
		}
	}
	return m
}

// heldElsewhere is the look the mark replaces: whether another partition
// has the system service k names.
func heldElsewhere(s *Snapshot, k string) bool {
	parts := strings.Split(k, "/")
	tp, _ := strconv.Atoi(parts[0])
	tenant, ns, name := parts[1], parts[2], parts[3]
	if tenant != tenancy.SystemTenant {
		return false
	}
	for other := range s.TPs {
		if other == tp {
			continue
		}
		if n := s.Namespace(other, []byte(tenant), []byte(ns)); n.Exists() && n.Service(name) != nil {
			return true
		}
	}
	return false
}

func viewOf(s *Snapshot, k string) *ServiceView {
	parts := strings.Split(k, "/")
	tp, _ := strconv.Atoi(parts[0])
	return s.Namespace(tp, []byte(parts[1]), []byte(parts[2])).Service(parts[3])
}
