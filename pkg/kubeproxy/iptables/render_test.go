package iptables

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func ptr[T any](v T) *T { return &v }

func svc(tenant, ns, name, ip string, portName string, p int32) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Name: portName, Port: p, Protocol: corev1.ProtocolTCP}}},
	}
	tenancy.SetTenant(s, tenant)
	return s
}

func slice(tenant, ns, name, service, portName string, p int32, ips ...string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr(portName), Port: ptr(p), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	tenancy.SetTenant(es, tenant)
	return es
}

func name(tp, tenant, ns, n, port string) kubeproxy.ServicePortName {
	return kubeproxy.ServicePortName{Service: tenancy.Key{Partition: tp, Tenant: tenant, Namespace: ns, Name: n}, Port: port, Protocol: corev1.ProtocolTCP}
}

func TestChainNames(t *testing.T) {
	a := ServiceChain(name("tp1", "system", "kube-system", "kube-dns", "dns"))
	b := ServiceChain(name("tp2", "system", "kube-system", "kube-dns", "dns"))
	u := name("tp1", "system", "kube-system", "kube-dns", "dns")
	u.Protocol = corev1.ProtocolUDP
	c := ServiceChain(u)
	if a == b || a == c || b == c {
		t.Fatalf("chains must differ by TP and protocol: %s %s %s", a, b, c)
	}
	if a != ServiceChain(name("tp1", "system", "kube-system", "kube-dns", "dns")) {
		t.Fatal("chain names must be stable")
	}
	ep := netip.MustParseAddrPort("10.0.0.1:53")
	e1, e2 := EndpointChain(name("tp1", "system", "kube-system", "kube-dns", "dns"), ep), EndpointChain(name("tp2", "system", "kube-system", "kube-dns", "dns"), ep)
	for _, ch := range []string{a, b, c, e1, e2} {
		if len(ch) > 28 {
			t.Errorf("%s is longer than iptables' 28 characters", ch)
		}
	}
	if !strings.HasPrefix(a, "TPKIT-SVC-") || !strings.HasPrefix(e1, "TPKIT-SEP-") || e1 == e2 || len(a) != 26 {
		t.Fatalf("bad names %s %s %s", a, e1, e2)
	}
}

func twoTPView() *kubeproxy.View {
	v := kubeproxy.NewView([]string{"tp1", "tp2"}, kubeproxy.Options{})
	v.OnServiceAdd("tp1", svc("system", "kube-system", "kube-dns", "10.96.0.10", "dns", 53))
	v.OnServiceAdd("tp2", svc("system", "kube-system", "kube-dns", "10.96.1.10", "dns", 53))
	v.OnServiceAdd("tp1", svc("t1", "default", "web", "10.96.0.20", "http", 80))
	v.OnEndpointSliceAdd("tp1", slice("system", "kube-system", "d1", "kube-dns", "dns", 5353, "192.168.1.1", "192.168.1.2"))
	v.OnEndpointSliceAdd("tp2", slice("system", "kube-system", "d2", "kube-dns", "dns", 5353, "192.168.2.1"))
	return v
}

