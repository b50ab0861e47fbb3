package kubeletdns

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// testPod builds a pod of tenant (system when "") in namespace ns.
func testPod(tenant, ns string, policy DNSPolicy, hostNetwork bool) Pod {
	return Pod{
		Tenant: tenant, Namespace: ns, Name: "test-pod", UID: "uid-" + tenant + "-" + ns,
		DNSPolicy: policy, HostNetwork: hostNetwork,
	}
}

func withDNSConfig(pod Pod, dc *PodDNSConfig) Pod {
	pod.DNSConfig = dc
	return pod
}

// hostFile writes content as a resolv.conf in a temporary directory.
func hostFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustNew(t testing.TB, o Options) *Configurer {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func ips(ss ...string) []net.IP {
	out := make([]net.IP, len(ss))
	for i, s := range ss {
		out[i] = net.ParseIP(s)
	}
	return out
}

func ptr(s string) *string { return &s }

// reasons lists the warnings' reasons, for comparison.
func reasons(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Reason)
	}
	return out
}

// checkPodDNS compares got with want and checks the invariant that the
// result formats and parses back to itself.
func checkPodDNS(t *testing.T, got *PodDNS, want ResolvConf, wantReasons []string) {
	t.Helper()
	if !sameResolvConf(got.ResolvConf, want) {
		t.Errorf("got  %+v\nwant %+v", got.ResolvConf, want)
	}
	if !reflect.DeepEqual(reasons(got.Warnings), wantReasons) {
		t.Errorf("warnings = %v, want reasons %v", got.Warnings, wantReasons)
	}
	data, err := got.Format()
	if err != nil {
		t.Fatalf("Format: %v", err)
	}
	back, err := ParseResolvConf(strings.NewReader(string(data)))
	if err != nil || !sameResolvConf(back, canonical(got.ResolvConf)) {
		t.Fatalf("round trip of %q = %+v, %v", data, back, err)
	}
}

func TestPodDNSType(t *testing.T) {
	cases := []struct {
		name        string
		policy      DNSPolicy
		hostNetwork bool
		want        podDNSType
		wantErr     bool
	}{
		{"ClusterFirst without host network", DNSClusterFirst, false, dnsCluster, false},
		{"ClusterFirstWithHostNet with host network", DNSClusterFirstWithHostNet, true, dnsCluster, false},
		{"ClusterFirstWithHostNet without host network", DNSClusterFirstWithHostNet, false, dnsCluster, false},
		{"Default without host network", DNSDefault, false, dnsHost, false},
		{"Default with host network", DNSDefault, true, dnsHost, false},
		{"ClusterFirst with host network falls back to Default", DNSClusterFirst, true, dnsHost, false},
		{"None", DNSNone, false, dnsNone, false},
		{"None with host network", DNSNone, true, dnsNone, false},
		{"invalid policy", "invalidPolicy", false, dnsCluster, true},
		{"empty policy", "", false, dnsCluster, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("", "ns", tc.policy, tc.hostNetwork)
			got, err := podDNSTypeOf(&pod)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("type = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMergePodOptions(t *testing.T) {
	three := "3"
	cases := []struct {
		name     string
		existing []string
		opts     []PodDNSConfigOption
		want     []string
	}{
		{"no pod options", []string{"ndots:5", "debug"}, nil, []string{"ndots:5", "debug"}},
		{"no duplicates", []string{"ndots:5", "debug"},
			[]PodDNSConfigOption{{Name: "single-request"}, {Name: "attempts", Value: &three}},
			[]string{"ndots:5", "debug", "single-request", "attempts:3"}},
		{"duplicates overwritten in place", []string{"ndots:5", "debug"},
			[]PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "debug"}, {Name: "single-request"}, {Name: "attempts", Value: &three}},
			[]string{"ndots:3", "debug", "single-request", "attempts:3"}},
		{"a bare option drops the value", []string{"ndots:5"}, []PodDNSConfigOption{{Name: "ndots"}}, []string{"ndots"}},
		{"an empty value is a bare option", []string{"ndots:5"}, []PodDNSConfigOption{{Name: "ndots", Value: ptr("")}}, []string{"ndots"}},
		{"the last pod option wins", nil, []PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}, {Name: "ndots", Value: ptr("2")}}, []string{"ndots:2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			existing := append([]string(nil), tc.existing...)
			got := mergePodOptions(existing, tc.opts)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("options = %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(existing, tc.existing) {
				t.Fatalf("existing options modified: %q", existing)
			}
		})
	}
}

