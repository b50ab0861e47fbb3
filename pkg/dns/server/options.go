package server

import (
	"context"
	"net/netip"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

// PodMode is how pod names are answered, as in CoreDNS's "pods" option.
type PodMode uint8

const (
	// PodsDisabled answers no pod names (NXDOMAIN).
	PodsDisabled PodMode = iota
	// PodsInsecure answers any well-formed a-b-c-d name in an existing
	// namespace with the address it spells.
	PodsInsecure
	// PodsVerified answers only addresses of pods in that namespace.
	PodsVerified
)

// ParsePodMode reads "disabled", "insecure" or "verified".
func ParsePodMode(s string) (PodMode, bool) {
	switch s {
	case "disabled":
		return PodsDisabled, true
	case "insecure":
		return PodsInsecure, true
	case "verified":
		return PodsVerified, true
	}
	return 0, false
}

// DNSSchemaVersion is the TXT answer for dns-version.<zone>, the version of
// the Kubernetes DNS specification that is implemented.
const DNSSchemaVersion = "1.1.0"

const (
	dnsVersionTTL = 28800
	maxSOATTL     = 300
	// defaultEDNS is the UDP payload size advertised in answers, and the
	// largest UDP answer sent whatever the client asks (DNS Flag Day 2020):
	// larger answers are truncated and the client retries over TCP, so a
	// small query cannot draw a large answer at a spoofed address.
	defaultEDNS = 1232
)

// DefaultMaxConcurrentForwards is Options.MaxConcurrentForwards's default.
const DefaultMaxConcurrentForwards = 1000

// DefaultForwardsPerSource is Options.ForwardsPerSource's default: queries
// a second for names outside the zones that one source may have forwarded
// while the forwarding pool is contended.
const DefaultForwardsPerSource = 20

// DefaultAllowRecursion are the sources allowed recursion by default: the
// addresses pods and nodes have (loopback, RFC 1918, RFC 6598 shared space,
// link-local, IPv6 unique local).
var DefaultAllowRecursion = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fc00::/7"),
}

// Forwarder resolves names outside the cluster zones.
type Forwarder interface {
	Resolve(ctx context.Context, req *dns.Msg) (*dns.Msg, error)
}

// PartitionForwarder is a Forwarder whose upstreams depend on the asking
// pod's partition (each TP's kube-dns ConfigMap, pkg/dns/kubednsconfig).
// The handler calls ResolveFor with the querier's partition: a pod's TP,
// or SystemPartition for a querier that is no known pod.
type PartitionForwarder interface {
	Forwarder
	ResolveFor(ctx context.Context, tp int, req *dns.Msg) (*dns.Msg, error)
}

// Snapshots gives the current index snapshot; *index.Builder is one.
type Snapshots interface {
	Current() *index.Snapshot
}

// Options configure a Handler.
type Options struct {
	// Zones are the zones answered from the index, forward and reverse
	// ("cluster.local", "in-addr.arpa", "10.in-addr.arpa", "ip6.arpa").
	// In a reverse zone, a name that is no service or endpoint address
	// goes to the Forwarder, as CoreDNS's "fallthrough in-addr.arpa
	// ip6.arpa" does (once synced: before, it is SERVFAIL).
	Zones []string
	// TTL of every answer; the SOA's TTL is min(TTL, 300).
	TTL uint32
	// Pods is the pod-name mode.
	Pods PodMode
	// Isolation makes names of one regular tenant NXDOMAIN for pods of
	// another; system-tenant names stay visible to all.
	Isolation bool
	// AllowUnknownSources lets queriers that are not a known pod see every
	// tenant when Isolation is on.
	AllowUnknownSources bool
	// SystemPartition answers system-tenant names for queriers that are
	// not a known pod.
	SystemPartition int
	// NSAddrs are the server's own addresses (CoreDNS's local IPs).
	// ns.dns.<zone> answers the cluster IPs of the services whose ready
	// endpoints hold one of them (the kube-dns service in front of the
	// server), in the querier's partition first; these addresses
	// themselves when no such service is known.
	NSAddrs []netip.Addr
	// Forwarder resolves other names; nil answers them REFUSED.
	Forwarder Forwarder
	// ForwardTimeout bounds one forwarded query; default 5s.
	ForwardTimeout time.Duration
	// MaxConcurrentForwards bounds the queries waiting on an upstream at
	// once (DefaultMaxConcurrentForwards when zero, as CoreDNS's forward
	// plugin), so that a flood of names outside the zones cannot take the
	// memory and goroutines the cluster zones need. A UDP query over the
	// bound is dropped (no answer, as BIND and Unbound do over their
	// limits: a client that asks again at once would otherwise spend the
	// server's time in a loop); over TCP it gets SERVFAIL.
	MaxConcurrentForwards int
	// ForwardsPerSource is the budget of each source address, in queries a
	// second, once half of MaxConcurrentForwards are waiting upstream
	// (DefaultForwardsPerSource when zero): then a source over its budget
	// is dropped too, so that one client's flood cannot fill the pool and
	// a client asking a few names a second keeps them.
	ForwardsPerSource float64
	// ForwardBurstPerSource is the burst of that budget; 2 ×
	// ForwardsPerSource when zero.
	ForwardBurstPerSource int
	// AllowRecursion are the sources whose queries for names outside the
	// zones are forwarded (DefaultAllowRecursion when nil); others get
	// REFUSED. Names in the zones are answered to anyone.
	AllowRecursion []netip.Prefix
	// TrustedForwarders are the sources (node-local caches) whose EDNS
	// Client Subnet option names the querier: from them, a query's /32 or
	// /128 ECS address is the querier's identity (its pod, partition and
	// tenant), and the answer says in its own ECS option whether it
	// depended on that identity (scope /32 or /128) or not (/0). An ECS
	// option from any other source is ignored for identity. Nil trusts no
	// one.
	TrustedForwarders []netip.Prefix
	// PodCIDRs are the pods' address ranges. A querier inside them that
	// the index does not know is a pod whose address its TP has not
	// reported yet (the kubelet reports it after the pod's containers
	// start): its question for a system name several TPs have waits, up to
	// UnknownPodWait, for the index to learn which TP the pod is in, rather
	// than get the system partition's answer. Other unknown queriers (on a
	// node's address: host-network pods, untrusted caches) never wait.
	PodCIDRs []netip.Prefix
	// UnknownPodWait bounds that wait; zero (or no PodCIDRs) waits never.
	// A waiting UDP query holds one of the slow path's places.
	UnknownPodWait time.Duration
	// UDPBatch, above 1, is how many packets one read (recvmmsg) and one
	// write (sendmmsg) move on each UDP socket, with one goroutine per
	// socket (Linux; elsewhere, and at 0 or 1, each socket has GOMAXPROCS
	// readers that move a packet per call).
	UDPBatch int
	// Metrics, when set, counts requests.
	Metrics *Metrics
}
