package faketp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// Service cluster IP ranges. Each TP is an API server of its own, with its
// own --service-cluster-ip-range, as in Arktos's scale-out: the recorded
// TPs served 10.0.0.0/16 and 10.1.0.0/16 (samples 34, 84), and
// hack/arktos-lab.sh starts tp1, tp2, ... on 10.96.0.0/16, 10.97.0.0/16,
// .... By default TP k (counting from 0, in the order of Options.Names, or
// tp1..tpN) gets 10.(96+k).0.0/16, as the lab does: the first
// 16 TPs share Kubernetes's default 10.96.0.0/12 without overlapping, and
// tp1 keeps 10.96.0.0/16, whose 10.96.0.10 seeds use for kube-dns.
const (
	// defaultServiceBase is the second octet of TP 0's default range.
	defaultServiceBase = 96
	// MaxDefaultServiceCIDRs is how many TPs the default rule serves
	// (10.96.0.0/16 .. 10.255.0.0/16); more need explicit ranges.
	MaxDefaultServiceCIDRs = 256 - defaultServiceBase
	// minServicePrefix and maxServicePrefix bound a range's size: at most
	// 2^20 addresses, kube-apiserver's limit, and at least 16, so that
	// some remain after the reserved first ten.
	minServicePrefix = 12
	maxServicePrefix = 28
	// firstAllocated is the offset of the first address handed out: the
	// ten before it are left to fixed addresses (the kubernetes service's
	// .1, kube-dns's .10 by convention), so seeds can use them.
	firstAllocated = 11
)

// DefaultServiceCIDR is the service cluster IP range TP i (from 0) gets
// when none is given: 10.(96+i).0.0/16.
func DefaultServiceCIDR(i int) (netip.Prefix, error) {
	if i < 0 || i >= MaxDefaultServiceCIDRs {
		return netip.Prefix{}, fmt.Errorf("no default service range for TP number %d: the defaults, 10.96.0.0/16 to 10.255.0.0/16, serve %d TPs; give the ranges", i+1, MaxDefaultServiceCIDRs)
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(defaultServiceBase + i), 0, 0}), 16), nil
}

// ParseServiceCIDRs parses a comma-separated list of service cluster IP
// ranges (fake-tp --service-cidr), checking each (CheckServiceCIDR). An
// empty string is no ranges.
func ParseServiceCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range cliflag.SplitList(s) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR", f)
		}
		if err := CheckServiceCIDR(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// CheckServiceCIDR checks that p can be a TP's service range: IPv4 (the
// Arktos API server is single-stack), a network address, /12 to /28.
func CheckServiceCIDR(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return errors.New("invalid service range")
	case !p.Addr().Is4():
		return fmt.Errorf("%s is not an IPv4 range: fake-tp's service ranges are IPv4, as Arktos's single-stack TPs", p)
	case p.Masked() != p:
		return fmt.Errorf("%s has host bits set (the network is %s)", p, p.Masked())
	case p.Bits() < minServicePrefix || p.Bits() > maxServicePrefix:
		return fmt.Errorf("%s: the prefix length must be from /%d (2^20 addresses, kube-apiserver's limit) to /%d", p, minServicePrefix, maxServicePrefix)
	}
	return nil
}