func TestRenderFull(t *testing.T) {
	v := twoTPView()
	s := kubeproxy.NewSnapshot()
	v.Apply(s)
	var r Renderer
	stale := []string{"PREROUTING", "TPKIT-SVC-OLDOLDOLDOLDOLDO", "KUBE-SVC-XYZ"}
	p := r.RenderFull(s, stale)
	in := string(p.Input)
	dns1, dns2 := name("tp1", "system", "kube-system", "kube-dns", "dns"), name("tp2", "system", "kube-system", "kube-dns", "dns")
	for _, want := range []string{
		"*filter\n:TPKIT-SERVICES - [0:0]\n",
		`-A TPKIT-SERVICES -d 10.96.0.20/32 -p tcp -m tcp --dport 80 -m comment --comment "t1_tp1/default/web:http has no endpoints" -j REJECT`,
		`-A TPKIT-SERVICES -d 10.96.0.10/32 -p tcp -m tcp --dport 53 -m comment --comment "system_tp1/kube-system/kube-dns:dns cluster IP" -j ` + ServiceChain(dns1),
		`-A TPKIT-SERVICES -d 10.96.1.10/32 -p tcp -m tcp --dport 53 -m comment --comment "system_tp2/kube-system/kube-dns:dns cluster IP" -j ` + ServiceChain(dns2),
		"-A " + ServiceChain(dns1) + " -m statistic --mode random --probability 0.5000000000 -j " + EndpointChain(dns1, netip.MustParseAddrPort("192.168.1.1:5353")),
		"-A " + ServiceChain(dns1) + " -j " + EndpointChain(dns1, netip.MustParseAddrPort("192.168.1.2:5353")),
		"-A " + EndpointChain(dns2, netip.MustParseAddrPort("192.168.2.1:5353")) + " -p tcp -m tcp -j DNAT --to-destination 192.168.2.1:5353",
		":TPKIT-SVC-OLDOLDOLDOLDOLDO - [0:0]\n",
		"-X TPKIT-SVC-OLDOLDOLDOLDOLDO\n",
	} {
		if !strings.Contains(in, want) {
			t.Errorf("full render lacks %q\n%s", want, in)
		}
	}
	if strings.Contains(in, "KUBE-SVC-XYZ") || strings.Contains(in, "192.168.2.1:5353\n-A "+ServiceChain(dns1)) {
		t.Errorf("full render touches what is not its own:\n%s", in)
	}
	// TP2's endpoint is never a target of TP1's chain, and vice versa.
	for _, line := range strings.Split(in, "\n") {
		if strings.HasPrefix(line, "-A "+ServiceChain(dns1)) && strings.Contains(line, EndpointChain(dns2, netip.MustParseAddrPort("192.168.2.1:5353"))) {
			t.Errorf("TP1 chain jumps to TP2 endpoint: %s", line)
		}
	}
	if p.Result.Services != 3 || p.Result.ChainsDeleted != 1 {
		t.Errorf("result %+v", p.Result)
	}
}

