package faketp

import (
	"context"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// EndpointSlices, with Options.EndpointSlices only: Arktos has none, but
// clients such as CoreDNS need them. They are mirrored from core/v1
// Endpoints by the server, whoever wrote the Endpoints (the endpoints
// controller or a client), as kube's EndpointSlice mirroring controller
// does:
//   - one slice per subset and address family, named <endpoints>-ipv4 and
//     <endpoints>-ipv6 (<endpoints>-ipv4-<n> for the n-th subset after the
//     first), labelled kubernetes.io/service-name=<endpoints> and
//     endpointslice.kubernetes.io/managed-by=mirrorManager, plus the
//     Endpoints' labels;
//   - addresses become ready, serving endpoints, notReadyAddresses
//     unready ones, with hostname, nodeName and targetRef; the subset's
//     ports become the slice's.
//
// Clients may write slices of their own: the mirror only touches slices
// with its managed-by label, and puts those back when they are changed or
// deleted, as a controller would on its next sync.
const (
	sliceServiceLabel = "kubernetes.io/service-name"
	sliceManagerLabel = "endpointslice.kubernetes.io/managed-by"
	// mirrorManager is the managed-by value of mirrored slices, kube's
	// mirroring controller's.
	mirrorManager = "endpointslicemirroring-controller.k8s.io"
)

// mirrorSlices brings the mirrored slices of the Endpoints named by k (an
// Endpoints or an EndpointSlice key) in step with it, and reports what it
// wrote.
func (tp *TP) mirrorSlices(k store.Key) []store.Key {
	sliceRes := lookupStoreName("discovery.k8s.io/endpointslices")
	name := k.Name
	if k.Resource == sliceRes.storeName() {
		so, ok := tp.st().Get(k)
		if ok {
			if o, err := decodeObject(so.Data); err == nil {
				if str(o, "metadata", "labels", sliceManagerLabel) != mirrorManager {
					return nil // a client's slice
				}
				name = str(o, "metadata", "labels", sliceServiceLabel)
			}
		} else if name = mirroredFrom(name); name == "" {
			return nil
		}
	}
	want := map[string]obj{}
	if eo, ok := tp.st().Get(store.Key{Resource: "endpoints", Tenant: k.Tenant, Namespace: k.Namespace, Name: name}); ok {
		if ep, err := decodeObject(eo.Data); err == nil {
			want = slicesOf(name, ep)
		}
	}
	have, _, _ := tp.st().List(sliceRes.storeName(), store.ListOptions{Tenant: k.Tenant, Namespace: k.Namespace, Match: func(o *store.Object) bool {
		return o.Labels[sliceManagerLabel] == mirrorManager && o.Labels[sliceServiceLabel] == name
	}})
	t := target{gv: sliceRes.gvr.GroupVersion(), group: sliceRes.gvr.Group, res: sliceRes, tenant: k.Tenant, namespace: k.Namespace}
	wo := writeOptions{user: controllerUser, controller: true}
	var wrote []store.Key
	for _, so := range have {
		t.kind, t.name = targetObject, so.Name
		desired, keep := want[so.Name]
		if !keep {
			if _, err := tp.delete(context.Background(), t, so.Key, nil, wo); err == nil {
				wrote = append(wrote, so.Key)
			}
			continue
		}
		delete(want, so.Name)
		cur, err := decodeObject(so.Data)
		if err != nil || sameSlice(cur, desired) {
			continue
		}
		desired = deepCopy(desired)
		child(desired, "metadata")["resourceVersion"] = strconv.FormatUint(so.RV, 10)
		if _, err := tp.update(context.Background(), t, func(obj) (obj, bool, error) { return desired, true, nil }, wo); err != nil {
			if !apierrors.IsConflict(err) {
				tp.logControllerError(err, sliceRes, so.Name)
			}
			continue
		}
		wrote = append(wrote, so.Key)
	}
	for _, n := range slices.Sorted(maps.Keys(want)) {
		wrote = append(wrote, tp.controllerCreate(sliceRes, k.Tenant, k.Namespace, want[n])...)
	}
	return wrote
}

// mirroredName matches the names of mirrored slices.
var mirroredName = regexp.MustCompile(`^(.+)-ipv[46](-[0-9]+)?$`)

// mirroredFrom is the Endpoints a mirrored slice's name comes from, or ""
// (for a slice that is gone, whose labels cannot be read).
func mirroredFrom(slice string) string {
	if m := mirroredName.FindStringSubmatch(slice); m != nil {
		return m[1]
	}
	return ""
}

// sameSlice: the parts of a slice that the mirror decides are equal.
func sameSlice(a, b obj) bool {
	for _, f := range []string{"addressType", "endpoints", "ports"} {
		if !jsonEqual(a[f], b[f]) {
			return false
		}
	}
	return jsonEqual(child(child(a, "metadata"), "labels"), child(child(b, "metadata"), "labels"))
}

// slicesOf is the mirrored slices of the Endpoints ep, by name.
func slicesOf(name string, ep obj) map[string]obj {
	out := map[string]obj{}
	labels := obj{}
	for k, v := range child(child(ep, "metadata"), "labels") {
		labels[k] = v
	}
	labels[sliceServiceLabel] = name
	labels[sliceManagerLabel] = mirrorManager
	for i, s := range list(ep, "subsets") {
		sub, _ := s.(map[string]any)
		byFamily := map[string][]any{}
		for _, part := range []struct {
			key   string
			ready bool
		}{{"addresses", true}, {"notReadyAddresses", false}} {
			for _, a := range list(sub, part.key) {
				addr, _ := a.(map[string]any)
				ip, err := netip.ParseAddr(str(addr, "ip"))
				if err != nil {
					continue
				}
				fam := "IPv4"
				if ip.Is6() && !ip.Is4In6() {
					fam = "IPv6"
				}
				e := obj{"addresses": []any{ip.String()}, "conditions": obj{"ready": part.ready, "serving": part.ready, "terminating": false}}
				for _, f := range []string{"hostname", "nodeName", "targetRef"} {
					if v, ok := addr[f]; ok {
						e[f] = v
					}
				}
				byFamily[fam] = append(byFamily[fam], e)
			}
		}
		var ports []any
		for _, p := range list(sub, "ports") {
			pm, _ := p.(map[string]any)
			port := obj{"port": pm["port"], "protocol": str(pm, "protocol")}
			if n, ok := pm["name"]; ok {
				port["name"] = n
			}
			ports = append(ports, port)
		}
		for fam, eps := range byFamily {
			n := name + "-" + map[string]string{"IPv4": "ipv4", "IPv6": "ipv6"}[fam]
			if i > 0 {
				n += "-" + strconv.Itoa(i)
			}
			s := obj{
				"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
				"metadata":    obj{"name": n, "labels": deepCopy(labels)},
				"addressType": fam, "endpoints": eps,
			}
			if ports != nil {
				s["ports"] = ports
			}
			out[n] = s
		}
	}
	return out
}
