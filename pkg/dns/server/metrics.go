package server

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the request metrics of a Handler.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// forwardsRejected counts queries answered SERVFAIL (TCP) or without
	// the upstream's records (ExternalName targets) because of the
	// forwarding bounds; forwardsDropped the UDP queries dropped for them,
	// by reason.
	forwardsRejected prometheus.Counter
	forwardsDropped  [numDropReasons]prometheus.Counter
	// unknownPodWaits counts the queries from an unknown pod that waited
	// for the index to learn it: [0] in vain, [1] learned.
	unknownPodWaits [2]prometheus.Counter

	// cache of resolved counters: [zone slot][type slot][rcode slot].
	counters [maxZoneSlots][len(typeSlots) + 1][maxRcode + 2]atomic.Pointer[prometheus.Counter]
	hist     [maxZoneSlots]atomic.Pointer[prometheus.Observer]
}

// dropReason is why a query for a name outside the zones was dropped.
type dropReason uint8

const (
	// dropLimit: MaxConcurrentForwards queries were waiting upstream.
	dropLimit dropReason = iota
	// dropSource: half of them were, and the source had spent its budget.
	dropSource
	// dropSlowPath: the UDP slow path held as many packets as it may.
	dropSlowPath
	numDropReasons
)

var dropReasonNames = [numDropReasons]string{dropLimit: "limit", dropSource: "source", dropSlowPath: "slow-path"}

const (
	maxZoneSlots = 17
	maxRcode     = 23
)

var typeSlots = [...]uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypePTR, dns.TypeTXT, dns.TypeSOA,
	dns.TypeNS, dns.TypeCNAME, dns.TypeMX, dns.TypeANY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeHTTPS}

// NewMetrics registers tpkit_dns_requests_total{zone,type,rcode},
// tpkit_dns_request_duration_seconds{zone},
// tpkit_dns_forward_rejected_total,
// tpkit_dns_forward_dropped_total{reason} and
// tpkit_dns_unknown_pod_waits_total{outcome} on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_dns_requests_total",
			Help: "DNS requests answered, by zone (\".\" for forwarded names), query type and response code.",
		}, []string{"zone", "type", "rcode"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tpkit_dns_request_duration_seconds",
			Help:    "Time to answer a DNS request, by zone (\".\" for forwarded names).",
			Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"zone"}),
		forwardsRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_dns_forward_rejected_total",
			Help: "Queries for names outside the zones answered SERVFAIL at once (TCP; ExternalName targets: the CNAME alone) because of --max-concurrent-forwards.",
		}),
	}
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tpkit_dns_forward_dropped_total",
		Help: "UDP queries for names outside the zones dropped unanswered: reason limit (--max-concurrent-forwards waiting upstream), source (half of them waiting and the source over --forwards-per-source), slow-path (the UDP slow path full).",
	}, []string{"reason"})
	for r, name := range dropReasonNames {
		m.forwardsDropped[r] = dropped.WithLabelValues(name)
	}
	waits := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tpkit_dns_unknown_pod_waits_total",
		Help: "Queries from an address in --pod-cidr that no TP has reported yet, for a system name several TPs have, that waited (--unknown-pod-wait) for the index to learn the pod: outcome learned, or timeout (answered from --system-partition, TTL 0).",
	}, []string{"outcome"})
	m.unknownPodWaits[0], m.unknownPodWaits[1] = waits.WithLabelValues("timeout"), waits.WithLabelValues("learned")
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.forwardsRejected, dropped, waits)
	}
	return m
}

// unknownPodWait counts one wait for an unknown pod; a nil m counts nothing.
func (m *Metrics) unknownPodWait(learned bool) {
	if m == nil {
		return
	}
	i := 0
	if learned {
		i = 1
	}
	m.unknownPodWaits[i].Inc()
}

func typeSlot(t uint16) (int, string) {
	for i, s := range typeSlots {
		if s == t {
			return i, dns.TypeToString[t]
		}
	}
	return len(typeSlots), "other"
}

// observe counts one request. slot is 0 for forwarded names and 1+zone
// index otherwise; counters are resolved once and cached.
func (m *Metrics) observe(slot int, zone string, qtype uint16, rcode int, d time.Duration) {
	if slot >= maxZoneSlots {
		slot = maxZoneSlots - 1
	}
	ti, tname := typeSlot(qtype)
	ri := rcode
	if ri < 0 || ri > maxRcode {
		ri = maxRcode + 1
	}
	p := &m.counters[slot][ti][ri]
	c := p.Load()
	if c == nil {
		rname := dns.RcodeToString[rcode]
		if rname == "" {
			rname = strconv.Itoa(rcode)
		}
		cc := m.requests.WithLabelValues(zone, tname, rname)
		c = &cc
		p.Store(c)
	}
	(*c).Inc()
	hp := &m.hist[slot]
	o := hp.Load()
	if o == nil {
		oo := m.duration.WithLabelValues(zone)
		o = &oo
		hp.Store(o)
	}
	(*o).Observe(d.Seconds())
}
