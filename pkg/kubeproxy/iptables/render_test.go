package iptables

import (
	"crypto/sha256"
	"encoding/base32"
	"net/netip"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

// svc is a service record with one TCP port.
func svc(tenant, ns, name, ip string, portName string, p int32) *kubeproxy.Service {
	return &kubeproxy.Service{Tenant: tenant, Namespace: ns, Name: name, ClusterIPs: []string{ip},
		Ports: []kubeproxy.ServicePort{{Name: portName, Port: p, Protocol: "TCP"}}}
}

// slice is an endpoints record named name feeding service, every address
// ready on one TCP port.
func slice(tenant, ns, name, service, portName string, p int32, ips ...string) *kubeproxy.Endpoints {
	e := &kubeproxy.Endpoints{Tenant: tenant, Namespace: ns, Name: name, Service: service}
	for _, ip := range ips {
		e.Endpoints = append(e.Endpoints, kubeproxy.Endpoint{Address: ip, PortName: portName, Protocol: "TCP", Port: p, Ready: true})
	}
	return e
}

func name(tp int, tenant, ns, n, port string) kubeproxy.ServicePortName {
	return kubeproxy.ServicePortName{ServiceName: kubeproxy.ServiceName{TenantPartitionID: tp, Tenant: tenant, Namespace: ns, Name: n}, Port: port}
}

// arktosChainHash is how Arktos's kube-proxy (pkg/proxy/iptables/proxier.go,
// portProtoHash and servicePortEndpointChainName) suffixes KUBE-SVC- and
// KUBE-SEP-, written out again: SHA-256 of the ServicePortName string, the
// lower-case protocol and (for an endpoint chain) "ip:port", in base32, the
// first 16 characters.
func arktosChainHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "")))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// TestChainNamesMatchArktos: for the same service port, the chains carry
// the hash Arktos's kube-proxy gives it.
func TestChainNamesMatchArktos(t *testing.T) {
	n := name(1, "system", "kube-system", "kube-dns", "dns")
	if got, want := ServiceChain(n, "UDP"), "TPKIT-SVC-"+arktosChainHash("system_1/kube-system/kube-dns:dns", "udp"); got != want {
		t.Errorf("ServiceChain = %s, want %s", got, want)
	}
	ep := netip.MustParseAddrPort("10.244.1.2:53")
	if got, want := EndpointChain(n, "UDP", ep), "TPKIT-SEP-"+arktosChainHash("system_1/kube-system/kube-dns:dns", "udp", "10.244.1.2:53"); got != want {
		t.Errorf("EndpointChain = %s, want %s", got, want)
	}
	v6 := netip.MustParseAddrPort("[fd00::2]:53")
	if got, want := EndpointChain(n, "TCP", v6), "TPKIT-SEP-"+arktosChainHash("system_1/kube-system/kube-dns:dns", "tcp", "[fd00::2]:53"); got != want {
		t.Errorf("IPv6 EndpointChain = %s, want %s", got, want)
	}
}

