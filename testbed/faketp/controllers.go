package faketp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// Controllers, as Arktos's kube-controller-manager runs them (recorded in
// responses-with-kcm). They react synchronously: after every write through
// the API, Seed and Generate, and after their own writes, before the
// request that caused them is answered, so tests need no sleeps. Each of
// their writes is a store write of its own, with its own resourceVersion.
const (
	// TenantController keeps the Tenant object "system", and gives every
	// new tenant the namespaces default, kube-system and kube-public.
	TenantController = "tenant"
	// EndpointsController keeps the core/v1 Endpoints of every service with
	// a selector in step with its pods.
	EndpointsController = "endpoints"
)

// DefaultControllers run when Options.Controllers is nil.
func DefaultControllers() []string { return []string{TenantController, EndpointsController} }

func checkControllers(names []string) error {
	for _, n := range names {
		if n != TenantController && n != EndpointsController {
			return fmt.Errorf("faketp: unknown controller %q (known: %s, %s)", n, TenantController, EndpointsController)
		}
	}
	return nil
}

// controllerUser is who the controllers write as.
var controllerUser = &admission.User{Name: "system:kube-controller-manager", Groups: []string{"system:authenticated"},
	Extra: map[string][]string{admission.UserTenantExtraKey: {tenancy.SystemTenant}}}

// runs says whether controller c runs on the TP.
func (tp *TP) runs(c string) bool { return slices.Contains(tp.controllers, c) }

// changed runs the controllers for objects that were written (created,
// updated or deleted), then for what the controllers write, until nothing
// more changes. It reads the store as it is now, so it does not matter
// what the change was. Controllers run one at a time per TP.
func (tp *TP) changed(keys ...store.Key) {
	if len(tp.controllers) == 0 && !tp.opts.EndpointSlices {
		return
	}
	tp.ctrlMu.Lock()
	defer tp.ctrlMu.Unlock()
	for len(keys) > 0 {
		// One round: what the keys call for, each service once.
		services := map[store.Key]store.Key{}      // service -> the key that triggered it
		podNamespaces := map[store.Key]store.Key{} // namespace -> a pod that changed in it
		var next []store.Key
		for _, k := range keys {
			switch k.Resource {
			case "tenants":
				if tp.runs(TenantController) {
					next = append(next, tp.syncTenant(k.Name)...)
				}
			case "pods":
				if tp.runs(EndpointsController) {
					podNamespaces[store.Key{Tenant: k.Tenant, Name: k.Namespace}] = k
				}
			case "services":
				if tp.runs(EndpointsController) {
					services[k] = k
				}
			case "endpoints":
				if tp.runs(EndpointsController) {
					// A deleted or changed Endpoints of a selector service
					// is put back, as the controller does on deletion.
					services[store.Key{Resource: "services", Tenant: k.Tenant, Namespace: k.Namespace, Name: k.Name}] = k
				}
				if tp.opts.EndpointSlices {
					next = append(next, tp.mirrorSlices(k)...)
				}
			case "discovery.k8s.io/endpointslices":
				if tp.opts.EndpointSlices {
					next = append(next, tp.mirrorSlices(k)...)
				}
			}
		}
		for ns, pod := range podNamespaces {
			for _, svc := range tp.selectorServices(ns.Tenant, ns.Name) {
				services[svc] = pod
			}
		}
		for _, svc := range slices.SortedFunc(maps.Keys(services), compareKeys) {
			next = append(next, tp.syncEndpoints(svc, services[svc])...)
		}
		keys = next
	}
}

func compareKeys(a, b store.Key) int {
	return strings.Compare(a.Tenant+"/"+a.Namespace+"/"+a.Name, b.Tenant+"/"+b.Namespace+"/"+b.Name)
}

// controllerCreate creates o, an object of res; it reports the key it
// wrote, or nil when the write failed (logged, unless the object exists or
// its namespace went: a controller retries on the next change, as a real
// one would on its next sync).
func (tp *TP) controllerCreate(res *resource, tenant, namespace string, o obj) []store.Key {
	t := target{kind: targetCollection, gv: res.gvr.GroupVersion(), group: res.gvr.Group, res: res, tenant: tenant, namespace: namespace}
	created, err := tp.create(context.Background(), t, o, writeOptions{user: controllerUser, controller: true})
	if err != nil {
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) {
			tp.logControllerError(err, res, str(o, "metadata", "name"))
		}
		return nil
	}
	return []store.Key{created.Key}
}