// TestGetPodDNS is upstream's pod DNS suite: each policy, with and without a
// host resolv.conf, with both limit sets.
func TestGetPodDNS(t *testing.T) {
	const clusterNS = "203.0.113.1"
	const domain = "kubernetes.io"
	clusterSearch := []string{"testns.svc." + domain, "svc." + domain, domain}
	hostSmall := "nameserver 8.8.8.8\nnameserver 8.8.4.4\nsearch a.example b.example\noptions ndots:1 timeout:2\n"
	hostMany := "nameserver 8.8.8.8\nsearch h1 h2 h3 h4 h5 h6 h7 h8\n"
	many := []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"}

	cases := []struct {
		name        string
		limits      Limits
		host        string // "" means no host file
		nodeIPs     []net.IP
		policy      DNSPolicy
		hostNetwork bool
		want        ResolvConf
		warnings    []string
	}{
		// Without a host file.
		{"no host file: ClusterFirstWithHostNet", ExpandedLimits, "", nil, DNSClusterFirstWithHostNet, true,
			ResolvConf{[]string{clusterNS}, clusterSearch, []string{"ndots:5"}}, nil},
		{"no host file: ClusterFirst on host network is Default", ExpandedLimits, "", nil, DNSClusterFirst, true,
			ResolvConf{[]string{"127.0.0.1"}, []string{"."}, nil}, nil},
		{"no host file: ClusterFirst", ExpandedLimits, "", nil, DNSClusterFirst, false,
			ResolvConf{[]string{clusterNS}, clusterSearch, []string{"ndots:5"}}, nil},
		{"no host file: Default", ExpandedLimits, "", nil, DNSDefault, true,
			ResolvConf{[]string{"127.0.0.1"}, []string{"."}, nil}, nil},
		{"no host file: Default on an IPv6 node", ExpandedLimits, "", ips("fd00::1"), DNSDefault, false,
			ResolvConf{[]string{"::1"}, []string{"."}, nil}, nil},
		{"no host file: Default on a dual-stack node", ExpandedLimits, "", ips("10.1.1.1", "fd00::1"), DNSDefault, false,
			ResolvConf{[]string{"127.0.0.1", "::1"}, []string{"."}, nil}, nil},
		{"no host file: None", ExpandedLimits, "", nil, DNSNone, false, ResolvConf{}, nil},
		{"no cluster domain: the host's search path", ExpandedLimits, hostSmall, nil, "no-domain", false,
			ResolvConf{[]string{clusterNS}, []string{"a.example", "b.example"}, []string{"ndots:5"}}, nil},

		// With a host file.
		{"host file: ClusterFirstWithHostNet uses only the cluster server", ExpandedLimits, hostSmall, nil, DNSClusterFirstWithHostNet, true,
			ResolvConf{[]string{clusterNS}, append(clusterSearch, "a.example", "b.example"), []string{"ndots:5"}}, nil},
		{"host file: ClusterFirst", ExpandedLimits, hostSmall, nil, DNSClusterFirst, false,
			ResolvConf{[]string{clusterNS}, append(clusterSearch, "a.example", "b.example"), []string{"ndots:5"}}, nil},
		{"host file: ClusterFirst on host network is the host's", ExpandedLimits, hostSmall, nil, DNSClusterFirst, true,
			ResolvConf{[]string{"8.8.8.8", "8.8.4.4"}, []string{"a.example", "b.example"}, []string{"ndots:1", "timeout:2"}}, nil},
		{"host file: Default", ExpandedLimits, hostSmall, nil, DNSDefault, false,
			ResolvConf{[]string{"8.8.8.8", "8.8.4.4"}, []string{"a.example", "b.example"}, []string{"ndots:1", "timeout:2"}}, nil},
		{"host file: None ignores it", ExpandedLimits, hostSmall, nil, DNSNone, false, ResolvConf{}, nil},
		{"host file: cluster domain already among the host's", ExpandedLimits, "search kubernetes.io other.example\n", nil, DNSClusterFirst, false,
			ResolvConf{[]string{clusterNS}, append(clusterSearch, "other.example"), []string{"ndots:5"}}, nil},

		// Host searches meet the limits: 3 cluster + 8 host domains.
		{"legacy limits: 11 paths keep 6", LegacyLimits, hostMany, nil, DNSClusterFirst, false,
			ResolvConf{[]string{clusterNS}, append(append([]string(nil), clusterSearch...), many[:3]...), []string{"ndots:5"}}, []string{ReasonDNSConfigForming}},
		{"expanded limits: 11 paths fit", ExpandedLimits, hostMany, nil, DNSClusterFirst, false,
			ResolvConf{[]string{clusterNS}, append(append([]string(nil), clusterSearch...), many...), []string{"ndots:5"}}, nil},
		{"legacy limits: Default keeps the first 6 host paths", LegacyLimits, hostMany, nil, DNSDefault, false,
			ResolvConf{[]string{"8.8.8.8"}, many[:6], nil}, []string{ReasonDNSConfigForming}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{ClusterDNS: ips(clusterNS), ClusterDomain: domain, Limits: tc.limits, NodeIPs: tc.nodeIPs}
			if tc.policy == "no-domain" {
				o.ClusterDomain, tc.policy = "", DNSClusterFirst
			}
			if tc.host != "" {
				o.ResolverConfig = hostFile(t, tc.host)
			}
			got, err := mustNew(t, o).GetPodDNS(context.Background(), testPod("", "testns", tc.policy, tc.hostNetwork))
			if err != nil {
				t.Fatal(err)
			}
			checkPodDNS(t, got, tc.want, tc.warnings)
		})
	}
}

