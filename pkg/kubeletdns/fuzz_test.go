package kubeletdns

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// checkWritten asserts that data is well-formed resolv.conf: every line is
// "nameserver <ip>", "search <domains>" or "options <options>", with single
// spaces, and nothing else.
func checkWritten(t *testing.T, data []byte) {
	t.Helper()
	if len(data) == 0 {
		return
	}
	if data[len(data)-1] != '\n' {
		t.Fatalf("output does not end in a newline: %q", data)
	}
	for _, line := range strings.Split(string(data[:len(data)-1]), "\n") {
		keyword, rest, ok := strings.Cut(line, " ")
		if !ok || rest == "" {
			t.Fatalf("line %q has no value", line)
		}
		switch keyword {
		case "nameserver":
			if err := validateNameserver(rest); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
		case "search", "options":
			for _, tok := range strings.Split(rest, " ") {
				if tok == "" || strings.ContainsAny(tok, "\t\r\v\f#;") {
					t.Fatalf("line %q has a bad token %q", line, tok)
				}
			}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
}

func FuzzParseResolvConf(f *testing.F) {
	for _, seed := range []string{
		"",
		"nameserver 10.0.0.10\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n",
		"#comment\nnameserver\n",
		"nameserver 1.2.3.4 #comment\nsearch foo. . bar\noptions ndots:1\noptions attempts:3 ndots:2\n",
		"search foo\nsearch bar\r\n",
		"nameserver fe80::1%eth0\nnameserver dns.example\n",
		"search a..b #x\noptions :1 ;x\n",
		"\x00nameserver\x001.1.1.1\n\vsearch\fa\n",
		"options ndots:1 ndots:1:2 ndots\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, err := ParseResolvConf(bytes.NewReader(data))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
		}
		for _, list := range [][]string{rc.Nameservers, rc.Searches, rc.Options} {
			for _, tok := range list {
				if tok == "" || strings.ContainsAny(tok, " \t\n\r\v\f") {
					t.Fatalf("parsed token %q is empty or holds a blank", tok)
				}
			}
		}
		seen := map[string]bool{}
		for _, o := range rc.Options {
			if seen[optionName(o)] {
				t.Fatalf("option %q appears twice in %q", optionName(o), rc.Options)
			}
			seen[optionName(o)] = true
		}

		out, ferr := rc.Format()
		if verr := rc.Validate(); (ferr == nil) != (verr == nil) {
			t.Fatalf("Format error %v but Validate error %v", ferr, verr)
		}
		if ferr != nil {
			if out != nil || !strings.Contains(ferr.Error(), "refusing to write resolv.conf") {
				t.Fatalf("Format = %q, %v", out, ferr)
			}
			return
		}
		checkWritten(t, out)
		back, err := ParseResolvConf(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("formatted output does not parse: %v\n%s", err, out)
		}
		if !sameResolvConf(back, rc) {
			t.Fatalf("round trip changed the content:\n%+v\n%+v", rc, back)
		}
	})
}