func (tp *TP) logControllerError(err error, res *resource, name string) {
	klog.ErrorS(err, "Controller write failed", "tp", tp.name, "resource", res.gvr.Resource, "name", name)
}

// syncTenant: the tenant controller. The system tenant gets its Tenant
// object; every tenant that exists gets the namespaces default,
// kube-system and kube-public (responses-with-kcm, samples 11, 24, 27).
func (tp *TP) syncTenant(name string) []store.Key {
	var wrote []store.Key
	if _, ok := tp.st().Get(store.Key{Resource: "tenants", Name: name}); !ok {
		if !tenancy.IsSystem(name) {
			return nil
		}
		wrote = append(wrote, tp.controllerCreate(lookupStoreName("tenants"), "", "",
			obj{"apiVersion": "v1", "kind": "Tenant", "metadata": obj{"name": name}, "spec": obj{"storageClusterId": "0"}})...)
	}
	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		if _, ok := tp.st().Get(store.Key{Resource: "namespaces", Tenant: name, Name: ns}); !ok {
			wrote = append(wrote, tp.controllerCreate(lookupStoreName("namespaces"), name, "",
				obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": ns}})...)
		}
	}
	return wrote
}

// selectorServices are the services of a namespace that have a selector.
func (tp *TP) selectorServices(tenant, namespace string) []store.Key {
	objs, _, _ := tp.st().List("services", store.ListOptions{Tenant: tenant, Namespace: namespace})
	var out []store.Key
	for _, o := range objs {
		svc, err := decodeObject(o.Data)
		if err == nil && len(child(child(svc, "spec"), "selector")) > 0 {
			out = append(out, o.Key)
		}
	}
	return out
}

// errNoSync: the endpoints controller leaves this service alone.
var errNoSync = errors.New("not the endpoints controller's")

// syncEndpoints: the endpoints controller, as kube-controller-manager 1.18
// runs it in Arktos (responses-with-kcm, samples 37, 97). The Endpoints of
// a deleted service are deleted; those of services without a selector and
// of ExternalName services are left to clients. Otherwise the Endpoints
// list the service's pods (same tenant and namespace, labels matching the
// selector) that are on a node, have a pod IP, are not being deleted and
// have not ended: ready pods in addresses, the others in notReadyAddresses
// (or all in addresses with publishNotReadyAddresses). Labels are the
// service's. The Endpoints are written only when subsets or labels change.
func (tp *TP) syncEndpoints(svcKey, trigger store.Key) []store.Key {
	epKey := store.Key{Resource: "endpoints", Tenant: svcKey.Tenant, Namespace: svcKey.Namespace, Name: svcKey.Name}
	epRes := lookupStoreName("endpoints")
	stored, svcExists := tp.st().Get(svcKey)
	current, epExists := tp.st().Get(epKey)
	if !svcExists {
		if !epExists {
			return nil
		}
		t := target{kind: targetObject, gv: epRes.gvr.GroupVersion(), res: epRes, tenant: epKey.Tenant, namespace: epKey.Namespace, name: epKey.Name}
		if _, err := tp.delete(context.Background(), t, epKey, nil, writeOptions{user: controllerUser, controller: true}); err != nil && !apierrors.IsNotFound(err) {
			tp.logControllerError(err, epRes, epKey.Name)
			return nil
		}
		return []store.Key{epKey}
	}
	svc, err := decodeObject(stored.Data)
	if err != nil {
		return nil
	}
	subsets, err := tp.endpointSubsets(svcKey, svc)
	if errors.Is(err, errNoSync) || err != nil {
		return nil
	}
	labels := child(child(svc, "metadata"), "labels")
	var ep obj
	if epExists {
		if ep, err = decodeObject(current.Data); err != nil {
			return nil
		}
		if jsonEqual(ep["subsets"], subsets) && jsonEqual(child(child(ep, "metadata"), "labels"), labels) {
			return nil
		}
	} else {
		ep = obj{"metadata": obj{"name": svcKey.Name}}
	}
	ep["apiVersion"], ep["kind"] = "v1", "Endpoints"
	md := ensureChild(ep, "metadata")
	if len(labels) > 0 {
		md["labels"] = deepCopy(labels)
	} else {
		delete(md, "labels")
	}
	if len(subsets) > 0 {
		ep["subsets"] = subsets
	} else {
		delete(ep, "subsets")
	}
	setTriggerTime(md, tp.triggerTime(svc, trigger))
	if !epExists {
		return tp.controllerCreate(epRes, svcKey.Tenant, svcKey.Namespace, ep)
	}
	t := target{kind: targetObject, gv: epRes.gvr.GroupVersion(), res: epRes, tenant: epKey.Tenant, namespace: epKey.Namespace, name: epKey.Name}
	rv := strconv.FormatUint(current.RV, 10)
	md["resourceVersion"] = rv
	if _, err := tp.update(context.Background(), t, func(obj) (obj, bool, error) { return ep, true, nil }, writeOptions{user: controllerUser, controller: true}); err != nil {
		if !apierrors.IsConflict(err) {
			tp.logControllerError(err, epRes, epKey.Name)
		}
		return nil
	}
	return []store.Key{epKey}
}

// endpointSubsets computes a selector service's subsets from its pods.
func (tp *TP) endpointSubsets(svcKey store.Key, svc obj) ([]any, error) {
	spec := child(svc, "spec")
	selector := child(spec, "selector")
	if len(selector) == 0 || str(spec, "type") == "ExternalName" {
		return nil, errNoSync
	}
	tolerate := str(spec, "publishNotReadyAddresses") == "true" ||
		str(svc, "metadata", "annotations", "service.alpha.kubernetes.io/tolerate-unready-endpoints") == "true"
	pods, _, _ := tp.st().List("pods", store.ListOptions{Tenant: svcKey.Tenant, Namespace: svcKey.Namespace, Match: func(o *store.Object) bool {
		for k, v := range selector {
			if s, _ := v.(string); o.Labels[k] != s {
				return false
			}
		}
		return true
	}})
	var b subsetBuilder
	for _, so := range pods {
		pod, err := decodeObject(so.Data)
		if err != nil {
			continue
		}
		md, pspec, status := child(pod, "metadata"), child(pod, "spec"), child(pod, "status")
		phase := str(status, "phase")
		if str(pspec, "nodeName") == "" || str(status, "podIP") == "" || phase == "Succeeded" || phase == "Failed" ||
			(str(md, "deletionTimestamp") != "" && !tolerate) {
			continue
		}
		addr := obj{"ip": str(status, "podIP"), "nodeName": str(pspec, "nodeName"), "targetRef": obj{
			"kind": "Pod", "namespace": so.Namespace, "name": so.Name, "uid": str(md, "uid"),
			"resourceVersion": strconv.FormatUint(so.RV, 10), "tenant": so.Tenant,
		}}
		if h := str(pspec, "hostname"); h != "" && str(pspec, "subdomain") == svcKey.Name {
			addr["hostname"] = h
		}
		ready := tolerate || podReady(status)
		ports := list(spec, "ports")
		if len(ports) == 0 {
			if str(spec, "clusterIP") == "None" {
				b.add(addr, nil, ready)
			}
			continue
		}
		for _, p := range ports {
			sp, _ := p.(map[string]any)
			num, ok := resolveTargetPort(sp, pspec)
			if !ok {
				continue
			}
			port := obj{"port": json.Number(strconv.Itoa(num)), "protocol": str(sp, "protocol")}
			if n := str(sp, "name"); n != "" {
				port["name"] = n
			}
			b.add(addr, port, ready)
		}
	}
	return b.subsets(), nil
}

// podReady: the pod's Ready condition is True.
func podReady(status obj) bool {
	for _, c := range list(status, "conditions") {
		if m, ok := c.(map[string]any); ok && str(m, "type") == "Ready" {
			return str(m, "status") == "True"
		}
	}
	return false
}

// resolveTargetPort is podutil.FindPort: a number as it is, a name through
// the pod's container ports (with the service port's protocol).
func resolveTargetPort(svcPort, podSpec obj) (int, bool) {
	tp := svcPort["targetPort"]
	if tp == nil {
		tp = svcPort["port"]
	}
	switch v := tp.(type) {
	case json.Number:
		n, err := strconv.Atoi(v.String())
		return n, err == nil && n > 0
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return n, n > 0
		}
		proto := str(svcPort, "protocol")
		for _, c := range list(podSpec, "containers") {
			cm, _ := c.(map[string]any)
			for _, p := range list(cm, "ports") {
				pm, _ := p.(map[string]any)
				if str(pm, "name") == v && (str(pm, "protocol") == proto || str(pm, "protocol") == "" && proto == "TCP") {
					n, err := strconv.Atoi(str(pm, "containerPort"))
					return n, err == nil
				}
			}
		}
	}
	return 0, false
}