// TestGetPodDNSCustom is upstream's custom dnsConfig suite, plus merging
// corner cases.
func TestGetPodDNSCustom(t *testing.T) {
	const clusterNS = "10.0.0.10"
	const domain = "kubernetes.io"
	host := hostFile(t, "nameserver 8.8.8.8\nsearch host.domain\n")
	c := mustNew(t, Options{ClusterDNS: ips(clusterNS), ClusterDomain: domain, ResolverConfig: host})
	three := "3"
	custom := &PodDNSConfig{
		Nameservers: []string{"10.0.0.11"},
		Searches:    []string{"my.domain"},
		Options:     []PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "debug"}},
	}
	clusterSearch := []string{"testns.svc." + domain, "svc." + domain, domain, "host.domain"}

	cases := []struct {
		name     string
		pod      Pod
		want     ResolvConf
		warnings []string
	}{
		{"None without dnsConfig is empty", testPod("", "testns", DNSNone, false), ResolvConf{}, nil},
		{"None with dnsConfig is the dnsConfig", withDNSConfig(testPod("", "testns", DNSNone, false), &PodDNSConfig{
			Nameservers: []string{"203.0.113.1"},
			Searches:    []string{"my.domain", "second.domain"},
			Options:     []PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "debug"}},
		}), ResolvConf{[]string{"203.0.113.1"}, []string{"my.domain", "second.domain"}, []string{"ndots:3", "debug"}}, nil},
		{"ClusterFirst with dnsConfig merges", withDNSConfig(testPod("", "testns", DNSClusterFirst, false), custom),
			ResolvConf{[]string{clusterNS, "10.0.0.11"}, append(clusterSearch, "my.domain"), []string{"ndots:3", "debug"}}, nil},
		{"ClusterFirstWithHostNet with dnsConfig merges", withDNSConfig(testPod("", "testns", DNSClusterFirstWithHostNet, true), custom),
			ResolvConf{[]string{clusterNS, "10.0.0.11"}, append(clusterSearch, "my.domain"), []string{"ndots:3", "debug"}}, nil},
		{"Default with dnsConfig merges", withDNSConfig(testPod("", "testns", DNSDefault, false), custom),
			ResolvConf{[]string{"8.8.8.8", "10.0.0.11"}, []string{"host.domain", "my.domain"}, []string{"ndots:3", "debug"}}, nil},
		{"duplicates are merged", withDNSConfig(testPod("", "testns", DNSClusterFirst, false), &PodDNSConfig{
			Nameservers: []string{clusterNS, "10.0.0.11", "10.0.0.11"},
			Searches:    []string{"host.domain", "svc." + domain, "my.domain"},
		}), ResolvConf{[]string{clusterNS, "10.0.0.11"}, append(clusterSearch, "my.domain"), []string{"ndots:5"}}, nil},
		{"too many nameservers are trimmed", withDNSConfig(testPod("", "testns", DNSClusterFirst, false), &PodDNSConfig{
			Nameservers: []string{"10.0.0.11", "10.0.0.12", "10.0.0.13"},
		}), ResolvConf{[]string{clusterNS, "10.0.0.11", "10.0.0.12"}, clusterSearch, []string{"ndots:5"}}, []string{ReasonDNSConfigForming}},
		{"a search with a trailing dot is kept as given", withDNSConfig(testPod("", "testns", DNSNone, false), &PodDNSConfig{
			Searches: []string{"my.domain."},
		}), ResolvConf{nil, []string{"my.domain."}, nil}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.GetPodDNS(context.Background(), tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			checkPodDNS(t, got, tc.want, tc.warnings)
		})
	}
	if custom.Nameservers[0] != "10.0.0.11" || len(custom.Nameservers) != 1 {
		t.Fatalf("the pod's dnsConfig was modified: %+v", custom)
	}
}

