//go:build linux

package multitp

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// Pods of two regular tenants in two TPs, made by testNodeCache.
const (
	acmePod = "127.0.0.4" // acme/default/client, tp2
	zetaPod = "127.0.0.5" // zeta/default/client, tp3
	// nodeCacheIP is node-cache's local IP. partition-dns sees the cache's
	// queries from 127.0.0.1, the node's address here.
	nodeCacheIP = "127.0.0.60"
)

// testNodeCache: pod identity survives node-cache (EDNS Client Subnet). A second
// partition-dns with tenant isolation trusts the node (127.0.0.1) to name
// pods by EDNS Client Subnet; node-cache in front of it forwards each
// pod's address. Through the cache, every pod gets the answer it gets when
// it asks partition-dns itself: system names from its own TP, other
// tenants' names hidden, and no pod's cached answer reaches another. A
// forged ECS option from a pod is ignored. Leaves nothing.
func testNodeCache(t *testing.T, m *mission) {
	for _, p := range []struct{ tp, tenant, ip string }{{"tp2", "acme", acmePod}, {"tp3", "zeta", zetaPod}} {
		base := "/api/v1/tenants/" + p.tenant + "/namespaces/default/pods"
		mustObject(t, m.kubeconfigs[p.tp], http.MethodPost, base,
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"client"},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}`, http.StatusCreated)
		mustObject(t, m.kubeconfigs[p.tp], http.MethodPatch, base+"/client/status",
			fmt.Sprintf(`{"status":{"phase":"Running","podIP":%q,"podIPs":[{"ip":%q}]}}`, p.ip, p.ip), http.StatusOK)
		defer mustObject(t, m.kubeconfigs[p.tp], http.MethodDelete, base+"/client", "", http.StatusOK)
	}
	d := startPartitionDNS(t, t, "partition-dns (isolation, trusted node)", m.kubeconfigFlag(),
		"--tenant-isolation", "--isolation-unknown-sources", "deny", "--trusted-forwarders", "127.0.0.1/32")
	// With unknown sources denied, the pods' own names answer only once
	// partition-dns knows the pods.
	testbin.Eventually(t, "partition-dns to know the new pods", func() bool {
		return answer(query(t, d.addr, "udp", acmePod, "web.default.acme.svc.cluster.local", dns.TypeA)) == "NOERROR "+acmeWeb &&
			answer(query(t, d.addr, "udp", zetaPod, "web.default.zeta.svc.cluster.local", dns.TypeA)) == "NOERROR "+zetaWeb
	})

	_, dnsPort, _ := net.SplitHostPort(d.addr)
	var cacheAddr string
	for attempt := 1; ; attempt++ {
		_, port, _ := net.SplitHostPort(freePort(t))
		cacheAddr = net.JoinHostPort(nodeCacheIP, port)
		c := start(t, "node-cache", "partition-dns", "node-cache", "--local-ip", nodeCacheIP, "--dns-port", port,
			"--upstream-svc-ip", "127.0.0.1", "--upstream-svc-port", dnsPort, "--upstream-servers", "127.0.0.1:9",
			"--setup-interface=false", "--setup-iptables=false", "--health-port", "0", "--metrics-listen-address", "")
		answered := false
		for end := time.Now().Add(deadline); !c.Exited() && time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
			if r, err := exchange(cacheAddr, "udp", podTP1, "dns-version.cluster.local", dns.TypeTXT, ""); err == nil && r.Rcode == dns.RcodeSuccess {
				answered = true
				break
			}
		}
		if answered {
			break
		}
		if c.Exited() && attempt < 3 && strings.Contains(c.Output(), "address already in use") {
			continue
		}
		t.Fatalf("node-cache does not answer (exited: %v):\n%s", c.Exited(), c.Output())
	}

	const kubeDNS = "kube-dns.kube-system.svc.cluster.local"
	acmeWebName, zetaWebName := "web.default.acme.svc.cluster.local", "web.default.zeta.svc.cluster.local"
	cases := []struct{ from, name, want string }{
		{podTP2, kubeDNS, "NOERROR " + kubeDNSTP2},
		{podTP1, kubeDNS, "NOERROR " + kubeDNSTP1},
		{acmePod, kubeDNS, "NOERROR " + kubeDNSTP2}, // acme lives in tp2
		{zetaPod, kubeDNS, "NOERROR " + kubeDNSTP1}, // tp3 has none: the system partition's
		{acmePod, acmeWebName, "NOERROR " + acmeWeb},
		{acmePod, zetaWebName, "NXDOMAIN"},
		{zetaPod, zetaWebName, "NOERROR " + zetaWeb},
		{zetaPod, acmeWebName, "NXDOMAIN"},
		{podTP1, acmeWebName, "NOERROR " + acmeWeb}, // system pods see every tenant
	}
	for _, network := range []string{"udp", "tcp"} {
		// Twice, the second time in reverse order: the answers now come
		// from the cache, and none may be another pod's.
		for round := 0; round < 2; round++ {
			for i := range cases {
				c := cases[i]
				if round == 1 {
					c = cases[len(cases)-1-i]
				}
				got := answer(query(t, cacheAddr, network, c.from, c.name, dns.TypeA))
				direct := answer(query(t, d.addr, network, c.from, c.name, dns.TypeA))
				if got != c.want || direct != c.want {
					t.Errorf("%s, round %d: %s from %s: %q through node-cache, %q direct; want %q", network, round, c.name, c.from, got, direct, c.want)
				}
			}
		}
	}

	// A pod is no trusted forwarder: acme's pod naming zeta's in ECS is
	// still answered as acme's, both directly and through the cache (which
	// replaces the pod's option with the pod's own address).
	for _, server := range []string{d.addr, cacheAddr} {
		for _, c := range []struct{ name, want string }{{zetaWebName, "NXDOMAIN"}, {acmeWebName, "NOERROR " + acmeWeb}} {
			r, err := exchange(server, "udp", acmePod, c.name, dns.TypeA, zetaPod)
			if err != nil {
				t.Fatal(err)
			}
			if got := answer(r); got != c.want {
				t.Errorf("%s from acme's pod with a forged ECS naming zeta's, via %s: %q, want %q", c.name, server, got, c.want)
			}
		}
	}
}

// exchange sends one question from the loopback address from, with an ECS
// option naming ecs (/32) when it is not empty.
func exchange(server, network, from, name string, qtype uint16, ecs string) (*dns.Msg, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if network == "tcp" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	} else {
		d.LocalAddr = &net.UDPAddr{IP: net.ParseIP(from)}
	}
	c := &dns.Client{Net: network, Dialer: d, Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if ecs != "" {
		m.SetEdns0(1232, false)
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 32, Address: net.ParseIP(ecs).To4()})
	}
	r, _, err := c.Exchange(m, server)
	return r, err
}
