package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

var (
	updateGolden = flag.Bool("update-golden", false, "rewrite testdata/answers.golden from the answers of this tree")
	dumpGolden   = flag.String("golden-dump", "", "write every answer of TestGoldenAnswers, as hex and unpacked, to this file (diff two trees' dumps to see a change)")
	fullGolden   = flag.Bool("golden-full", false, "ask every question of TestGoldenAnswers from every source in every form and path (about ten times as many, for -golden-dump: the golden file holds the default set)")
)

const goldenFile = "testdata/answers.golden"

// goldenFixture is fixture plus in-zone ExternalName targets (a ClusterIP
// service, ns.dns, a name that does not exist, a reverse name, a chain of
// 9), a headless service too big for 512 bytes, and IPv6 addresses for
// PTR. Its serial is fixed, so that answers are the same bytes at each run.
func goldenFixture(t testing.TB) *index.Builder {
	b := fixture(t)
	none := []index.Port{{Port: index.NoPort}}
	ext := func(name, target string) {
		b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: name, Type: index.ExternalName, ExternalName: target, Ports: none})
	}
	ext("to-kube-dns", "kube-dns.kube-system.svc.cluster.local.")
	ext("to-ns", "ns.dns.cluster.local.")
	ext("to-version", "dns-version.cluster.local.")
	ext("to-missing", "nope.default.svc.cluster.local.")
	ext("to-reverse", "10.0.0.10.in-addr.arpa.")
	ext("to-db", "db.default.svc.cluster.local")
	ext("to-alpha", "api.web.alpha.svc.cluster.local.")
	ext("to-pod", "10-0-0-99.default.pod.cluster.local.")
	for i := 0; i < 9; i++ {
		ext(fmt.Sprintf("c%d", i), fmt.Sprintf("c%d.default.svc.cluster.local.", i+1))
	}
	ext("c9", "dual.default.svc.cluster.local.")
	b.SetService(0, &index.Service{Tenant: "alpha", Namespace: "web", Name: "to-beta", Type: index.ExternalName, ExternalName: "api.web.beta.svc.cluster.local.", Ports: none})
	var eps []index.Endpoint
	for i := 0; i < 40; i++ {
		eps = append(eps, index.Endpoint{Addrs: ips(fmt.Sprintf("10.245.0.%d", i+1), fmt.Sprintf("fd00::1:%d", i+1)), Hostname: fmt.Sprintf("big-%d", i)})
	}
	http := []index.Port{{Name: "http", Protocol: tcp, Port: 80}, {Name: "metrics", Protocol: tcp, Port: 9090}}
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "big", Type: index.Headless, Ports: http})
	b.SetEndpointSlice(0, &index.EndpointSlice{Tenant: "system", Namespace: "default", Name: "big-1", Service: "big", Ports: http, Endpoints: eps})
	b.Publish()
	b.Current().Serial = 20260101
	return b
}

// goldenNames are the questions of TestGoldenAnswers, asked in every type
// of goldenTypes: every kind of name and outcome the resolver knows.
var goldenNames = []string{
	"cluster.local.", "Cluster.LOCAL.", "ns.dns.cluster.local.", "dns-version.cluster.local.", "foo.cluster.local.",
	"svc.cluster.local.", "pod.cluster.local.", "kube-system.svc.cluster.local.", "alpha.svc.cluster.local.",
	"kube-dns.kube-system.svc.cluster.local.", "KUBE-DNS.Kube-System.svc.cluster.local.",
	"kube-dns.kube-system.system.svc.cluster.local.", "nope.kube-system.svc.cluster.local.",
	"_dns._udp.kube-dns.kube-system.svc.cluster.local.", "_dns-tcp._tcp.kube-dns.kube-system.svc.cluster.local.",
	"_http._tcp.kube-dns.kube-system.svc.cluster.local.", "kubernetes.default.svc.cluster.local.",
	"db.default.svc.cluster.local.", "db-0.db.default.svc.cluster.local.", "10-244-0-6.db.default.svc.cluster.local.",
	"_mysql._tcp.db.default.svc.cluster.local.", "_mysql._tcp.db-0.db.default.svc.cluster.local.", "empty.default.svc.cluster.local.",
	"dual.default.svc.cluster.local.", "noports.default.svc.cluster.local.", "big.default.svc.cluster.local.",
	"_http._tcp.big.default.svc.cluster.local.", "big-7.big.default.svc.cluster.local.",
	"ext.default.svc.cluster.local.", "_http._tcp.ext.default.svc.cluster.local.",
	"to-kube-dns.default.svc.cluster.local.", "to-ns.default.svc.cluster.local.", "to-version.default.svc.cluster.local.",
	"to-missing.default.svc.cluster.local.", "to-reverse.default.svc.cluster.local.", "to-db.default.svc.cluster.local.",
	"to-alpha.default.svc.cluster.local.", "to-pod.default.svc.cluster.local.", "to-beta.web.alpha.svc.cluster.local.",
	"c0.default.svc.cluster.local.", "c1.default.svc.cluster.local.", "c2.default.svc.cluster.local.", "c8.default.svc.cluster.local.",
	"api.web.alpha.svc.cluster.local.", "api.web.beta.svc.cluster.local.", "_http._tcp.api.web.beta.svc.cluster.local.",
	"s.x.gamma.svc.cluster.local.", "web.alpha.svc.cluster.local.", "api.web.delta.svc.cluster.local.",
	"web.alpha.cluster.local.", "alpha.cluster.local.",
	"10-0-0-99.default.pod.cluster.local.", "1-2-3-4.web.alpha.pod.cluster.local.", "127-0-0-11.web.alpha.pod.cluster.local.",
	"bad.default.pod.cluster.local.", "fd00--20.default.pod.cluster.local.",
	"10.0.0.10.in-addr.arpa.", "10.0.1.10.in-addr.arpa.", "1.1.0.10.in-addr.arpa.", "5.0.244.10.in-addr.arpa.",
	"6.0.244.10.in-addr.arpa.", "9.9.9.10.in-addr.arpa.", "1.0.0.192.in-addr.arpa.", "10.in-addr.arpa.", "in-addr.arpa.",
	"dns-version.in-addr.arpa.", "ns.dns.in-addr.arpa.", "ip6.arpa.",
	"0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.",
	"1.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.",
	"example.org.", "a.b.c.d.e.f.g.kube-dns.kube-system.svc.cluster.local.",
}