func TestGetPodDNSMissingClusterDNS(t *testing.T) {
	host := hostFile(t, "nameserver 8.8.8.8\nsearch host.domain\noptions ndots:2\n")
	cases := []struct {
		name string
		o    Options
		pod  Pod
		want ResolvConf
	}{
		{"host file", Options{ClusterDomain: "cluster.local", ResolverConfig: host},
			testPod("", "testns", DNSClusterFirst, false),
			ResolvConf{[]string{"8.8.8.8"}, []string{"host.domain"}, []string{"ndots:2"}}},
		{"no host file", Options{ClusterDomain: "cluster.local"},
			testPod("", "testns", DNSClusterFirstWithHostNet, true),
			ResolvConf{[]string{"127.0.0.1"}, []string{"."}, nil}},
		{"tenant pod", Options{ClusterDomain: "cluster.local", ResolverConfig: host},
			testPod("baz", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{"8.8.8.8"}, []string{"host.domain"}, []string{"ndots:2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mustNew(t, tc.o).GetPodDNS(context.Background(), tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			checkPodDNS(t, got, tc.want, []string{ReasonMissingClusterDNS})
			if msg := got.Warnings[0].Message; !strings.Contains(msg, `cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`) {
				t.Fatalf("message = %q", msg)
			}
		})
	}
}

func TestGetPodDNSInvalidPolicyFallsBackToClusterFirst(t *testing.T) {
	c := mustNew(t, Options{ClusterDNS: ips("10.0.0.10"), ClusterDomain: "cluster.local"})
	got, err := c.GetPodDNS(context.Background(), testPod("", "testns", "Bogus", false))
	if err != nil {
		t.Fatal(err)
	}
	checkPodDNS(t, got, ResolvConf{[]string{"10.0.0.10"}, []string{"testns.svc.cluster.local", "svc.cluster.local", "cluster.local"}, []string{"ndots:5"}},
		[]string{ReasonInvalidDNSPolicy})
}

func TestGetPodDNSTenant(t *testing.T) {
	const clusterNS = "10.0.0.10"
	host := hostFile(t, "nameserver 8.8.8.8\nsearch host.domain corp.example\noptions timeout:2\n")
	base := Options{ClusterDNS: ips(clusterNS), ClusterDomain: "cluster.local", ResolverConfig: host}
	with := func(f func(*Options)) Options { o := base; f(&o); return o }
	full := []string{"bar.baz.svc.cluster.local", "baz.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.domain", "corp.example"}
	only := []string{"bar.baz.svc.cluster.local", "baz.svc.cluster.local"}
	overrides := []NameserverOverride{
		{Tenant: "baz", Nameservers: []string{"10.9.0.10"}},
		{Tenant: "baz", Namespace: "special", Nameservers: []string{"10.9.1.10", "10.9.1.11"}},
		{Tenant: "system", Namespace: "isolated", Nameservers: []string{"10.8.0.10"}},
	}

	cases := []struct {
		name     string
		o        Options
		pod      Pod
		want     ResolvConf
		warnings []string
	}{
		{"full scope", base, testPod("baz", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, full, []string{"ndots:6"}}, nil},
		{"full scope, ClusterFirstWithHostNet", base, testPod("baz", "bar", DNSClusterFirstWithHostNet, true),
			ResolvConf{[]string{clusterNS}, full, []string{"ndots:6"}}, nil},
		{"tenant scope", with(func(o *Options) { o.Scope = ScopeTenant }), testPod("baz", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, only, []string{"ndots:6"}}, nil},
		{"tenant scope keeps the pod's own searches", with(func(o *Options) { o.Scope = ScopeTenant }),
			withDNSConfig(testPod("baz", "bar", DNSClusterFirst, false), &PodDNSConfig{Searches: []string{"mine.example"}}),
			ResolvConf{[]string{clusterNS}, append(append([]string(nil), only...), "mine.example"), []string{"ndots:6"}}, nil},
		{"ndots overridden by dnsConfig", base,
			withDNSConfig(testPod("baz", "bar", DNSClusterFirst, false), &PodDNSConfig{Options: []PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}}}),
			ResolvConf{[]string{clusterNS}, full, []string{"ndots:2", "edns0"}}, nil},
		{"system tenant keeps upstream's path and ndots", base, testPod("system", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, []string{"bar.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.domain", "corp.example"}, []string{"ndots:5"}}, nil},
		{"tenant scope does not change system pods", with(func(o *Options) { o.Scope = ScopeTenant }), testPod("", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, []string{"bar.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.domain", "corp.example"}, []string{"ndots:5"}}, nil},
		{"Default is the host's", base, testPod("baz", "bar", DNSDefault, false),
			ResolvConf{[]string{"8.8.8.8"}, []string{"host.domain", "corp.example"}, []string{"timeout:2"}}, nil},
		{"ClusterFirst on host network is the host's", base, testPod("baz", "bar", DNSClusterFirst, true),
			ResolvConf{[]string{"8.8.8.8"}, []string{"host.domain", "corp.example"}, []string{"timeout:2"}}, nil},
		{"None is empty", base, testPod("baz", "bar", DNSNone, false), ResolvConf{}, nil},
		{"legacy limits: 4 tenant and 2 host paths fit", with(func(o *Options) { o.Limits = LegacyLimits }), testPod("baz", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, full[:6], []string{"ndots:6"}}, nil},
		{"legacy limits with a long tenant path", with(func(o *Options) { o.Limits = LegacyLimits }),
			testPod(strings.Repeat("t", 63), strings.Repeat("n", 63), DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, []string{strings.Repeat("n", 63) + "." + strings.Repeat("t", 63) + ".svc.cluster.local", strings.Repeat("t", 63) + ".svc.cluster.local", "svc.cluster.local"}, []string{"ndots:6"}}, // 145+81+17+3 spaces = 246; adding cluster.local makes 260 > 256
			[]string{ReasonDNSConfigForming}},
		{"no cluster domain: full scope keeps the host's path", with(func(o *Options) { o.ClusterDomain = "" }), testPod("baz", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, []string{"host.domain", "corp.example"}, []string{"ndots:6"}}, nil},
		{"no cluster domain: tenant scope searches nothing", with(func(o *Options) { o.ClusterDomain = ""; o.Scope = ScopeTenant }), testPod("baz", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, nil, []string{"ndots:6"}}, nil},

		// Per-tenant and per-namespace nameservers.
		{"tenant override", with(func(o *Options) { o.Overrides = overrides }), testPod("baz", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{"10.9.0.10"}, full, []string{"ndots:6"}}, nil},
		{"namespace override wins over the tenant's", with(func(o *Options) { o.Overrides = overrides }), testPod("baz", "special", DNSClusterFirst, false),
			ResolvConf{[]string{"10.9.1.10", "10.9.1.11"}, []string{"special.baz.svc.cluster.local", "baz.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.domain", "corp.example"}, []string{"ndots:6"}}, nil},
		{"another tenant is not overridden", with(func(o *Options) { o.Overrides = overrides }), testPod("qux", "special", DNSClusterFirst, false),
			ResolvConf{[]string{clusterNS}, []string{"special.qux.svc.cluster.local", "qux.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.domain", "corp.example"}, []string{"ndots:6"}}, nil},
		{"system namespace override", with(func(o *Options) { o.Overrides = overrides }), testPod("", "isolated", DNSClusterFirst, false),
			ResolvConf{[]string{"10.8.0.10"}, []string{"isolated.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.domain", "corp.example"}, []string{"ndots:5"}}, nil},
		{"overrides do not touch Default pods", with(func(o *Options) { o.Overrides = overrides }), testPod("baz", "bar", DNSDefault, false),
			ResolvConf{[]string{"8.8.8.8"}, []string{"host.domain", "corp.example"}, []string{"timeout:2"}}, nil},
		{"an override stands in for missing cluster DNS", with(func(o *Options) { o.Overrides = overrides; o.ClusterDNS = nil }), testPod("baz", "bar", DNSClusterFirst, false),
			ResolvConf{[]string{"10.9.0.10"}, full, []string{"ndots:6"}}, nil},
		{"override plus dnsConfig nameservers", with(func(o *Options) { o.Overrides = overrides }),
			withDNSConfig(testPod("baz", "special", DNSClusterFirst, false), &PodDNSConfig{Nameservers: []string{"1.1.1.1", "9.9.9.9"}}),
			ResolvConf{[]string{"10.9.1.10", "10.9.1.11", "1.1.1.1"}, []string{"special.baz.svc.cluster.local", "baz.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.domain", "corp.example"}, []string{"ndots:6"}},
			[]string{ReasonDNSConfigForming}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mustNew(t, tc.o).GetPodDNS(context.Background(), tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			checkPodDNS(t, got, tc.want, tc.warnings)
		})
	}
}