// triggerTime is endpoints.kubernetes.io/last-change-trigger-time: the
// service's creation for a change of the service, the Ready transition of
// the pod that changed, or none (the annotation goes), as kube's trigger
// time tracker gives (samples 37 and 97 with kcm).
func (tp *TP) triggerTime(svc obj, trigger store.Key) string {
	if trigger.Resource != "pods" {
		return str(svc, "metadata", "creationTimestamp")
	}
	so, ok := tp.st().Get(trigger)
	if !ok {
		return ""
	}
	pod, err := decodeObject(so.Data)
	if err != nil {
		return ""
	}
	for _, c := range list(pod, "status", "conditions") {
		if m, ok := c.(map[string]any); ok && str(m, "type") == "Ready" {
			return str(m, "lastTransitionTime")
		}
	}
	return ""
}

const triggerTimeAnnotation = "endpoints.kubernetes.io/last-change-trigger-time"

func setTriggerTime(md obj, ts string) {
	ann := child(md, "annotations")
	if ts == "" {
		if ann != nil {
			delete(ann, triggerTimeAnnotation)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
		return
	}
	ensureChild(md, "annotations")[triggerTimeAnnotation] = ts
}

// subsetBuilder groups endpoint addresses by the ports they serve, as
// kube's RepackSubsets does, in a deterministic order.
type subsetBuilder struct {
	addrs map[string]obj
	ready map[string]bool
	ports map[string]map[string]obj
}

func (b *subsetBuilder) add(addr, port obj, ready bool) {
	k := str(addr, "ip") + "/" + str(addr, "targetRef", "name")
	if b.addrs == nil {
		b.addrs, b.ready, b.ports = map[string]obj{}, map[string]bool{}, map[string]map[string]obj{}
	}
	if _, ok := b.addrs[k]; !ok {
		b.addrs[k], b.ports[k] = addr, map[string]obj{}
	}
	b.ready[k] = ready
	if port != nil {
		b.ports[k][str(port, "name")+"/"+str(port, "port")+"/"+str(port, "protocol")] = port
	}
}

func (b *subsetBuilder) subsets() []any {
	type group struct{ ports, ready, notReady []any }
	groups := map[string]*group{}
	for _, k := range slices.Sorted(maps.Keys(b.addrs)) {
		pks := slices.Sorted(maps.Keys(b.ports[k]))
		gk := strings.Join(pks, ",")
		g := groups[gk]
		if g == nil {
			g = &group{}
			for _, pk := range pks {
				g.ports = append(g.ports, b.ports[k][pk])
			}
			groups[gk] = g
		}
		if b.ready[k] {
			g.ready = append(g.ready, b.addrs[k])
		} else {
			g.notReady = append(g.notReady, b.addrs[k])
		}
	}
	var out []any
	for _, gk := range slices.Sorted(maps.Keys(groups)) {
		g, s := groups[gk], obj{}
		if g.ready != nil {
			s["addresses"] = g.ready
		}
		if g.notReady != nil {
			s["notReadyAddresses"] = g.notReady
		}
		if g.ports != nil {
			s["ports"] = g.ports
		}
		out = append(out, s)
	}
	return out
}

// jsonEqual compares two JSON values by their encoding.
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