// TestChainNamesPinned pins three chain names. Arktos's own functions give
// the same hashes behind KUBE-SVC-/KUBE-SEP- (checked in an Arktos tree by
// hack/arktos-vendor, testdata/pkg/proxy/iptables/tpkit_hash_test.go).
func TestChainNamesPinned(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{ServiceChain(name(1, "system", "kube-system", "kube-dns", "dns"), "UDP"), "TPKIT-SVC-4QFVOSQSETURAHND"},
		{EndpointChain(name(1, "system", "kube-system", "kube-dns", "dns"), "UDP", netip.MustParseAddrPort("10.244.1.2:53")), "TPKIT-SEP-6UXSWHAURPJHI5MJ"},
		{ServiceChain(name(0, "t1", "default", "web", ""), "TCP"), "TPKIT-SVC-6GHVOWSJPPD7TJAC"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

func TestChainNames(t *testing.T) {
	a := ServiceChain(name(0, "system", "kube-system", "kube-dns", "dns"), "TCP")
	b := ServiceChain(name(1, "system", "kube-system", "kube-dns", "dns"), "TCP")
	c := ServiceChain(name(0, "system", "kube-system", "kube-dns", "dns"), "UDP")
	if a == b || a == c || b == c {
		t.Fatalf("chains must differ by TP and protocol: %s %s %s", a, b, c)
	}
	if a != ServiceChain(name(0, "system", "kube-system", "kube-dns", "dns"), "tcp") {
		t.Fatal("chain names must be stable")
	}
	ep := netip.MustParseAddrPort("10.0.0.1:53")
	e1, e2 := EndpointChain(name(0, "system", "kube-system", "kube-dns", "dns"), "TCP", ep), EndpointChain(name(1, "system", "kube-system", "kube-dns", "dns"), "TCP", ep)
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
	v := kubeproxy.NewView([]int{0, 1}, kubeproxy.Options{})
	v.OnServiceAdd(svc("system", "kube-system", "kube-dns", "10.96.0.10", "dns", 53), 0)
	v.OnServiceAdd(svc("system", "kube-system", "kube-dns", "10.96.1.10", "dns", 53), 1)
	v.OnServiceAdd(svc("t1", "default", "web", "10.96.0.20", "http", 80), 0)
	v.OnEndpointsAdd(slice("system", "kube-system", "d1", "kube-dns", "dns", 5353, "192.168.1.1", "192.168.1.2"), 0)
	v.OnEndpointsAdd(slice("system", "kube-system", "d2", "kube-dns", "dns", 5353, "192.168.2.1"), 1)
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
	dns1, dns2 := name(0, "system", "kube-system", "kube-dns", "dns"), name(1, "system", "kube-system", "kube-dns", "dns")
	for _, want := range []string{
		"*filter\n:TPKIT-SERVICES - [0:0]\n",
		`-A TPKIT-SERVICES -d 10.96.0.20/32 -p tcp -m tcp --dport 80 -m comment --comment "t1_0/default/web:http has no endpoints" -j REJECT`,
		`-A TPKIT-SERVICES -d 10.96.0.10/32 -p tcp -m tcp --dport 53 -m comment --comment "system_0/kube-system/kube-dns:dns cluster IP" -j ` + ServiceChain(dns1, "TCP"),
		`-A TPKIT-SERVICES -d 10.96.1.10/32 -p tcp -m tcp --dport 53 -m comment --comment "system_1/kube-system/kube-dns:dns cluster IP" -j ` + ServiceChain(dns2, "TCP"),
		"-A " + ServiceChain(dns1, "TCP") + " -m statistic --mode random --probability 0.5000000000 -j " + EndpointChain(dns1, "TCP", netip.MustParseAddrPort("192.168.1.1:5353")),
		"-A " + ServiceChain(dns1, "TCP") + " -j " + EndpointChain(dns1, "TCP", netip.MustParseAddrPort("192.168.1.2:5353")),
		"-A " + EndpointChain(dns2, "TCP", netip.MustParseAddrPort("192.168.2.1:5353")) + " -p tcp -m tcp -j DNAT --to-destination 192.168.2.1:5353",
		":TPKIT-SVC-OLDOLDOLDOLDOLDO - [0:0]\n",
		"-X TPKIT-SVC-OLDOLDOLDOLDOLDO\n",
	} {
		if !strings.Contains(in, want) {
			t.Errorf("full render lacks %q\n%s", want, in)
		}
	}
	if strings.Contains(in, "KUBE-SVC-XYZ") || strings.Contains(in, "192.168.2.1:5353\n-A "+ServiceChain(dns1, "TCP")) {
		t.Errorf("full render touches what is not its own:\n%s", in)
	}
	// TP2's endpoint is never a target of TP1's chain, and vice versa.
	for _, line := range strings.Split(in, "\n") {
		if strings.HasPrefix(line, "-A "+ServiceChain(dns1, "TCP")) && strings.Contains(line, EndpointChain(dns2, "TCP", netip.MustParseAddrPort("192.168.2.1:5353"))) {
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
	dns1, dns2 := name(0, "system", "kube-system", "kube-dns", "dns"), name(1, "system", "kube-system", "kube-dns", "dns")

	// TP 1's kube-dns gains an endpoint.
	v.OnEndpointsUpdate(nil, slice("system", "kube-system", "d2", "kube-dns", "dns", 5353, "192.168.2.1", "192.168.2.2"), 1)
	c := v.Apply(s)
	p := r.RenderPartial(s, c.Services)
	in := string(p.Input)
	if p.Result.Services != 1 || p.Result.Chains != 3 || p.Result.RulesDeleted != 0 || p.Result.Rules != 4 {
		t.Fatalf("partial result %+v\n%s", p.Result, in)
	}
	if strings.Contains(in, ServiceChain(dns1, "TCP")) || strings.Contains(in, "*filter") || countPrefix(in, "-A TPKIT-SERVICES") != 0 {
		t.Fatalf("partial render rewrote more than TP2's kube-dns:\n%s", in)
	}
	if countPrefix(in, ":"+ServiceChain(dns2, "TCP")) != 1 {
		t.Fatalf("TP2's chain not rewritten:\n%s", in)
	}
	r.Commit(p)

	// t1's web gets an endpoint: REJECT goes, dispatch comes.
	v.OnEndpointsAdd(slice("t1", "default", "w", "web", "http", 8080, "192.168.1.9"), 0)
	p = r.RenderPartial(s, v.Apply(s).Services)
	in = string(p.Input)
	if !strings.Contains(in, "*filter\n-D TPKIT-SERVICES -d 10.96.0.20/32") || countPrefix(in, "-A TPKIT-SERVICES -d 10.96.0.20/32") != 1 {
		t.Fatalf("reject not swapped for dispatch:\n%s", in)
	}
	r.Commit(p)

	// Deleting TP1's kube-dns deletes its dispatch rule and its 3 chains.
	v.OnServiceDelete(svc("system", "kube-system", "kube-dns", "10.96.0.10", "dns", 53), 0)
	p = r.RenderPartial(s, v.Apply(s).Services)
	in = string(p.Input)
	if p.Result.ChainsDeleted != 3 || p.Result.RulesDeleted != 1 || countPrefix(in, "-X ") != 3 {
		t.Fatalf("delete result %+v\n%s", p.Result, in)
	}
	if strings.Index(in, "-D TPKIT-SERVICES") > strings.Index(in, "-X "+ServiceChain(dns1, "TCP")) {
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
	v := kubeproxy.NewView([]int{0}, kubeproxy.Options{})
	v.OnServiceAdd(svc("system", "ns", `x"y`, "10.0.0.1", "p", 1), 0)
	var r Renderer
	in := string(r.RenderFull(v.Snapshot(), nil).Input)
	if strings.Contains(in, `x"y`) || !strings.Contains(in, `"system_0/ns/x_y:p has no endpoints"`) {
		t.Fatalf("quote not escaped:\n%s", in)
	}
}

// TestRenderFamilies: a dual-stack service renders its IPv4 half for
// iptables and its IPv6 half for ip6tables, never mixed.
func TestRenderFamilies(t *testing.T) {
	v := kubeproxy.NewView([]int{0}, kubeproxy.Options{})
	s := svc("system", "ns", "web", "10.96.0.5", "http", 80)
	s.ClusterIPs = []string{"10.96.0.5", "fd00::5"}
	v.OnServiceAdd(s, 0)
	v.OnEndpointsAdd(slice("system", "ns", "v4", "web", "http", 8080, "192.168.0.1"), 0)
	v.OnEndpointsAdd(slice("system", "ns", "v6", "web", "http", 8080, "fd00:1::1"), 0)
	snap := v.Snapshot()

	in4 := string((&Renderer{}).RenderFull(snap, nil).Input)
	in6 := string((&Renderer{Family: IPv6}).RenderFull(snap, nil).Input)
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
	f.Add(0, "kube-dns", "dns", int32(53), "10.0.0.1", "192.168.0.1")
	f.Add(7, `x"y`, `a\b`, int32(1), "::1", "fe80::1")
	f.Add(-1, "a\nCOMMIT\n", "p\r\n-X", int32(80), "10.0.0.1", "10.0.0.2")
	f.Fuzz(func(t *testing.T, tp int, name, portName string, p int32, vip, ep string) {
		v := kubeproxy.NewView([]int{tp}, kubeproxy.Options{})
		v.OnServiceAdd(svc("system", "ns", name, vip, portName, p), tp)
		v.OnEndpointsAdd(slice("system", "ns", "s", name, portName, p, ep), tp)
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