// FuzzGetPodDNS feeds arbitrary names, dnsConfig entries and host files to
// GetPodDNS. Whatever the input, the result is valid resolv.conf within the
// limits, or an error; bad tenant or namespace names are always errors.
func FuzzGetPodDNS(f *testing.F) {
	type seed struct {
		tenant, namespace    string
		policy               uint8
		hostNetwork          bool
		nameserver, search   string
		optName, optValue    string
		host                 string
		tenantScope, legacy  bool
		clusterDNS, override bool
		serviceIP            string
	}
	for _, s := range []seed{
		{"baz", "bar", 0, false, "", "", "", "", "nameserver 8.8.8.8\nsearch host.domain\n", false, false, true, false, ""},
		{"baz", "bar", 0, false, "1.1.1.1", "my.domain", "ndots", "2", "search a b c d e f g\n", true, true, true, true, ""},
		{"system", "kube-system", 1, true, "", "", "edns0", "", "", false, false, true, false, ""},
		{"", "default", 2, false, "", "", "", "", "nameserver 8.8.8.8\noptions ndots:1\n", false, true, false, false, ""},
		{"baz", "bar", 3, false, "203.0.113.1", "x.example", "debug", "", "", false, false, false, false, ""},
		{"baz", "bar", 0, false, "", "", "", "", "", false, true, false, false, ""},
		{"qux", "bar", 0, false, "", "", "", "", "", false, false, true, false, "10.7.0.10"},
		{"qux", "bar", 0, false, "", "", "", "", "", false, false, false, false, "fd00::10"},
		{"qux", "bar", 0, false, "", "", "", "", "", false, false, true, false, "10.7.0.10\nsearch evil"},
		{"qux", "bar", 0, false, "", "", "", "", "", false, false, false, false, "None"},
		{"baz\nnameserver 6.6.6.6", "bar", 0, false, "", "", "", "", "", false, false, true, false, ""},
		{"baz", "bar options", 0, false, "", "", "", "", "", false, false, true, false, ""},
		{"all", "bar", 0, false, "", "", "", "", "", false, false, true, false, ""},
		{"Baz", "BAR", 4, false, "", "", "", "", "", false, false, true, false, ""},
		{"baz", "bar", 0, false, "1.1.1.1\n", "a b", "a:b", "1 2", "", false, false, true, false, ""},
		{"baz", "bar", 0, false, "", "", "", "", "nameserver\n", false, false, true, false, ""},
		{"baz", "bar", 2, false, "", "", "", "", "nameserver dns.example\nsearch #x\n", false, false, true, false, ""},
		{strings.Repeat("t", 63), strings.Repeat("n", 63), 0, false, "", strings.Repeat("s", 250), "", "", "search " + strings.Repeat("h ", 40), false, true, true, false, ""},
	} {
		f.Add(s.tenant, s.namespace, s.policy, s.hostNetwork, s.nameserver, s.search, s.optName, s.optValue, s.host, s.tenantScope, s.legacy, s.clusterDNS, s.override, s.serviceIP)
	}
	policies := []DNSPolicy{DNSClusterFirst, DNSClusterFirstWithHostNet, DNSDefault, DNSNone, "Bogus"}

	f.Fuzz(func(t *testing.T, tenant, namespace string, policy uint8, hostNetwork bool, nameserver, search, optName, optValue, host string, tenantScope, legacy, clusterDNS, override bool, serviceIP string) {
		o := Options{ClusterDomain: "cluster.local"}
		if clusterDNS {
			o.ClusterDNS = ips("10.0.0.10")
		}
		if tenantScope {
			o.Scope = ScopeTenant
		}
		if legacy {
			o.Limits = LegacyLimits
		}
		if serviceIP != "" {
			// Every regular tenant has a DNS service whose cluster IP is
			// serviceIP, whatever it holds.
			o.Services = serviceIPFunc(func() []string { return []string{serviceIP} })
			o.PartitionOf = func(string) (string, bool) { return "tp1", true }
		}
		if override {
			o.Overrides = []NameserverOverride{{Tenant: "baz", Nameservers: []string{"10.9.0.10"}}, {Tenant: "baz", Namespace: "bar", Nameservers: []string{"10.9.1.10", "10.9.1.11"}}}
		}
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			c.resolverConfig = "fuzz"
			c.openHost = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(host)), nil }
		}

		pod := testPod(tenant, namespace, policies[int(policy)%len(policies)], hostNetwork)
		dc := &PodDNSConfig{}
		if nameserver != "" {
			dc.Nameservers = []string{nameserver, "192.0.2.1", "192.0.2.2"}
		}
		if search != "" {
			dc.Searches = []string{search}
		}
		if optName != "" || optValue != "" {
			dc.Options = []PodDNSConfigOption{{Name: optName, Value: &optValue}}
		}
		pod.DNSConfig = dc

		got, err := c.GetPodDNS(context.Background(), pod)
		effTenant := pod.tenant()
		namesOK := tenancy.ValidateTenantName(effTenant) == nil && tenancy.ValidateLabel("namespace", namespace) == nil
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			if got != nil {
				t.Fatalf("a result with the error: %+v", got)
			}
			return
		}
		if !namesOK {
			t.Fatalf("tenant %q, namespace %q accepted", effTenant, namespace)
		}
		lim := ExpandedLimits
		if legacy {
			lim = LegacyLimits
		}
		if len(got.Nameservers) > lim.MaxNameservers || len(got.Searches) > lim.MaxSearchPaths || joinedLen(got.Searches) > lim.MaxSearchListChars {
			t.Fatalf("limits exceeded: %+v", got.ResolvConf)
		}
		for _, s := range got.Searches {
			if len(s) > lim.MaxSearchPathLength {
				t.Fatalf("search path of %d characters", len(s))
			}
		}
		out, err := got.Format()
		if err != nil {
			t.Fatalf("GetPodDNS returned what Format refuses: %v", err)
		}
		checkWritten(t, out)
		back, err := ParseResolvConf(bytes.NewReader(out))
		if err != nil || !sameResolvConf(back, canonical(got.ResolvConf)) {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, got.ResolvConf)
		}
		typ, _ := podDNSTypeOf(&pod)
		overridden := override && effTenant == "baz"
		if typ == dnsCluster && serviceIP != "" && !tenancy.IsSystem(effTenant) && !overridden {
			if validateNameserver(serviceIP) == nil {
				if len(got.Nameservers) == 0 || got.Nameservers[0] != serviceIP {
					t.Fatalf("nameservers %q do not start with the tenant's DNS service %q", got.Nameservers, serviceIP)
				}
			} else if !hasReason(got.Warnings, ReasonTenantDNSService) {
				t.Fatalf("service IP %q unusable but no warning: %+v", serviceIP, got)
			}
		}
		if typ == dnsCluster && !hasReason(got.Warnings, ReasonMissingClusterDNS) {
			first := namespace + ".svc.cluster.local"
			if !tenancy.IsSystem(effTenant) {
				first = namespace + "." + effTenant + ".svc.cluster.local"
			}
			if len(got.Searches) == 0 || got.Searches[0] != first {
				t.Fatalf("searches %q do not start with %q", got.Searches, first)
			}
		}
	})
}

func hasReason(ws []Warning, reason string) bool {
	for _, w := range ws {
		if w.Reason == reason {
			return true
		}
	}
	return false
}

// serviceIPFunc is a ServiceIPLookup that finds every service, with the
// cluster IPs it returns.
type serviceIPFunc func() []string

func (f serviceIPFunc) ServiceIPs(context.Context, string, string, string, string) ([]string, bool, error) {
	return f(), true, nil
}
