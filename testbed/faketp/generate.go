package faketp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
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
// pods on nodes, services selecting them, and their Endpoints (as the
// endpoints controller writes them when it runs, else as a client would).
// Names are deterministic, so generating twice replaces rather than adds.
//
// Namespaces (and the tenant) go through Seed's path, controllers
// included. The other objects are written from templates (template.go):
// each is what Seed would store, and the Endpoints what the endpoints
// controller would write, without the controllers' rounds over every
// object.
func (tp *TP) Generate(o GenerateOptions) error {
	tenant := o.Tenant
	if tenant == "" {
		tenant = tenancy.SystemTenant
	}
	if err := tenancy.ValidateTenantName(tenant); err != nil {
		return err
	}
	if tp.st() == nil {
		return fmt.Errorf("faketp %s: not started", tp.name)
	}
	g := &generator{tp: tp, tenant: tenant, nsCount: max(o.Namespaces, 1), nodes: o.Nodes, svcCount: max(o.Services, 1), pods: o.Pods,
		labels: labelSets{}, marks: chooseMarks(tenant)}
	if g.nodes <= 0 {
		g.nodes = 10
	}
	var nss []obj
	for i := 0; i < g.nsCount && (o.Namespaces > 0 || o.Pods+o.Services+o.ConfigMaps > 0); i++ {
		if o.Namespaces > 0 || i == 0 {
			nss = append(nss, obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": g.ns(i), "tenant": tenant}})
		}
	}
	if len(nss) > 0 {
		if err := tp.seedObjects(nss); err != nil {
			return err
		}
	}
	g.podUIDs, g.podRVs, g.svcCreated = make([]string, o.Pods), make([]uint64, o.Pods), make([]string, o.Services)
	steps := []struct {
		n    int
		kind string
		add  func(*template, int) error
	}{
		{o.Pods, "Pod", g.addPod},
		{o.Services, "Service", g.addService},
		{o.ConfigMaps, "ConfigMap", g.addConfigMap},
	}
	for _, st := range steps {
		if st.n == 0 {
			continue
		}
		tpl, err := g.template(st.kind)
		if err != nil {
			return fmt.Errorf("faketp %s: generating: %w", tp.name, err)
		}
		for i := 0; i < st.n; i++ {
			if err := st.add(tpl, i); err != nil {
				return err
			}
		}
		if err := g.flush(); err != nil {
			return err
		}
		if st.kind != "Service" {
			continue
		}
		for i := 0; i < o.Services; i++ {
			if err := g.addEndpoints(i); err != nil {
				return err
			}
		}
		if err := g.flush(); err != nil {
			return err
		}
	}
	return nil
}

// generator makes one tenant's generated objects and loads them in
// batches.
type generator struct {
	tp                       *TP
	tenant                   string
	nsCount, nodes, svcCount int
	pods                     int
	labels                   labelSets
	marks                    marks // of its templates
	nsNames                  []string
	// podUIDs and podRVs are the generated pods' (the Endpoints' targetRefs).
	podUIDs []string
	podRVs  []uint64
	// svcCreated are the services' creation times (the Endpoints' trigger).
	svcCreated []string
	puts       []store.Put
	// pending are the template objects of puts, encoded (encodeNext) in
	// their order; encoded counts those done.
	pending []pendingObject
	encoded int
	encode  store.Encode
	arena   arena
	strs    stringArena // names and fields
	// epTpl and addrTpl make the controller's Endpoints; addrs is their
	// buffer of addresses.
	epTpl, addrTpl *template
	addrs          []slotValues
	keys           []store.Key // of puts, for the controllers
	// created is the creation time of objects generated in its second.
	created    string
	createdSec int64
}

// generateBatch is how many objects are loaded at once.
const generateBatch = 5000

// put queues an object made from tpl with values v, loading the queue once
// it is a batch; pod, unless -1, is the generated pod whose version the
// Endpoints will need.
func (g *generator) put(tpl *template, k store.Key, v slotValues, pod int) error {
	v.uid = string(uuid.NewUUID())
	v.hashKey = hashKey(v.uid).String()
	if v.created == "" {
		v.created = g.now()
	}
	if pod >= 0 {
		g.podUIDs[pod] = v.uid
	}
	meta := store.Meta{Labels: g.labels.get(tpl, &v), Fields: store.Fields(tpl.marks.fillString(string(tpl.fields), &v, &g.strs))}
	if g.encode == nil {
		g.encode = g.encodeNext // one func value for every put
	}
	g.pending = append(g.pending, pendingObject{tpl: tpl, v: v, pod: pod})
	g.puts = append(g.puts, store.Put{Key: k, Meta: meta, Encode: g.encode})
	g.keys = append(g.keys, k)
	if len(g.puts) < generateBatch {
		return nil
	}
	return g.flush()
}

// pendingObject is a queued object made from a template.
type pendingObject struct {
	tpl *template
	v   slotValues
	pod int
}

// encodeNext is the store.Put.Encode of the queued template objects: Load
// calls the puts' Encode once each, in order, so call n is pending[n].
func (g *generator) encodeNext(rv uint64) ([]byte, error) {
	p := &g.pending[g.encoded]
	g.encoded++
	p.v.rv = strconv.FormatUint(rv, 10)
	if p.pod >= 0 {
		g.podRVs[p.pod] = rv
	}
	return p.tpl.fill(g.arena.alloc(p.tpl.len(&p.v)), &p.v), nil
}

// now is the creation timestamp of an object made now, as prepareCreate
// writes it.
func (g *generator) now() string {
	t := time.Now().UTC()
	if t.Unix() != g.createdSec || g.created == "" {
		g.created, g.createdSec = t.Format(time.RFC3339), t.Unix()
	}
	return g.created
}

// flush loads the queued objects. With EndpointSlices the controllers run
// for them (the slices are mirrored from the Endpoints); otherwise there
// is nothing for them to do: Generate writes the Endpoints they would.
func (g *generator) flush() error {
	if len(g.puts) == 0 {
		return nil
	}
	st := g.tp.st()
	err := st.Load(g.puts)
	keys := g.keys
	g.puts, g.keys, g.pending, g.encoded = g.puts[:0], nil, g.pending[:0], 0
	if err != nil {
		return err
	}
	if g.tp.opts.EndpointSlices {
		g.tp.changed(keys...)
	}
	return nil
}

// target is where objects of kind are generated.
func (g *generator) target(kind string) target {
	r := lookupKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	return target{kind: targetCollection, gv: r.gvr.GroupVersion(), res: r, tenant: g.tenant}
}

// template is the template of generated objects of kind.
func (g *generator) template(kind string) (*template, error) {
	m := g.marks.marker
	var o obj
	switch kind {
	case "Pod":
		o = g.podObject(m(slotName), m(slotNamespace), m(slotApp), m(slotNode), m(slotPodIP))
	case "Service":
		o = g.serviceObject(m(slotName), m(slotNamespace), m(slotApp))
		// The address is allocated per service: a marker stands for it.
		child(o, "spec")["clusterIP"] = m(slotClusterIP)
	case "ConfigMap":
		o = g.configMapObject(m(slotName), m(slotNamespace), m(slotValue))
	}
	return g.tp.makeTemplate(g.target(kind), o, writeOptions{seed: true, trusted: true}, g.marks, nil)
}

// endpointsTemplates are the templates of Endpoints as the endpoints
// controller writes them for a generated service: the object, whose
// addresses are one raw slot, and an address.
func (g *generator) endpointsTemplates() (ep, addr *template, err error) {
	m := g.marks.marker
	a := obj{"ip": m(slotPodIP), "nodeName": m(slotNode), "targetRef": obj{
		"kind": "Pod", "namespace": m(slotNamespace), "name": m(slotPodName), "uid": m(slotPodUID),
		"resourceVersion": m(slotPodRV), "tenant": g.tenant,
	}}
	o := g.controllerEndpoints(m(slotName), []obj{a}, m(slotTrigger))
	ab, err := json.Marshal(a)
	if err != nil {
		return nil, nil, err
	}
	if addr, err = newTemplate(ab, store.Meta{}, g.marks); err != nil {
		return nil, nil, err
	}
	ep, err = g.tp.makeTemplate(g.target("Endpoints"), o, writeOptions{user: controllerUser, controller: true, trusted: true}, g.marks, func(b []byte) ([]byte, error) {
		if bytes.Count(b, ab) != 1 {
			return nil, fmt.Errorf("the address is not once in the Endpoints %s", b)
		}
		return bytes.Replace(b, ab, []byte(`"`+m(slotList)+`"`), 1), nil
	})
	return ep, addr, err
}

// controllerEndpoints is what the endpoints controller (syncEndpoints)
// makes of a generated service with its ready pods' addresses.
func (g *generator) controllerEndpoints(name string, addrs []obj, trigger string) obj {
	var b subsetBuilder
	port := obj{"name": "http", "port": json.Number("8080"), "protocol": "TCP"}
	for _, a := range addrs {
		b.add(a, port, true)
	}
	ep := obj{"apiVersion": "v1", "kind": "Endpoints", "metadata": obj{"name": name}}
	if subsets := b.subsets(); len(subsets) > 0 {
		ep["subsets"] = subsets
	}
	setTriggerTime(ensureChild(ep, "metadata"), trigger)
	return ep
}

func (g *generator) addPod(tpl *template, i int) error {
	v := slotValues{name: g.strs.concat("pod-", i), namespace: g.ns(i), app: "svc-" + strconv.Itoa(i%g.svcCount),
		node: g.node(i), podIP: podIP(i)}
	return g.put(tpl, store.Key{Resource: "pods", Tenant: g.tenant, Namespace: v.namespace, Name: v.name}, v, i)
}

func (g *generator) addService(tpl *template, i int) error {
	v := slotValues{name: g.strs.concat("svc-", i), namespace: g.ns(i)}
	v.app = v.name
	spec := obj{}
	if err := g.tp.clusterIPOnCreate(spec, false); err != nil {
		return err
	}
	v.clusterIP = str(spec, "clusterIP")
	v.created = g.now()
	g.svcCreated[i] = v.created // the trigger time of its Endpoints
	return g.put(tpl, store.Key{Resource: "services", Tenant: g.tenant, Namespace: v.namespace, Name: v.name}, v, -1)
}

func (g *generator) addConfigMap(tpl *template, i int) error {
	v := slotValues{name: g.strs.concat("cm-", i), namespace: g.ns(i), value: "value-" + strconv.Itoa(i)}
	return g.put(tpl, store.Key{Resource: "configmaps", Tenant: g.tenant, Namespace: v.namespace, Name: v.name}, v, -1)
}

// addEndpoints queues service i's Endpoints: as the endpoints controller
// writes them when it runs (syncEndpoints: its pods' addresses, sorted by
// address and name, with their uids and versions, and the service's
// creation as the trigger time), else as a client would (the pods'
// addresses in order, names only).
func (g *generator) addEndpoints(i int) error {
	t := g.target("Endpoints")
	name := g.strs.concat("svc-", i)
	t.namespace = g.ns(i)
	pods := g.podsOf(i)
	if g.tp.runs(EndpointsController) && len(pods) > 0 {
		if g.epTpl == nil {
			var err error
			if g.epTpl, g.addrTpl, err = g.endpointsTemplates(); err != nil {
				return fmt.Errorf("faketp %s: generating: %w", g.tp.name, err)
			}
		}
		// subsetBuilder's order: by address, then pod name.
		addrs := g.addrs[:0]
		n := len(pods) - 1 // commas
		for _, j := range pods {
			a := slotValues{podIP: podIP(j), node: g.node(j), podName: "pod-" + strconv.Itoa(j), namespace: t.namespace,
				podUID: g.podUIDs[j], podRV: strconv.FormatUint(g.podRVs[j], 10)}
			n += g.addrTpl.len(&a)
			addrs = append(addrs, a)
		}
		slices.SortFunc(addrs, func(a, b slotValues) int {
			return cmp.Or(strings.Compare(a.podIP, b.podIP), strings.Compare(a.podName, b.podName))
		})
		list := make([]byte, 0, n)
		for n := range addrs {
			if n > 0 {
				list = append(list, ',')
			}
			list = g.addrTpl.fill(list, &addrs[n])
		}
		g.addrs = addrs
		v := slotValues{name: name, namespace: t.namespace, list: string(list), trigger: g.svcCreated[i]}
		return g.put(g.epTpl, t.key(name), v, -1)
	}
	var ep obj
	wo := writeOptions{seed: true, trusted: true}
	if g.tp.runs(EndpointsController) {
		ep = g.controllerEndpoints(name, nil, g.svcCreated[i])
		wo = writeOptions{user: controllerUser, controller: true, trusted: true}
	} else {
		ep = g.endpoints(i)
	}
	k, _, err := g.tp.prepareCreate(t, ep, wo)
	if err != nil {
		return fmt.Errorf("faketp %s: endpoints %s: %w", g.tp.name, name, err)
	}
	g.puts = append(g.puts, store.Put{Key: k, Meta: t.res.index(ep), Encode: encoder(ep)})
	g.keys = append(g.keys, k)
	if len(g.puts) < generateBatch {
		return nil
	}
	return g.flush()
}

// node is the node of pod j.
func (g *generator) node(j int) string { return "node-" + strconv.Itoa(j%g.nodes) }

// podsOf are the pods service i selects: pod j is its when j%svcCount == i
// and it is in the same namespace.
func (g *generator) podsOf(i int) []int {
	var out []int
	for j := i; j < g.pods; j += g.svcCount {
		if j%g.nsCount == i%g.nsCount {
			out = append(out, j)
		}
	}
	return out
}

// ns is the namespace of the i-th object of a kind; one string per
// namespace, shared by the keys of its objects.
func (g *generator) ns(i int) string {
	if g.nsNames == nil {
		g.nsNames = make([]string, g.nsCount)
	}
	n := &g.nsNames[i%g.nsCount]
	if *n == "" {
		*n = "gen-" + strconv.Itoa(i%g.nsCount)
	}
	return *n
}

func (g *generator) meta(name, ns string, labels obj) obj {
	m := obj{"name": name, "namespace": ns, "tenant": g.tenant}
	if labels != nil {
		m["labels"] = labels
	}
	return m
}

// podObject is a pod running and ready on a node, selected by the service
// whose selector is app.
func (g *generator) podObject(name, ns, app, node, ip string) obj {
	return obj{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": g.meta(name, ns, obj{"app": app}),
		"spec": obj{
			"nodeName":   node,
			"containers": []any{obj{"name": "app", "image": "registry.k8s.io/pause:3.10"}},
		},
		"status": obj{"phase": "Running", "podIP": ip,
			"conditions": []any{obj{"type": "Ready", "status": "True"}, obj{"type": "ContainersReady", "status": "True"}}},
	}
}

// serviceObject is a service selecting the pods of app.
func (g *generator) serviceObject(name, ns, app string) obj {
	return obj{
		"apiVersion": "v1", "kind": "Service",
		"metadata": g.meta(name, ns, nil),
		"spec": obj{
			"selector": obj{"app": app},
			"ports":    []any{obj{"name": "http", "port": int64(80), "protocol": "TCP", "targetPort": int64(8080)}},
		},
	}
}

func (g *generator) configMapObject(name, ns, value string) obj {
	return obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": g.meta(name, ns, nil), "data": obj{"key": value}}
}

// endpoints is service i's core/v1 Endpoints as a client writes them when
// no endpoints controller runs: its pods' addresses, names only.
func (g *generator) endpoints(i int) obj {
	var addrs []any
	for _, j := range g.podsOf(i) {
		addrs = append(addrs, obj{"ip": podIP(j), "nodeName": "node-" + strconv.Itoa(j%g.nodes),
			"targetRef": obj{"kind": "Pod", "namespace": g.ns(j), "name": fmt.Sprintf("pod-%d", j), "tenant": g.tenant}})
	}
	ep := obj{"apiVersion": "v1", "kind": "Endpoints", "metadata": g.meta("svc-"+strconv.Itoa(i), g.ns(i), nil)}
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
