package faketp

import (
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strconv"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// The master service: every Arktos TP, as every kube-apiserver, keeps the
// Service and Endpoints default/kubernetes of the system tenant pointing at
// itself (samples 34, 37, 84). Arktos's own components need them: the
// API-server config manager of kube-proxy (client-go/datapartition) gets
// these Endpoints at start and exits after 5 minutes without them.
const (
	masterServiceName      = "kubernetes"
	masterServiceNamespace = "default"
	// masterServicePort is the service's port, named https, as
	// kube-apiserver's --kubernetes-service-node-port-less default.
	masterServicePort = 443
	// masterServiceGroupID is the serviceGroupId of the Endpoints' subset:
	// an Arktos TP of one API server has the group "0" (sample 37).
	masterServiceGroupID = "0"
)

// advertiseAddress is the address the master Endpoints name: the TP's
// TPOptions.AdvertiseAddress, else the host of its listen address, else
// (listening on every address) the host's default address, as
// kube-apiserver chooses its --advertise-address.
func (tp *TP) advertiseAddress(listenHost string) (net.IP, error) {
	if a := tp.opts.AdvertiseAddress; a != "" {
		ip := net.ParseIP(a)
		if ip == nil {
			return nil, fmt.Errorf("advertise address %q is not an IP address", a)
		}
		return ip, nil
	}
	ip := net.ParseIP(listenHost)
	if listenHost == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if ip != nil && !ip.IsUnspecified() {
		return ip, nil
	}
	ip, err := utilnet.ResolveBindAddress(ip)
	if err != nil {
		return nil, fmt.Errorf("choosing the address to advertise (listening on %q): %w; give one", listenHost, err)
	}
	return ip, nil
}

// reconcileMaster writes the master Service and Endpoints when they are
// missing or do not point at addr (host:port the TP serves on), as
// kube-apiserver's master controller reconciles them at every start. What
// is already right is not written again, so a restart on the same port adds
// no events. A replaced object keeps its uid and creation time.
func (tp *TP) reconcileMaster(addr string) error {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("faketp %s: master service: %w", tp.name, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("faketp %s: master service: port %q: %w", tp.name, portStr, err)
	}
	ip, err := tp.advertiseAddress(host)
	if err != nil {
		return fmt.Errorf("faketp %s: master service: %w", tp.name, err)
	}
	svc, ep := masterObjects(tp.serviceIPs.prefix.Addr().Next().String(), ip.String(), port)
	var write []obj
	for _, w := range []struct {
		resource string
		o        obj
		field    string
	}{{"services", svc, "spec"}, {"endpoints", ep, "subsets"}} {
		k := store.Key{Resource: w.resource, Tenant: tenancy.SystemTenant, Namespace: masterServiceNamespace, Name: masterServiceName}
		stored, ok := tp.st().Get(k)
		if ok {
			old, err := decodeObject(stored.Data)
			if err == nil && holds(old[w.field], w.o[w.field]) && sameJSON(child(old, "metadata")["labels"], child(w.o, "metadata")["labels"]) {
				continue
			}
			if err == nil {
				md := child(w.o, "metadata")
				md["uid"] = str(old, "metadata", "uid")
				md["creationTimestamp"] = str(old, "metadata", "creationTimestamp")
			}
		}
		write = append(write, w.o)
	}
	if len(write) == 0 {
		return nil
	}
	return tp.seedObjects(write)
}

// masterObjects are the master Service (cluster IP clusterIP, port 443
// named https to the API server's port) and its Endpoints (ip:port), as
// Arktos's API server writes them (samples 34, 37), with the defaults
// fake-tp stores for services.
func masterObjects(clusterIP, ip string, port int) (svc, ep obj) {
	md := func() obj {
		return obj{"name": masterServiceName, "namespace": masterServiceNamespace, "tenant": tenancy.SystemTenant,
			"labels": obj{"component": "apiserver", "provider": "kubernetes"}}
	}
	svc = obj{"apiVersion": "v1", "kind": "Service", "metadata": md(),
		"spec": obj{
			"ports":           []any{obj{"name": "https", "protocol": "TCP", "port": json.Number(strconv.Itoa(masterServicePort)), "targetPort": json.Number(strconv.Itoa(port))}},
			"clusterIP":       clusterIP,
			"type":            "ClusterIP",
			"sessionAffinity": "None",
		},
		"status": obj{"loadBalancer": obj{}},
	}
	epMeta := md()
	delete(epMeta, "labels") // kube-apiserver's Endpoints carry none (sample 37)
	ep = obj{"apiVersion": "v1", "kind": "Endpoints", "metadata": epMeta,
		"subsets": []any{obj{
			"addresses":      []any{obj{"ip": ip}},
			"ports":          []any{obj{"name": "https", "port": json.Number(strconv.Itoa(port)), "protocol": "TCP"}},
			"serviceGroupId": masterServiceGroupID,
		}},
	}
	return svc, ep
}

// holds says whether the stored value has every field of want with want's
// value (maps compared key by key, so defaults the server added to the
// stored value do not count as a difference).
func holds(stored, want any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return sameJSON(stored, want)
	}
	s, ok := stored.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range w {
		if !holds(s[k], v) {
			return false
		}
	}
	return true
}

// sameJSON says whether two decoded JSON values are equal, whatever their
// number representation.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	return json.Unmarshal(ja, &va) == nil && json.Unmarshal(jb, &vb) == nil && reflect.DeepEqual(va, vb)
}