func TestGetPodDNSRejectsBadNames(t *testing.T) {
	c := mustNew(t, Options{ClusterDNS: ips("10.0.0.10"), ClusterDomain: "cluster.local", ResolverConfig: hostFile(t, "nameserver 8.8.8.8\n")})
	long := strings.Repeat("a", 64)
	cases := []struct {
		name    string
		pod     Pod
		wantErr string
	}{
		{"upper-case tenant", testPod("Baz", "bar", DNSClusterFirst, false), "tenant name"},
		{"reserved tenant", testPod("all", "bar", DNSClusterFirst, false), "reserved"},
		{"tenant with a newline", testPod("baz\nnameserver 6.6.6.6", "bar", DNSClusterFirst, false), "tenant name"},
		{"tenant with a space", testPod("baz evil.com", "bar", DNSClusterFirst, false), "tenant name"},
		{"tenant with a dot", testPod("baz.evil", "bar", DNSClusterFirst, false), "tenant name"},
		{"long tenant", testPod(long, "bar", DNSClusterFirst, false), "at most 63"},
		{"empty namespace", testPod("baz", "", DNSClusterFirst, false), "namespace name must not be empty"},
		{"empty namespace, system tenant", testPod("", "", DNSClusterFirst, false), "namespace name must not be empty"},
		{"upper-case namespace", testPod("", "testNS", DNSClusterFirst, false), "namespace name"},
		{"namespace with a newline", testPod("baz", "bar\noptions debug", DNSClusterFirst, false), "namespace name"},
		{"namespace with a dot", testPod("baz", "bar.evil", DNSClusterFirst, false), "namespace name"},
		{"long namespace", testPod("baz", long, DNSClusterFirst, false), "at most 63"},
		{"bad names are errors under every policy", testPod("baz", "bar\n", DNSNone, false), "namespace name"},

		{"dnsConfig nameserver not an IP", withDNSConfig(testPod("baz", "bar", DNSNone, false), &PodDNSConfig{Nameservers: []string{"dns.example"}}), "spec.dnsConfig.nameservers[0]"},
		{"dnsConfig nameserver with a newline", withDNSConfig(testPod("baz", "bar", DNSNone, false), &PodDNSConfig{Nameservers: []string{"1.1.1.1\nsearch x"}}), "spec.dnsConfig.nameservers[0]"},
		{"dnsConfig search with a space", withDNSConfig(testPod("baz", "bar", DNSNone, false), &PodDNSConfig{Searches: []string{"ok.example", "a b"}}), "spec.dnsConfig.searches[1]"},
		{"dnsConfig empty search", withDNSConfig(testPod("baz", "bar", DNSNone, false), &PodDNSConfig{Searches: []string{""}}), "spec.dnsConfig.searches[0]"},
		{"dnsConfig empty option name", withDNSConfig(testPod("baz", "bar", DNSNone, false), &PodDNSConfig{Options: []PodDNSConfigOption{{Name: ""}}}), "spec.dnsConfig.options[0]"},
		{"dnsConfig option name with ':'", withDNSConfig(testPod("baz", "bar", DNSNone, false), &PodDNSConfig{Options: []PodDNSConfigOption{{Name: "a:b"}}}), "spec.dnsConfig.options[0]"},
		{"dnsConfig option value with a newline", withDNSConfig(testPod("baz", "bar", DNSNone, false), &PodDNSConfig{Options: []PodDNSConfigOption{{Name: "ndots", Value: ptr("1\nnameserver 6.6.6.6")}}}), "spec.dnsConfig.options[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.GetPodDNS(context.Background(), tc.pod)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("GetPodDNS = %+v, %v; want an error containing %q", got, err, tc.wantErr)
			}
			if got != nil {
				t.Fatalf("returned a result with the error: %+v", got)
			}
		})
	}
}

