package upstream

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

func FuzzTTLOffsets(f *testing.F) {
	m := upstreamtest.Msg(0, []dns.RR{upstreamtest.RR("a.cluster.local. 30 IN A 10.0.0.1")}, []dns.RR{upstreamtest.RR(fmt.Sprintf(upstreamtest.SOA, 5))})
	m.Question = []dns.Question{{Name: "a.cluster.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}}
	m.SetEdns0(1232, true)
	m.Compress = true
	b, _ := m.Pack()
	f.Add(b)
	f.Add([]byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0})
	f.Fuzz(func(t *testing.T, b []byte) {
		qEnd, ttls, err := ttlOffsets(b)
		if err != nil {
			return
		}
		if qEnd <= 12 || qEnd > len(b) {
			t.Fatalf("question end %d of %d", qEnd, len(b))
		}
		for _, off := range ttls {
			if off < 12 || off+4 > len(b) {
				t.Fatalf("ttl offset %d of %d", off, len(b))
			}
		}
	})
}