var goldenTypes = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypePTR, dns.TypeCNAME, dns.TypeTXT, dns.TypeSOA,
	dns.TypeNS, dns.TypeMX, dns.TypeANY, dns.TypeAXFR}

// goldenSources are the queriers: unknown, system pods in tp1 and tp2,
// tenant alpha's and beta's pods, and an unknown IPv6 one.
var goldenSources = []string{"127.0.0.99", "127.0.0.2", "127.0.0.3", "127.0.0.11", "127.0.0.21", "::1"}

// TestGoldenAnswers asks a broad set of questions (goldenNames, every type,
// from every source, without and with EDNS, with ECS from a trusted
// forwarder, over UDP, TCP and the UDP fast path) of handlers in every
// mode, and compares the answers' bytes with those recorded in
// testdata/answers.golden, a hash per handler and name: any change of a
// byte of any answer fails it. It guards restructurings of the resolver;
// a change meant to alter answers rewrites the file with -update-golden
// (and says why in its commit). -golden-dump writes every answer readably,
// to diff before and after.
func TestGoldenAnswers(t *testing.T) {
	b := goldenFixture(t)
	up := serveUpstream(t, "example.com. 60 IN A 192.0.2.80", "example.com. 60 IN AAAA 2001:db8::80",
		"1.0.0.192.in-addr.arpa. 60 IN PTR upstream.example.")
	fwd := externalForwarder(t, up)
	handlers := []struct {
		name string
		o    Options
		sync bool
	}{
		{"plain", Options{Pods: PodsInsecure, NSAddrs: ips("127.0.0.1", "::1")}, true},
		{"isolated", Options{Pods: PodsVerified, Isolation: true}, true},
		{"isolated-open", Options{Isolation: true, AllowUnknownSources: true, Pods: PodsDisabled}, true},
		{"forwarding", Options{Forwarder: fwd, Pods: PodsInsecure}, true},
		{"no-recursion", Options{Forwarder: fwd, AllowRecursion: prefixes("10.0.0.0/8")}, true},
		{"unsynced", Options{Forwarder: fwd}, false},
		{"no-ns", Options{NSAddrs: []netip.Addr{}, Zones: []string{"cluster.local", "example.org", "10.in-addr.arpa"}}, true},
		{"ttl-long", Options{TTL: 3600, SystemPartition: 1}, true},
		{"ecs", Options{TrustedForwarders: prefixes("127.0.0.1/32", "::1/128"), Forwarder: fwd}, true},
	}
	var dump *bufio.Writer
	if *dumpGolden != "" {
		f, err := os.Create(*dumpGolden)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		dump = bufio.NewWriter(f)
		defer dump.Flush()
	}
	got := map[string]string{}
	for _, hc := range handlers {
		h := newUnsyncedHandler(t, b, hc.o)
		if hc.sync {
			h.MarkSynced()
		}
		st := &state{buf: make([]byte, 0, dns.MaxMsgSize+512)}
		variants := goldenVariants(hc.name == "ecs")
		nv := len(variants)
		for ni, name := range goldenNames {
			sum := sha256.New()
			for ti, qtype := range goldenTypes {
				for i, from := range goldenSources {
					for j, v := range variants {
						for k, path := range []string{"udp", "tcp", "fast"} {
							// By default each source asks in one form on one
							// path, a different one for each name and type,
							// so that the sweep meets every combination at
							// a seventh of the cost (-race makes it slow).
							combo := j*3 + k
							if !*fullGolden && combo != (i*7+ni*3+ti)%(nv*3) && !(i == 0 && combo == 0) {
								continue
							}
							out := goldenAnswer(h, st, v.msg(name, qtype), ip(from), path)
							key := fmt.Sprintf("%s %s %s from %s %s %s", hc.name, name, dns.TypeToString[qtype], from, v.name, path)
							fmt.Fprintf(sum, "%s %x\n", key, out)
							if dump != nil {
								fmt.Fprintf(dump, "%s\n  %x\n%s\n", key, out, indent(unpacked(out)))
							}
						}
					}
				}
			}
			got[hc.name+" "+name] = hex.EncodeToString(sum.Sum(nil)[:12])
		}
	}
	if *fullGolden {
		return // compared by diffing dumps
	}
	if *updateGolden {
		var lines []string
		for k, v := range got {
			lines = append(lines, k+" "+v)
		}
		sort.Strings(lines)
		if err := os.WriteFile(goldenFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i := strings.LastIndexByte(l, ' '); i > 0 {
			want[l[:i]] = l[i+1:]
		}
	}
	if len(want) != len(got) {
		t.Errorf("%s holds %d handler and name pairs, the test asks %d: rewrite it with -update-golden", goldenFile, len(want), len(got))
	}
	var changed []string
	for k, v := range got {
		if want[k] != v {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	for _, k := range changed {
		t.Errorf("%s: an answer changed (compare -golden-dump files of both trees)", k)
	}
}

type goldenVariant struct {
	name string
	msg  func(name string, qtype uint16) *dns.Msg
}

// goldenVariants are the forms of a question: plain; EDNS with a large
// buffer and DO; EDNS with 512 bytes; EDNS version 1 (BADVERS); and, for
// a handler that trusts the querier as a forwarder, ECS options naming
// pods of tp1, tp2 and tenant alpha.
func goldenVariants(ecs bool) []goldenVariant {
	base := func(name string, qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.Id = 0x5ec5
		return m
	}
	vs := []goldenVariant{
		{"plain", base},
		{"edns4096do", func(n string, q uint16) *dns.Msg { m := base(n, q); m.SetEdns0(4096, true); return m }},
		{"edns512", func(n string, q uint16) *dns.Msg { m := base(n, q); m.SetEdns0(512, false); return m }},
		{"ednsv1", func(n string, q uint16) *dns.Msg {
			m := base(n, q)
			m.SetEdns0(1232, false)
			m.IsEdns0().SetVersion(1)
			return m
		}},
		{"norecurse", func(n string, q uint16) *dns.Msg { m := base(n, q); m.RecursionDesired = false; return m }},
	}
	if ecs {
		for _, a := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.11"} {
			vs = append(vs, goldenVariant{"ecs-" + a, func(n string, q uint16) *dns.Msg {
				m := ecsQuery(n, q, a, 32)
				m.Id = 0x5ec5
				return m
			}})
		}
	}
	return vs
}

// goldenAnswer is the answer to m from src on path: "udp" and "tcp" are
// Respond's, "fast" the UDP fast path's, which may also send the packet
// to the slow path or the forwarder (then the answer names that); st is
// the fast path's scratch space.
func goldenAnswer(h *Handler, st *state, m *dns.Msg, src netip.Addr, path string) []byte {
	if path != "fast" {
		out := h.Respond(m, src, path == "tcp")
		if out == nil {
			return []byte("forwarded")
		}
		return out
	}
	pkt, err := m.Pack()
	if err != nil {
		return []byte("unpackable")
	}
	var q query
	var rep reply
	out, drop, held := h.fastPath(pkt, src, st, &q, &rep)
	if held {
		h.releaseForward()
	}
	switch {
	case out != nil:
		return append([]byte(nil), out...)
	case drop:
		return []byte("dropped")
	case rep.forward:
		return []byte(fmt.Sprintf("forward partial=%v", rep.partial))
	}
	return []byte("slow")
}

func unpacked(out []byte) string {
	m := new(dns.Msg)
	if err := m.Unpack(out); err != nil {
		return string(out)
	}
	return m.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}