func TestGetPodDNSHostFileErrors(t *testing.T) {
	cases := []struct {
		name    string
		host    string
		policy  DNSPolicy
		wantErr string // "" means success
	}{
		{"nameserver without address fails every pod", "nameserver\nsearch a.example\n", DNSClusterFirst, "nameserver line has no address"},
		{"nameserver without address fails None pods too", "nameserver\n", DNSNone, "nameserver line has no address"},
		{"a host nameserver that is not an IP fails Default pods", "nameserver dns.example\n", DNSDefault, "not an IP address"},
		{"it does not reach ClusterFirst pods", "nameserver dns.example\n", DNSClusterFirst, ""},
		{"a host search that cannot be written fails ClusterFirst pods", "nameserver 8.8.8.8\nsearch a.example #b\n", DNSClusterFirst, "contains '#'"},
		{"a host option that cannot be written fails Default pods", "nameserver 8.8.8.8\noptions :5\n", DNSDefault, "empty name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustNew(t, Options{ClusterDNS: ips("10.0.0.10"), ClusterDomain: "cluster.local", ResolverConfig: hostFile(t, tc.host)})
			got, err := c.GetPodDNS(context.Background(), testPod("baz", "bar", tc.policy, false))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("GetPodDNS = %+v, %v; want an error containing %q", got, err, tc.wantErr)
			}
		})
	}
	c := mustNew(t, Options{ResolverConfig: filepath.Join(t.TempDir(), "missing")})
	if _, err := c.GetPodDNS(context.Background(), testPod("", "ns", DNSNone, false)); err == nil || !strings.Contains(err.Error(), "host resolv.conf") {
		t.Fatalf("missing host file: error = %v", err)
	}
}

