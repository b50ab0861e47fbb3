package kubednsconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// The ConfigMap's keys, as kube-dns reads them.
const (
	KeyStubDomains         = "stubDomains"
	KeyUpstreamNameservers = "upstreamNameservers"
	KeyFederations         = "federations"
)

// MaxUpstreams is kube-dns's limit on upstreamNameservers.
const MaxUpstreams = 3

// StubDomain sends the names under Domain to Servers.
type StubDomain struct {
	// Domain is fully qualified and lowercase ("acme.local.").
	Domain string
	// Servers are host:port, in the ConfigMap's order.
	Servers []string
}

// Config is what one TP's ConfigMap asks for.
type Config struct {
	// StubDomains are sorted by domain.
	StubDomains []StubDomain
	// Upstreams replace the default upstreams when not empty (host:port).
	Upstreams []string
}

// IsZero reports whether c changes nothing: the default forwarder serves.
func (c Config) IsZero() bool { return len(c.StubDomains) == 0 && len(c.Upstreams) == 0 }

// String is c for logs.
func (c Config) String() string {
	var b strings.Builder
	for _, s := range c.StubDomains {
		fmt.Fprintf(&b, "%s->%v ", s.Domain, s.Servers)
	}
	if len(c.Upstreams) > 0 {
		fmt.Fprintf(&b, ".->%v", c.Upstreams)
	}
	return strings.TrimSpace(b.String())
}

// Parse reads a kube-dns ConfigMap's data. An error names the key and what
// is wrong with it.
func Parse(data map[string]string) (Config, error) {
	var c Config
	if v, ok := data[KeyFederations]; ok && strings.TrimSpace(v) != "" {
		return Config{}, errors.New("federations: not supported by partition-dns (a federation's names, <svc>.<ns>.<federation>.svc.<zone>, are the shape of an Arktos tenant's names)")
	}
	if v := strings.TrimSpace(data[KeyStubDomains]); v != "" {
		var m map[string][]string
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return Config{}, fmt.Errorf("stubDomains: not a JSON map of a domain to a list of nameservers: %v", err)
		}
		for d, servers := range m {
			domain, err := domainOf(d)
			if err != nil {
				return Config{}, fmt.Errorf("stubDomains: %w", err)
			}
			if len(servers) == 0 {
				return Config{}, fmt.Errorf("stubDomains: %q has no nameserver", d)
			}
			s := StubDomain{Domain: domain}
			for _, ns := range servers {
				hp, err := Nameserver(ns)
				if err != nil {
					return Config{}, fmt.Errorf("stubDomains: %q: %w", d, err)
				}
				s.Servers = append(s.Servers, hp)
			}
			c.StubDomains = append(c.StubDomains, s)
		}
		sort.Slice(c.StubDomains, func(i, j int) bool { return c.StubDomains[i].Domain < c.StubDomains[j].Domain })
		for i := 1; i < len(c.StubDomains); i++ {
			if c.StubDomains[i].Domain == c.StubDomains[i-1].Domain {
				return Config{}, fmt.Errorf("stubDomains: %q is given twice", c.StubDomains[i].Domain)
			}
		}
	}
	if v := strings.TrimSpace(data[KeyUpstreamNameservers]); v != "" {
		var list []string
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			return Config{}, fmt.Errorf("upstreamNameservers: not a JSON list of nameservers: %v", err)
		}
		if len(list) > MaxUpstreams {
			return Config{}, fmt.Errorf("upstreamNameservers: %d nameservers, at most %d", len(list), MaxUpstreams)
		}
		for _, ns := range list {
			hp, err := Nameserver(ns)
			if err != nil {
				return Config{}, fmt.Errorf("upstreamNameservers: %w", err)
			}
			c.Upstreams = append(c.Upstreams, hp)
		}
	}
	return c, nil
}

// domainOf checks a stub domain and returns it fully qualified and
// lowercase. The root and the cluster's own names are the forwarder's
// business elsewhere: "." is upstreamNameservers' key.
func domainOf(d string) (string, error) {
	t := strings.TrimSpace(d)
	if t == "" || t == "." {
		return "", fmt.Errorf("%q is not a domain (upstreamNameservers gives the servers of every other name)", d)
	}
	if _, ok := dns.IsDomainName(t); !ok || strings.Contains(t, "..") || strings.ContainsAny(t, " \\") {
		return "", fmt.Errorf("%q is not a domain name", d)
	}
	return dns.CanonicalName(t), nil
}

// Nameserver checks a nameserver, an IP address with an optional port, and
// returns it as host:port (port 53 when it names none).
func Nameserver(s string) (string, error) {
	t := strings.TrimSpace(s)
	if a, err := netip.ParseAddr(t); err == nil && a.Zone() == "" {
		return net.JoinHostPort(a.Unmap().String(), "53"), nil
	}
	if ap, err := netip.ParseAddrPort(t); err == nil && ap.Addr().Zone() == "" && ap.Port() != 0 {
		return net.JoinHostPort(ap.Addr().Unmap().String(), strconv.Itoa(int(ap.Port()))), nil
	}
	return "", fmt.Errorf("nameserver %q: not an IP address with an optional port (10.0.0.9, 10.0.0.9:5353, [fd00::9]:53)", s)
}
