package kubeproxy

import (
	"testing"
)

// TP ids of the tests: the first two kubeconfigs.
const (
	tp0 = 0
	tp1 = 1
	tp2 = 2
)

func svcRec(tenant, ns, name, ip string, ports ...ServicePort) *Service {
	s := &Service{Tenant: tenant, Namespace: ns, Name: name, Ports: ports}
	if ip != "" {
		s.ClusterIPs = []string{ip}
	}
	return s
}

func port(name string, p int32) ServicePort { return ServicePort{Name: name, Port: p, Protocol: "TCP"} }

func udpPort(name string, p int32) ServicePort {
	return ServicePort{Name: name, Port: p, Protocol: "UDP"}
}

type epSpec struct {
	ip       string
	notReady bool
}

// epsRec is an endpoints object named name feeding service, every address
// on one TCP port, like one EndpointSlice.
func epsRec(tenant, ns, name, service, portName string, portNum int32, eps ...epSpec) *Endpoints {
	e := &Endpoints{Tenant: tenant, Namespace: ns, Name: name, Service: service}
	for _, s := range eps {
		e.Endpoints = append(e.Endpoints, Endpoint{Address: s.ip, PortName: portName, Protocol: "TCP", Port: portNum, Ready: !s.notReady})
	}
	return e
}

func ready(ips ...string) []epSpec {
	out := make([]epSpec, len(ips))
	for i, ip := range ips {
		out[i] = epSpec{ip: ip}
	}
	return out
}

func sname(tp int, tenant, ns, name string) ServiceName {
	return ServiceName{TenantPartitionID: tp, Tenant: tenant, Namespace: ns, Name: name}
}

func spn(tp int, tenant, ns, name, portName string) ServicePortName {
	return ServicePortName{ServiceName: sname(tp, tenant, ns, name), Port: portName}
}

func endpointIPs(t *testing.T, s *Snapshot, n ServicePortName) []string {
	t.Helper()
	var out []string
	for _, e := range s.Endpoints(n) {
		out = append(out, e.AddrPort().String())
	}
	return out
}