// ServiceCIDRsOfTPs returns the service cluster IP range of each TP, in
// the order of PartitionNames: o.ServiceCIDRs, one per TP, or the default
// rule (DefaultServiceCIDR) when there are none. Ranges must not overlap.
func (o Options) ServiceCIDRsOfTPs() ([]netip.Prefix, error) {
	names, err := o.PartitionNames()
	if err != nil {
		return nil, err
	}
	if len(o.ServiceCIDRs) == 0 {
		out := make([]netip.Prefix, len(names))
		for i := range names {
			if out[i], err = DefaultServiceCIDR(i); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if len(o.ServiceCIDRs) != len(names) {
		return nil, fmt.Errorf("ranges given: %d, TPs: %d (%s); give one range per TP, in their order", len(o.ServiceCIDRs), len(names), strings.Join(names, ", "))
	}
	for i, p := range o.ServiceCIDRs {
		if err := CheckServiceCIDR(p); err != nil {
			return nil, fmt.Errorf("TP %s: %w", names[i], err)
		}
		for j, q := range o.ServiceCIDRs[:i] {
			if p.Overlaps(q) {
				return nil, fmt.Errorf("the ranges of TPs %s (%s) and %s (%s) overlap: each TP allocates its own", names[j], q, names[i], p)
			}
		}
	}
	return append([]netip.Prefix(nil), o.ServiceCIDRs...), nil
}

// serviceIPs hands out the cluster IPs of one TP's services from its range,
// as kube-apiserver does, but in order from the 11th address (kube-apiserver
// picks at random) so that tests can predict them. An address a stored
// service holds is never handed out: the ones in use are read from the
// store the first time, and again whenever a pass over the range finds none
// free, which is when a deleted service's address comes back.
type serviceIPs struct {
	prefix      netip.Prefix
	base        uint32
	first, last uint32 // the offsets handed out

	mu   sync.Mutex
	next uint32
	// used are the offsets known to be taken, nil until read from the
	// store; since those taken after the last reading, which may not be
	// stored yet (a seed stores its objects together at the end).
	used, since map[uint32]bool
}

func newServiceIPs(p netip.Prefix) *serviceIPs {
	b := p.Addr().As4()
	size := uint32(1) << (32 - p.Bits())
	// The last address is the broadcast address, which kube-apiserver
	// never hands out either.
	return &serviceIPs{prefix: p, base: binary.BigEndian.Uint32(b[:]), first: firstAllocated, last: size - 2, next: firstAllocated}
}

// offset is ip's offset in the range, if it is in it.
func (a *serviceIPs) offset(ip string) (uint32, bool) {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !a.prefix.Contains(addr) {
		return 0, false
	}
	b := addr.As4()
	return binary.BigEndian.Uint32(b[:]) - a.base, true
}

func (a *serviceIPs) addr(off uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], a.base+off)
	return netip.AddrFrom4(b).String()
}

// load reads the addresses in use (inUse) into used, keeping those taken
// since the last reading. Callers hold mu.
func (a *serviceIPs) load(inUse func() []string) {
	used := map[uint32]bool{}
	for off := range a.since {
		used[off] = true
	}
	for _, ip := range inUse() {
		if off, ok := a.offset(ip); ok {
			used[off] = true
		}
	}
	a.used, a.since = used, map[uint32]bool{}
}

// reserve marks ip, a service's own choice, as taken. Addresses outside
// the range are not refused (kube-apiserver would): seeds and tests give
// services fixed addresses that need not match the TP's range.
func (a *serviceIPs) reserve(ip string, inUse func() []string) {
	off, ok := a.offset(ip)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == nil {
		a.load(inUse)
	}
	a.used[off], a.since[off] = true, true
}

// allocate hands out the next free address. Passes over the range alternate
// with readings of the store: the second reading forgets everything but
// the store, so the range is only full when stored services fill it.
func (a *serviceIPs) allocate(inUse func() []string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == nil {
		a.load(inUse)
	}
	for pass := 0; pass < 3; pass++ {
		if pass > 0 {
			a.load(inUse)
		}
		for n := a.first; n <= a.last; n++ {
			off := a.next
			if a.next++; a.next > a.last {
				a.next = a.first
			}
			if !a.used[off] {
				a.used[off], a.since[off] = true, true
				return a.addr(off), nil
			}
		}
	}
	return "", fmt.Errorf("the service range %s is full", a.prefix)
}

// forget drops what is known of the addresses in use, to read them again
// from a store that was reopened (a restart from a data file).
func (a *serviceIPs) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.used, a.since = nil, nil
}

// clusterIPsInUse lists the cluster IPs of the TP's stored services.
func (tp *TP) clusterIPsInUse() []string {
	st := tp.st()
	if st == nil {
		return nil
	}
	objs, _, _ := st.List("services", store.ListOptions{})
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		if ip := o.Fields.Get("spec.clusterIP"); ip != "" {
			out = append(out, ip)
		}
	}
	return out
}
