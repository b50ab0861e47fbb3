package faketp

import (
	"fmt"
	"strconv"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// GenerateOptions say how many objects Generate makes. Objects are spread
// round-robin over the namespaces gen-0..gen-(Namespaces-1) of Tenant.
type GenerateOptions struct {
	// Tenant owns the objects; system when empty. A tenant that does not
	// exist is created (storageClusterId "0").
	Tenant     string
	Namespaces int
	Pods       int
	// Services select the pods round-robin (pod i is svc-(i%Services)'s);
	// each gets its core/v1 Endpoints.
	Services   int
	ConfigMaps int
	// Nodes is how many node names pods are spread over (spec.nodeName);
	// 10 when zero.
	Nodes int
}

// Scaled returns options for n pods with a tenth as many services (and
// their Endpoints) and configmaps, in one namespace per 100 pods: the shape
// fake-tp --generate n fills a TP with.
func Scaled(n int) GenerateOptions {
	return GenerateOptions{Namespaces: max(1, n/100), Pods: n, Services: n / 10, ConfigMaps: n / 10}
}

// Generate fills the TP with synthetic objects for benchmarks and load
// tests, seeded as Seed does (no admission, status kept): running, Ready
// pods on nodes, services selecting them, and their Endpoints (written by
// the endpoints controller when it runs, else by Generate). Names are
// deterministic, so generating twice replaces rather than adds.
func (tp *TP) Generate(o GenerateOptions) error {
	tenant := o.Tenant
	if tenant == "" {
		tenant = tenancy.SystemTenant
	}
	if err := tenancy.ValidateTenantName(tenant); err != nil {
		return err
	}
	g := &generator{tp: tp, tenant: tenant, nsCount: max(o.Namespaces, 1), nodes: o.Nodes, svcCount: max(o.Services, 1), pods: o.Pods}
	if g.nodes <= 0 {
		g.nodes = 10
	}
	for i := 0; i < g.nsCount && o.Namespaces > 0; i++ {
		if err := g.add(obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": g.ns(i), "tenant": tenant}}); err != nil {
			return err
		}
	}
	for i := 0; i < o.Pods; i++ {
		if err := g.add(g.pod(i)); err != nil {
			return err
		}
	}
	for i := 0; i < o.Services; i++ {
		if err := g.add(g.service(i)); err != nil {
			return err
		}
	}
	for i := 0; i < o.Services && !tp.runs(EndpointsController); i++ {
		if err := g.add(g.endpoints(i)); err != nil {
			return err
		}
	}
	for i := 0; i < o.ConfigMaps; i++ {
		cm := obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": g.meta("cm-"+strconv.Itoa(i), i, nil), "data": obj{"key": "value-" + strconv.Itoa(i)}}
		if err := g.add(cm); err != nil {
			return err
		}
	}
	return g.flush(true)
}

// generator makes one tenant's generated objects and seeds them in batches.
type generator struct {
	tp                       *TP
	tenant                   string
	nsCount, nodes, svcCount int
	pods                     int
	objs                     []obj
}

// generateBatch is how many objects are seeded at once.
const generateBatch = 5000

// add queues o, seeding the queue once it is a batch.
func (g *generator) add(o obj) error {
	g.objs = append(g.objs, o)
	return g.flush(false)
}

// flush seeds the queued objects: a full batch, or whatever is left when
// forced.
func (g *generator) flush(force bool) error {
	if len(g.objs) == 0 || (!force && len(g.objs) < generateBatch) {
		return nil
	}
	err := g.tp.seedObjects(g.objs)
	g.objs = g.objs[:0]
	return err
}

// ns is the namespace of the i-th object of a kind.
func (g *generator) ns(i int) string { return "gen-" + strconv.Itoa(i%g.nsCount) }

func (g *generator) meta(name string, i int, labels obj) obj {
	m := obj{"name": name, "namespace": g.ns(i), "tenant": g.tenant}
	if labels != nil {
		m["labels"] = labels
	}
	return m
}

// pod is pod i: running and ready on a node, selected by service i%svcCount.
func (g *generator) pod(i int) obj {
	return obj{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": g.meta(fmt.Sprintf("pod-%d", i), i, obj{"app": "svc-" + strconv.Itoa(i%g.svcCount)}),
		"spec": obj{
			"nodeName":   "node-" + strconv.Itoa(i%g.nodes),
			"containers": []any{obj{"name": "app", "image": "registry.k8s.io/pause:3.10"}},
		},
		"status": obj{"phase": "Running", "podIP": podIP(i),
			"conditions": []any{obj{"type": "Ready", "status": "True"}, obj{"type": "ContainersReady", "status": "True"}}},
	}
}

// service is service i, selecting its pods.
func (g *generator) service(i int) obj {
	name := "svc-" + strconv.Itoa(i)
	return obj{
		"apiVersion": "v1", "kind": "Service",
		"metadata": g.meta(name, i, nil),
		"spec": obj{
			"selector": obj{"app": name},
			"ports":    []any{obj{"name": "http", "port": int64(80), "protocol": "TCP", "targetPort": int64(8080)}},
		},
	}
}

// endpoints is service i's core/v1 Endpoints, as the endpoints controller
// would write them: pod j is the service's when j%svcCount == i and it is
// in the same namespace.
func (g *generator) endpoints(i int) obj {
	var addrs []any
	for j := i; j < g.pods; j += g.svcCount {
		if j%g.nsCount == i%g.nsCount {
			addrs = append(addrs, obj{"ip": podIP(j), "nodeName": "node-" + strconv.Itoa(j%g.nodes),
				"targetRef": obj{"kind": "Pod", "namespace": g.ns(j), "name": fmt.Sprintf("pod-%d", j), "tenant": g.tenant}})
		}
	}
	ep := obj{"apiVersion": "v1", "kind": "Endpoints", "metadata": g.meta("svc-"+strconv.Itoa(i), i, nil)}
	if addrs != nil {
		ep["subsets"] = []any{obj{"addresses": addrs, "ports": []any{obj{"name": "http", "port": int64(8080), "protocol": "TCP"}}}}
	}
	return ep
}

// podIP is a distinct IP in 10.244.0.0/14 for pod i, skipping the .0
// network address of the first /24.
func podIP(i int) string {
	n := i + 2
	return fmt.Sprintf("10.%d.%d.%d", 244+(n>>16)&3, (n>>8)&255, n&255)
}

// GeneratePlan spreads n pods per TP (the shape of Scaled) over the system
// tenant and regularTenants regular tenants, as a scale-out cluster holds
// them: the system tenant in every TP, regular tenant i (gen-tenant-i)
// only in tps[i % len(tps)]. Each TP's share is split evenly between the
// system tenant and its regular tenants, the remainder to the system
// tenant. The plan is keyed by TP name.
func GeneratePlan(tps []string, n, regularTenants int) map[string][]GenerateOptions {
	homes := make(map[string][]string, len(tps))
	for i := 0; i < regularTenants && len(tps) > 0; i++ {
		tp := tps[i%len(tps)]
		homes[tp] = append(homes[tp], fmt.Sprintf("gen-tenant-%d", i))
	}
	plan := make(map[string][]GenerateOptions, len(tps))
	for _, tp := range tps {
		share := n / (1 + len(homes[tp]))
		sys := Scaled(n - share*len(homes[tp]))
		plan[tp] = append(plan[tp], sys)
		for _, tenant := range homes[tp] {
			o := Scaled(share)
			o.Tenant = tenant
			plan[tp] = append(plan[tp], o)
		}
	}
	return plan
}
