/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubeletdns

import (
	"fmt"
	"strings"
)

// Limits are the resolver limits a pod's resolv.conf is fitted into.
type Limits struct {
	// MaxNameservers is how many nameserver lines glibc reads (MAXNS).
	MaxNameservers int
	// MaxSearchPaths is how many search domains are kept.
	MaxSearchPaths int
	// MaxSearchListChars bounds the search line: the domains joined by
	// single spaces.
	MaxSearchListChars int
	// MaxSearchPathLength drops any single search domain longer than this;
	// some resolvers (glibc 2.28) abort on longer ones.
	MaxSearchPathLength int
}

var (
	// ExpandedLimits are upstream kubelet's limits since ExpandedDNSConfig
	// (GA in Kubernetes 1.28): 3 nameservers, 32 search domains, 2048
	// characters.
	ExpandedLimits = Limits{MaxNameservers: 3, MaxSearchPaths: 32, MaxSearchListChars: 2048, MaxSearchPathLength: 253}
	// LegacyLimits are the limits of older kubelets, and so of older Arktos
	// nodes: 3 nameservers, 6 search domains, 256 characters.
	LegacyLimits = Limits{MaxNameservers: 3, MaxSearchPaths: 6, MaxSearchListChars: 256, MaxSearchPathLength: 253}
)

// Warning reasons, as upstream kubelet uses them for events.
const (
	// ReasonDNSConfigForming: a limit was exceeded and entries were dropped.
	ReasonDNSConfigForming = "DNSConfigForming"
	// ReasonMissingClusterDNS: a ClusterFirst pod has no nameserver to use
	// and falls back to the Default policy.
	ReasonMissingClusterDNS = "MissingClusterDNS"
	// ReasonInvalidDNSPolicy: the pod's dnsPolicy is unknown; ClusterFirst
	// is used.
	ReasonInvalidDNSPolicy = "InvalidDNSPolicy"
	// ReasonTenantDNSService: the per-tenant DNS service could not be used
	// and the cluster DNS servers are used instead.
	ReasonTenantDNSService = "TenantDNSService"
)

// Warning is something the caller should record as a Warning event on the
// pod, as upstream kubelet does with its recorder: the configurer records
// nothing itself.
type Warning struct {
	Reason  string
	Message string
}

func (w Warning) String() string { return w.Reason + ": " + w.Message }

// fitNameservers keeps the first l.MaxNameservers servers. When it drops
// some, the warning names the applied nameserver line.
func fitNameservers(servers []string, l Limits) ([]string, *Warning) {
	if len(servers) <= l.MaxNameservers {
		return servers, nil
	}
	servers = servers[:l.MaxNameservers]
	return servers, &Warning{
		Reason:  ReasonDNSConfigForming,
		Message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(servers, " "),
	}
}

// fitSearches applies the search limits in upstream's order: keep the first
// MaxSearchPaths domains, drop any domain longer than MaxSearchPathLength,
// then drop domains from the end until the line fits MaxSearchListChars. When
// it drops anything, the warning names the applied search line. The input
// slice is not modified.
func fitSearches(searches []string, l Limits) ([]string, *Warning) {
	exceeded := false
	if len(searches) > l.MaxSearchPaths {
		searches = searches[:l.MaxSearchPaths]
		exceeded = true
	}
	// Copy only when a domain is dropped, so the common case allocates nothing.
	var kept []string
	dropped := false
	for i, s := range searches {
		switch {
		case len(s) > l.MaxSearchPathLength:
			if !dropped {
				kept = append(make([]string, 0, len(searches)-1), searches[:i]...)
				dropped = true
			}
		case dropped:
			kept = append(kept, s)
		}
	}
	if dropped {
		searches = kept
		exceeded = true
	}
	lineLen := joinedLen(searches)
	for lineLen > l.MaxSearchListChars && len(searches) > 0 {
		last := searches[len(searches)-1]
		lineLen -= len(last)
		if len(searches) > 1 {
			lineLen-- // the space before it
		}
		searches = searches[:len(searches)-1]
		exceeded = true
	}
	if !exceeded {
		return searches, nil
	}
	return searches, &Warning{
		Reason:  ReasonDNSConfigForming,
		Message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(searches, " "),
	}
}

func joinedLen(ss []string) int {
	if len(ss) == 0 {
		return 0
	}
	n := len(ss) - 1
	for _, s := range ss {
		n += len(s)
	}
	return n
}

func (l Limits) validate() error {
	if l.MaxNameservers < 1 || l.MaxSearchPaths < 1 || l.MaxSearchListChars < 1 || l.MaxSearchPathLength < 1 {
		return fmt.Errorf("DNS limits must all be positive: %+v", l)
	}
	return nil
}
