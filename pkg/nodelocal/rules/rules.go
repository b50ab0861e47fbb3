package rules

import (
	"fmt"
	"net/netip"
	"strconv"
)

// CommentPrefix starts the comment of every rule this package owns.
const CommentPrefix = "tpkit-nodelocal:"

// Tables and chains the rule set uses.
const (
	TableRaw    = "raw"
	TableFilter = "filter"

	ChainPrerouting = "PREROUTING"
	ChainInput      = "INPUT"
	ChainOutput     = "OUTPUT"
)

// Rule is one iptables rule of the set.
type Rule struct {
	// Family is 4 or 6: which of iptables and ip6tables holds the rule.
	Family int
	// Table and Chain say where the rule lives.
	Table, Chain string
	// Match is the rule's match arguments, without the comment.
	Match []string
	// Target is the -j target.
	Target string
	// Comment identifies the rule; it starts with CommentPrefix.
	Comment string
	// IP is the local IP the rule is for.
	IP netip.Addr
	// Switch is true for the NOTRACK rules of a switched (non-link-local)
	// IP: the rules the HA watcher removes to fail over to kube-dns.
	Switch bool
}

// Spec is the rule's full specification as iptables arguments.
func (r Rule) Spec() []string {
	spec := make([]string, 0, len(r.Match)+6)
	spec = append(spec, r.Match...)
	spec = append(spec, "-m", "comment", "--comment", r.Comment, "-j", r.Target)
	return spec
}

// String renders the rule as an iptables command line, for logs.
func (r Rule) String() string {
	s := fmt.Sprintf("-t %s -A %s", r.Table, r.Chain)
	for _, a := range r.Spec() {
		if a == r.Comment {
			a = strconv.Quote(a)
		}
		s += " " + a
	}
	return s
}

// Config is what the rule set is built from.
type Config struct {
	// LocalIPs are the IPs the cache listens on.
	LocalIPs []netip.Addr
	// DNSPort is the port the cache listens on (53).
	DNSPort int
	// HealthPort is the cache's health port; 0 means no health rules.
	HealthPort int
}

// IsSwitched reports whether ip's NOTRACK rules are switch rules: every IP
// except link-local ones (169.254.0.0/16, fe80::/10), which only ever reach
// the local cache.
func IsSwitched(ip netip.Addr) bool {
	return !ip.IsLinkLocalUnicast()
}

// Build returns the whole rule set for c, in a stable order.
func Build(c Config) []Rule {
	var out []Rule
	dport := strconv.Itoa(c.DNSPort)
	for _, ip := range c.LocalIPs {
		fam := 4
		if ip.Is6() && !ip.Is4In6() {
			fam = 6
		}
		ip = ip.Unmap()
		s := ip.String()
		sw := IsSwitched(ip)
		for _, proto := range []string{"udp", "tcp"} {
			add := func(table, chain, dir, port, target, what string, isSwitch bool) {
				flag, pflag := "-d", "--dport"
				if dir == "src" {
					flag, pflag = "-s", "--sport"
				}
				out = append(out, Rule{
					Family: fam, Table: table, Chain: chain,
					Match:   []string{"-p", proto, flag, s, pflag, port},
					Target:  target,
					Comment: fmt.Sprintf("%s %s %s %s/%s", CommentPrefix, what, s, proto, port),
					IP:      ip,
					Switch:  isSwitch,
				})
			}
			add(TableRaw, ChainPrerouting, "dst", dport, "NOTRACK", "notrack dns query to", sw)
			add(TableFilter, ChainInput, "dst", dport, "ACCEPT", "accept dns query to", false)
			add(TableRaw, ChainOutput, "src", dport, "NOTRACK", "notrack dns answer from", sw)
			add(TableFilter, ChainOutput, "src", dport, "ACCEPT", "accept dns answer from", false)
			add(TableRaw, ChainOutput, "dst", dport, "NOTRACK", "notrack local dns query to", sw)
			if proto == "tcp" && c.HealthPort > 0 {
				hport := strconv.Itoa(c.HealthPort)
				add(TableRaw, ChainOutput, "dst", hport, "NOTRACK", "notrack health check to", false)
				add(TableRaw, ChainOutput, "src", hport, "NOTRACK", "notrack health answer from", false)
			}
		}
	}
	return out
}

// WithoutSwitch returns rules minus the switch rules: the set the watcher
// keeps while traffic goes to the kube-dns endpoints.
func WithoutSwitch(rules []Rule) []Rule {
	out := make([]Rule, 0, len(rules))
	for _, r := range rules {
		if !r.Switch {
			out = append(out, r)
		}
	}
	return out
}

// SwitchOnly returns the switch rules of rules.
func SwitchOnly(rules []Rule) []Rule {
	var out []Rule
	for _, r := range rules {
		if r.Switch {
			out = append(out, r)
		}
	}
	return out
}

// Families returns the IP families rules use, 4 always included: what a
// Sync or Teardown must clean to remove the whole set.
func Families(rules []Rule) []int {
	for _, r := range rules {
		if r.Family == 6 {
			return []int{4, 6}
		}
	}
	return []int{4}
}