func TestGetPodDNSReadsHostFileEachTime(t *testing.T) {
	path := hostFile(t, "nameserver 8.8.8.8\n")
	c := mustNew(t, Options{ResolverConfig: path})
	pod := testPod("", "ns", DNSDefault, false)
	first, err := c.GetPodDNS(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("nameserver 9.9.9.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := c.GetPodDNS(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if first.Nameservers[0] != "8.8.8.8" || second.Nameservers[0] != "9.9.9.9" {
		t.Fatalf("nameservers %q then %q, want 8.8.8.8 then 9.9.9.9", first.Nameservers, second.Nameservers)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	lookup := &memLookup{}
	cases := []struct {
		name    string
		o       Options
		wantErr string
	}{
		{"cluster domain with a space", Options{ClusterDomain: "cluster local"}, "cluster domain"},
		{"cluster domain with a newline", Options{ClusterDomain: "cluster.local\nnameserver 6.6.6.6"}, "cluster domain"},
		{"root cluster domain", Options{ClusterDomain: "."}, "cluster domain"},
		{"nil cluster DNS address", Options{ClusterDNS: []net.IP{nil}}, "cluster DNS"},
		{"unknown scope", Options{Scope: Scope(7)}, "scope"},
		{"bad limits", Options{Limits: Limits{MaxNameservers: -1}}, "positive"},
		{"override of a bad tenant", Options{Overrides: []NameserverOverride{{Tenant: "All", Nameservers: []string{"1.1.1.1"}}}}, "override 0"},
		{"override of a reserved tenant", Options{Overrides: []NameserverOverride{{Tenant: "all", Nameservers: []string{"1.1.1.1"}}}}, "reserved"},
		{"override of a bad namespace", Options{Overrides: []NameserverOverride{{Tenant: "t", Namespace: "a b", Nameservers: []string{"1.1.1.1"}}}}, "namespace"},
		{"override without servers", Options{Overrides: []NameserverOverride{{Tenant: "t"}}}, "no nameservers"},
		{"override with a name", Options{Overrides: []NameserverOverride{{Tenant: "t", Nameservers: []string{"dns.example"}}}}, "not an IP"},
		{"tenant overridden twice", Options{Overrides: []NameserverOverride{{Tenant: "t", Nameservers: []string{"1.1.1.1"}}, {Tenant: "t", Nameservers: []string{"2.2.2.2"}}}}, "twice"},
		{"namespace overridden twice", Options{Overrides: []NameserverOverride{{Tenant: "t", Namespace: "n", Nameservers: []string{"1.1.1.1"}}, {Tenant: "t", Namespace: "n", Nameservers: []string{"2.2.2.2"}}}}, "twice"},
		{"lookup without origin", Options{Services: lookup}, "both"},
		{"origin without lookup", Options{PartitionOf: func(string) (string, bool) { return "", false }}, "both"},
		{"tenant placement without lookup", Options{PartitionOfTenant: func(string) (string, bool) { return "", false }}, "only used with"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestScopeString(t *testing.T) {
	if ScopeFull.String() != "full" || ScopeTenant.String() != "tenant" {
		t.Errorf("String() = %q, %q", ScopeFull, ScopeTenant)
	}
}

func TestCheckHostResolvConf(t *testing.T) {
	cases := []struct {
		name   string
		host   string
		domain string
		limits Limits
		want   string // substring of the single warning, "" for none
	}{
		{"fine", "search a b c\n", "cluster.local", LegacyLimits, ""},
		{"too many domains with a cluster domain", "search a b c d\n", "cluster.local", LegacyLimits, "more than 3 domains"},
		{"without a cluster domain all 6 are the host's", "search a b c d e f\n", "", LegacyLimits, ""},
		{"a path too long", "search " + strings.Repeat("x", 254) + "\n", "", ExpandedLimits, "more than allowed 253 chars"},
		{"a line too long", "search " + strings.Repeat(strings.Repeat("x", 100)+" ", 3) + "\n", "", LegacyLimits, "more than allowed 256 chars"},
		{"unparsable", "nameserver\n", "", ExpandedLimits, "nameserver line has no address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustNew(t, Options{ClusterDomain: tc.domain, ResolverConfig: hostFile(t, tc.host), Limits: tc.limits})
			got := c.CheckHostResolvConf()
			if tc.want == "" {
				if got != nil {
					t.Fatalf("warnings = %v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Message, tc.want) {
				t.Fatalf("warnings = %v, want one containing %q", got, tc.want)
			}
		})
	}
	if got := mustNew(t, Options{}).CheckHostResolvConf(); got != nil {
		t.Fatalf("no host file: %v", got)
	}
}

// memLookup is an in-memory ServiceIPLookup; the fake-tp test covers the
// real client.
type memLookup struct {
	services map[string][]string // partition/tenant/namespace/name -> IPs
	err      error
	calls    []string
}

func (m *memLookup) ServiceIPs(_ context.Context, partition, tenant, namespace, name string) ([]string, bool, error) {
	key := partition + "/" + tenant + "/" + namespace + "/" + name
	m.calls = append(m.calls, key)
	if m.err != nil {
		return nil, false, m.err
	}
	ips, ok := m.services[key]
	return ips, ok, nil
}

func TestGetPodDNSTenantService(t *testing.T) {
	const clusterNS = "10.0.0.10"
	origin := map[string]string{}
	partitionOf := func(uid string) (string, bool) { tp, ok := origin[uid]; return tp, ok }
	pod := func(tenant, ns, network, tp string) Pod {
		p := testPod(tenant, ns, DNSClusterFirst, false)
		p.UID = "uid-" + tenant + "-" + ns + "-" + network + "-" + tp
		p.Network = network
		if tp != "" {
			origin[p.UID] = tp
		}
		return p
	}
	search := func(tenant, ns string) []string {
		if tenancy.IsSystem(tenant) {
			return []string{ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}
		}
		return []string{ns + "." + tenant + ".svc.cluster.local", tenant + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}
	}
	services := map[string][]string{
		"tp1/baz/kube-system/kube-dns-default":    {"10.1.0.10"},
		"tp2/qux/kube-system/kube-dns-default":    {"10.2.0.10", "fd00:2::10"},
		"tp1/baz/kube-system/kube-dns-vpc-1":      {"10.1.1.10"},
		"tp1/hdl/kube-system/kube-dns-default":    {},
		"tp1/system/kube-system/kube-dns-default": {"10.99.0.10"},
	}

	cases := []struct {
		name      string
		overrides []NameserverOverride
		noCluster bool
		lookupErr error
		pod       Pod
		want      []string // nameservers
		warnings  []string
		wantErr   string
		wantCalls []string
	}{
		{"tenant service in the pod's partition", nil, false, nil, pod("baz", "bar", "", "tp1"),
			[]string{"10.1.0.10"}, nil, "", []string{"tp1/baz/kube-system/kube-dns-default"}},
		{"dual-stack service in another partition", nil, false, nil, pod("qux", "bar", "", "tp2"),
			[]string{"10.2.0.10", "fd00:2::10"}, nil, "", []string{"tp2/qux/kube-system/kube-dns-default"}},
		{"the pod's network picks the service", nil, false, nil, pod("baz", "bar", "vpc-1", "tp1"),
			[]string{"10.1.1.10"}, nil, "", []string{"tp1/baz/kube-system/kube-dns-vpc-1"}},
		{"the same tenant name in the wrong partition finds nothing", nil, false, nil, pod("baz", "bar", "", "tp2"),
			[]string{clusterNS}, nil, "", []string{"tp2/baz/kube-system/kube-dns-default"}},
		{"no service: the cluster DNS, quietly", nil, false, nil, pod("nosvc", "bar", "", "tp1"),
			[]string{clusterNS}, nil, "", []string{"tp1/nosvc/kube-system/kube-dns-default"}},
		{"a service without cluster IP: the cluster DNS, with a warning", nil, false, nil, pod("hdl", "bar", "", "tp1"),
			[]string{clusterNS}, []string{ReasonTenantDNSService}, "", []string{"tp1/hdl/kube-system/kube-dns-default"}},
		{"unknown partition: the cluster DNS, with a warning", nil, false, nil, pod("baz", "bar", "", ""),
			[]string{clusterNS}, []string{ReasonTenantDNSService}, "", nil},
		{"a network that cannot name a service", nil, false, nil, pod("baz", "bar", "Bad_Net", "tp1"),
			[]string{clusterNS}, []string{ReasonTenantDNSService}, "", nil},
		{"lookup errors fail the pod", nil, false, errors.New("connection refused"), pod("baz", "bar", "", "tp1"),
			nil, nil, "connection refused", []string{"tp1/baz/kube-system/kube-dns-default"}},
		{"system pods never look up", nil, false, nil, pod("system", "bar", "", "tp1"),
			[]string{clusterNS}, nil, "", nil},
		{"a tenant override wins without a lookup", []NameserverOverride{{Tenant: "baz", Nameservers: []string{"10.9.0.10"}}}, false, nil, pod("baz", "bar", "", "tp1"),
			[]string{"10.9.0.10"}, nil, "", nil},
		{"the service stands in for missing cluster DNS", nil, true, nil, pod("baz", "bar", "", "tp1"),
			[]string{"10.1.0.10"}, nil, "", []string{"tp1/baz/kube-system/kube-dns-default"}},
		{"no service and no cluster DNS: Default", nil, true, nil, pod("nosvc", "bar", "", "tp1"),
			[]string{"127.0.0.1"}, []string{ReasonMissingClusterDNS}, "", []string{"tp1/nosvc/kube-system/kube-dns-default"}},
		{"an unknown pod of a known tenant is placed by its tenant", nil, false, nil, pod("qux", "bar", "", ""),
			[]string{"10.2.0.10", "fd00:2::10"}, nil, "", []string{"tp2/qux/kube-system/kube-dns-default"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lookup := &memLookup{services: services, err: tc.lookupErr}
			o := Options{ClusterDNS: ips(clusterNS), ClusterDomain: "cluster.local", Overrides: tc.overrides, Services: lookup, PartitionOf: partitionOf,
				PartitionOfTenant: func(tenant string) (string, bool) { return "tp2", tenant == "qux" }}
			if tc.noCluster {
				o.ClusterDNS = nil
			}
			got, err := mustNew(t, o).GetPodDNS(context.Background(), tc.pod)
			if !reflect.DeepEqual(lookup.calls, tc.wantCalls) {
				t.Errorf("lookups = %q, want %q", lookup.calls, tc.wantCalls)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GetPodDNS = %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tenant := tc.pod.tenant()
			want := ResolvConf{Nameservers: tc.want, Searches: search(tenant, tc.pod.Namespace), Options: []string{"ndots:6"}}
			if tenancy.IsSystem(tenant) {
				want.Options = []string{"ndots:5"}
			}
			if tc.want[0] == "127.0.0.1" {
				want = ResolvConf{Nameservers: tc.want, Searches: []string{"."}}
			}
			checkPodDNS(t, got, want, tc.warnings)
		})
	}
}

func TestDNSServiceName(t *testing.T) {
	if got, err := DNSServiceName("default"); err != nil || got != "kube-dns-default" {
		t.Fatalf("DNSServiceName(default) = %q, %v", got, err)
	}
	for _, bad := range []string{"Bad", "a.b", "a_b", strings.Repeat("n", 55), "x\ny"} {
		if _, err := DNSServiceName(bad); err == nil {
			t.Errorf("DNSServiceName(%q): no error", bad)
		}
	}
	if got := (Pod{}).NetworkName(); got != DefaultNetwork {
		t.Errorf("network of a pod without one = %q", got)
	}
}

func TestGetPodDNSConcurrent(t *testing.T) {
	c := mustNew(t, Options{
		ClusterDNS: ips("10.0.0.10"), ClusterDomain: "cluster.local",
		ResolverConfig: hostFile(t, "nameserver 8.8.8.8\nsearch host.domain\n"),
		Overrides:      []NameserverOverride{{Tenant: "baz", Nameservers: []string{"10.9.0.10"}}},
	})
	pods := []Pod{
		testPod("", "bar", DNSClusterFirst, false),
		testPod("baz", "bar", DNSClusterFirst, false),
		withDNSConfig(testPod("qux", "bar", DNSClusterFirst, false), &PodDNSConfig{Options: []PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}}}),
		testPod("qux", "bar", DNSDefault, false),
	}
	want := make([]*PodDNS, len(pods))
	for i, p := range pods {
		var err error
		if want[i], err = c.GetPodDNS(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 200 {
				k := (g + i) % len(pods)
				got, err := c.GetPodDNS(context.Background(), pods[k])
				if err == nil && !reflect.DeepEqual(got, want[k]) {
					err = errors.New("result differs from the serial one")
				}
				if err != nil {
					errs <- err
					return
				}
				// Callers may modify what they get without touching the
				// configurer's state.
				got.Nameservers[0], got.Searches[0] = "0.0.0.0", "x"
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