func countPrefix(in, prefix string) int {
	n := 0
	for _, l := range strings.Split(in, "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func TestRenderPartialTouchesOnlyChanged(t *testing.T) {
	v := twoTPView()
	s := kubeproxy.NewSnapshot()
	v.Apply(s)
	var r Renderer
	r.Commit(r.RenderFull(s, nil))
	dns1, dns2 := name("tp1", "system", "kube-system", "kube-dns", "dns"), name("tp2", "system", "kube-system", "kube-dns", "dns")

	// TP2's kube-dns gains an endpoint.
	v.OnEndpointSliceUpdate("tp2", nil, slice("system", "kube-system", "d2", "kube-dns", "dns", 5353, "192.168.2.1", "192.168.2.2"))
	c := v.Apply(s)
	p := r.RenderPartial(s, c.Services)
	in := string(p.Input)
	if p.Result.Services != 1 || p.Result.Chains != 3 || p.Result.RulesDeleted != 0 || p.Result.Rules != 4 {
		t.Fatalf("partial result %+v\n%s", p.Result, in)
	}
	if strings.Contains(in, ServiceChain(dns1)) || strings.Contains(in, "*filter") || countPrefix(in, "-A TPKIT-SERVICES") != 0 {
		t.Fatalf("partial render rewrote more than TP2's kube-dns:\n%s", in)
	}
	if countPrefix(in, ":"+ServiceChain(dns2)) != 1 {
		t.Fatalf("TP2's chain not rewritten:\n%s", in)
	}
	r.Commit(p)

	// t1's web gets an endpoint: REJECT goes, dispatch comes.
	v.OnEndpointSliceAdd("tp1", slice("t1", "default", "w", "web", "http", 8080, "192.168.1.9"))
	p = r.RenderPartial(s, v.Apply(s).Services)
	in = string(p.Input)
	if !strings.Contains(in, "*filter\n-D TPKIT-SERVICES -d 10.96.0.20/32") || countPrefix(in, "-A TPKIT-SERVICES -d 10.96.0.20/32") != 1 {
		t.Fatalf("reject not swapped for dispatch:\n%s", in)
	}
	r.Commit(p)

	// Deleting TP1's kube-dns deletes its dispatch rule and its 3 chains.
	v.OnServiceDelete("tp1", svc("system", "kube-system", "kube-dns", "10.96.0.10", "dns", 53))
	p = r.RenderPartial(s, v.Apply(s).Services)
	in = string(p.Input)
	if p.Result.ChainsDeleted != 3 || p.Result.RulesDeleted != 1 || countPrefix(in, "-X ") != 3 {
		t.Fatalf("delete result %+v\n%s", p.Result, in)
	}
	if strings.Index(in, "-D TPKIT-SERVICES") > strings.Index(in, "-X "+ServiceChain(dns1)) {
		t.Fatalf("the jump must go before its chain:\n%s", in)
	}
	r.Commit(p)
	if r.Installed() != 2 {
		t.Fatalf("installed %d services, want 2", r.Installed())
	}
	// Nothing changed: nothing to write.
	if p := r.RenderPartial(s, nil); len(p.Input) != 0 {
		t.Fatalf("empty change rendered %q", p.Input)
	}
}

func TestCommentsStayQuoted(t *testing.T) {
	v := kubeproxy.NewView([]string{`tp"1`}, kubeproxy.Options{})
	v.OnServiceAdd(`tp"1`, svc("system", "ns", "x", "10.0.0.1", "p", 1))
	var r Renderer
	in := string(r.RenderFull(v.Snapshot(), nil).Input)
	if strings.Contains(in, `tp"1`) || !strings.Contains(in, `"system_tp_1/ns/x:p has no endpoints"`) {
		t.Fatalf("quote not escaped:\n%s", in)
	}
}

// TestRenderFamilies: a dual-stack service renders its IPv4 half for
// iptables and its IPv6 half for ip6tables, never mixed.
func TestRenderFamilies(t *testing.T) {
	v := kubeproxy.NewView([]string{"tp1"}, kubeproxy.Options{})
	s := svc("system", "ns", "web", "10.96.0.5", "http", 80)
	s.Spec.ClusterIPs = []string{"10.96.0.5", "fd00::5"}
	v.OnServiceAdd("tp1", s)
	v.OnEndpointSliceAdd("tp1", slice("system", "ns", "v4", "web", "http", 8080, "192.168.0.1"))
	v6 := slice("system", "ns", "v6", "web", "http", 8080, "fd00:1::1")
	v6.AddressType = discoveryv1.AddressTypeIPv6
	v.OnEndpointSliceAdd("tp1", v6)
	snap := v.Snapshot()

	in4 := string((&Renderer{}).RenderFull(snap, nil).Input)
	in6 := string((&Renderer{Family: corev1.IPv6Protocol}).RenderFull(snap, nil).Input)
	if !strings.Contains(in4, "-d 10.96.0.5/32") || !strings.Contains(in4, "--to-destination 192.168.0.1:8080") || strings.Contains(in4, "fd00") {
		t.Errorf("IPv4 render:\n%s", in4)
	}
	if !strings.Contains(in6, "-d fd00::5/128") || !strings.Contains(in6, "--to-destination [fd00:1::1]:8080") || strings.Contains(in6, "10.96.0.5") || strings.Contains(in6, "192.168") {
		t.Errorf("IPv6 render:\n%s", in6)
	}
}

// FuzzRender: whatever the names, ports and addresses, rendering neither
// panics nor writes a line that escapes its comment or its chain.
func FuzzRender(f *testing.F) {
	f.Add("tp1", "kube-dns", "dns", int32(53), "10.0.0.1", "192.168.0.1")
	f.Add(`t"p`, "x", `a\b`, int32(1), "::1", "fe80::1")
	f.Add("tp", "a\nCOMMIT\n", "p\r\n-X", int32(80), "10.0.0.1", "10.0.0.2")
	f.Fuzz(func(t *testing.T, tp, name, portName string, p int32, vip, ep string) {
		v := kubeproxy.NewView([]string{tp}, kubeproxy.Options{})
		v.OnServiceAdd(tp, svc("system", "ns", name, vip, portName, p))
		v.OnEndpointSliceAdd(tp, slice("system", "ns", "s", name, portName, p, ep))
		var r Renderer
		in := string(r.RenderFull(v.Snapshot(), nil).Input)
		for _, line := range strings.Split(strings.TrimSuffix(in, "\n"), "\n") {
			if strings.Count(line, `"`)%2 != 0 || len(line) > 1024 {
				t.Fatalf("unbalanced quotes in %q", line)
			}
			if !(strings.HasPrefix(line, "*") || strings.HasPrefix(line, ":TPKIT-") || strings.HasPrefix(line, "-A TPKIT-") || line == "COMMIT") {
				t.Fatalf("unexpected line %q", line)
			}
		}
	})
}
