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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Scope is how far a tenant pod's search path reaches.
type Scope int

const (
	// ScopeFull searches the pod's namespace, its tenant, every tenant and
	// the cluster zone, then the host's domains:
	// "<ns>.<tenant>.svc.<zone> <tenant>.svc.<zone> svc.<zone> <zone> <host...>".
	ScopeFull Scope = iota
	// ScopeTenant searches only inside the pod's tenant:
	// "<ns>.<tenant>.svc.<zone> <tenant>.svc.<zone>". It is soft isolation:
	// a fully qualified name still reaches other tenants.
	ScopeTenant
)

// String returns "full" or "tenant".
func (s Scope) String() string {
	switch s {
	case ScopeFull:
		return "full"
	case ScopeTenant:
		return "tenant"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

const (
	// systemNdots is upstream kubelet's ndots for ClusterFirst pods.
	systemNdots = "ndots:5"
	// tenantNdots is one more than upstream because tenant names have one
	// more label: <svc>.<ns>.<tenant>.svc.<zone>.
	tenantNdots = "ndots:6"
)

// NameserverOverride sends the ClusterFirst pods of one tenant, or of one
// namespace of a tenant, to their own DNS servers instead of the cluster's
// (a namespace- or tenant-specific DNS server). A namespace override wins
// over a tenant override.
type NameserverOverride struct {
	Tenant string
	// Namespace is empty for an override of the whole tenant.
	Namespace   string
	Nameservers []string
}

// PartitionOfFunc tells which tenant partition a pod came from, by UID; ok
// is false when the pod is unknown. pkg/tporigin's tracker provides it
// (Tracker.OriginOf); an Arktos kubelet's client manager knows the same.
type PartitionOfFunc func(uid string) (partition string, ok bool)

// Options configure a Configurer. The zero value is upstream kubelet with no
// cluster DNS, no cluster domain and no host resolv.conf.
type Options struct {
	// ClusterDNS are the cluster DNS servers (kubelet --cluster-dns).
	ClusterDNS []net.IP
	// ClusterDomain is the cluster zone (kubelet --cluster-domain), such as
	// "cluster.local". Empty means no cluster search domains.
	ClusterDomain string
	// ResolverConfig is the host resolv.conf path (kubelet --resolv-conf).
	// Empty means none: Default pods then get a local nameserver and the
	// search "." (upstream's behaviour).
	ResolverConfig string
	// NodeIPs pick the local nameserver when ResolverConfig is empty:
	// "::1" for an IPv6 node IP, "127.0.0.1" otherwise.
	NodeIPs []net.IP

	// Overrides are per-tenant and per-namespace nameservers.
	Overrides []NameserverOverride
	// Scope is the search scope of tenant pods. System-tenant pods always
	// get upstream's search path.
	Scope Scope
	// Limits are the resolver limits; the zero value means ExpandedLimits.
	// Use LegacyLimits for older Arktos nodes.
	Limits Limits

	// Services and PartitionOf, when both set, make a tenant pod use its
	// tenant's DNS service: DNSServiceNamespace/DNSServiceName(network) of
	// the pod's tenant, in the pod's partition.
	Services    ServiceIPLookup
	PartitionOf PartitionOfFunc
	// PartitionOfTenant, optional, places a pod whose UID PartitionOf does
	// not know yet by its tenant: a regular tenant lives in exactly one TP
	// (tporigin's Tracker.PartitionOfTenant).
	PartitionOfTenant func(tenant string) (partition string, ok bool)

	// Logger, optional, gets the warnings of every pod at debug level; nil
	// discards them.
	Logger corelog.Logger
}

type nsKey struct{ tenant, namespace string }

// Configurer builds the resolv.conf of pods. It is immutable after New and
// safe for concurrent use.
type Configurer struct {
	clusterDNS     []string
	domain         string
	resolverConfig string
	localServers   []string
	byTenant       map[string][]string
	byNamespace    map[nsKey][]string
	scope          Scope
	limits         Limits
	services       ServiceIPLookup
	partitionOf    PartitionOfFunc
	partitionOfTen func(string) (string, bool)
	log            corelog.Logger

	// openHost opens the host resolv.conf; tests replace it.
	openHost func() (io.ReadCloser, error)
}

// New validates o and returns a Configurer.
func New(o Options) (*Configurer, error) {
	c := &Configurer{
		domain:         o.ClusterDomain,
		resolverConfig: o.ResolverConfig,
		scope:          o.Scope,
		limits:         o.Limits,
		services:       o.Services,
		partitionOf:    o.PartitionOf,
		partitionOfTen: o.PartitionOfTenant,
		log:            corelog.OrDiscard(o.Logger),
	}
	if c.limits == (Limits{}) {
		c.limits = ExpandedLimits
	}
	if err := c.limits.validate(); err != nil {
		return nil, err
	}
	if c.scope != ScopeFull && c.scope != ScopeTenant {
		return nil, fmt.Errorf("unknown DNS search scope %v", c.scope)
	}
	if c.domain != "" {
		if err := validateSearch(c.domain); err != nil || c.domain == "." {
			return nil, fmt.Errorf("cluster domain %q is not a domain name", clip(c.domain))
		}
	}
	for _, ip := range o.ClusterDNS {
		if ip == nil {
			return nil, fmt.Errorf("cluster DNS address is empty")
		}
		c.clusterDNS = append(c.clusterDNS, ip.String())
	}
	for _, ip := range o.NodeIPs {
		if ip.To4() == nil && ip.To16() != nil {
			c.localServers = append(c.localServers, "::1")
		} else {
			c.localServers = append(c.localServers, "127.0.0.1")
		}
	}
	if len(c.localServers) == 0 {
		c.localServers = []string{"127.0.0.1"}
	}
	if (o.Services == nil) != (o.PartitionOf == nil) {
		return nil, fmt.Errorf("the per-tenant DNS service lookup needs both Services and PartitionOf")
	}
	if o.PartitionOfTenant != nil && o.Services == nil {
		return nil, fmt.Errorf("PartitionOfTenant is only used with Services and PartitionOf")
	}
	if err := c.setOverrides(o.Overrides); err != nil {
		return nil, err
	}
	if c.resolverConfig != "" {
		path := c.resolverConfig
		c.openHost = func() (io.ReadCloser, error) { return os.Open(path) }
	}
	return c, nil
}

func (c *Configurer) setOverrides(overrides []NameserverOverride) error {
	for i, ov := range overrides {
		if err := ov.Validate(); err != nil {
			return fmt.Errorf("nameserver override %d (%s): %w", i, overrideName(ov), err)
		}
		servers := append([]string(nil), ov.Nameservers...)
		if ov.Namespace == "" {
			if c.byTenant == nil {
				c.byTenant = make(map[string][]string)
			}
			if _, dup := c.byTenant[ov.Tenant]; dup {
				return fmt.Errorf("nameserver override %d: tenant %q is overridden twice", i, ov.Tenant)
			}
			c.byTenant[ov.Tenant] = servers
			continue
		}
		if c.byNamespace == nil {
			c.byNamespace = make(map[nsKey][]string)
		}
		k := nsKey{ov.Tenant, ov.Namespace}
		if _, dup := c.byNamespace[k]; dup {
			return fmt.Errorf("nameserver override %d: namespace %s is overridden twice", i, overrideName(ov))
		}
		c.byNamespace[k] = servers
	}
	return nil
}

// Validate checks what makes an override usable, wherever it comes from (New
// runs it; a caller that parses overrides from flags or a file may run it
// first): a valid tenant, a valid namespace when one is set, and at least one
// nameserver, each an IP address.
func (ov NameserverOverride) Validate() error {
	if err := tenancy.ValidateTenantName(ov.Tenant); err != nil {
		return err
	}
	if ov.Namespace != "" {
		if err := tenancy.ValidateLabel("namespace", ov.Namespace); err != nil {
			return err
		}
	}
	if len(ov.Nameservers) == 0 {
		return errors.New("no nameservers")
	}
	for _, ns := range ov.Nameservers {
		if err := validateNameserver(ns); err != nil {
			return err
		}
	}
	return nil
}

func overrideName(ov NameserverOverride) string {
	if ov.Namespace == "" {
		return "tenant " + ov.Tenant
	}
	return ov.Tenant + "/" + ov.Namespace
}

// PodDNS is a pod's resolver configuration and the warnings met while
// forming it. The caller records each warning as a Warning event on the pod.
type PodDNS struct {
	ResolvConf
	Warnings []Warning
}

// GetPodDNS returns the pod's resolv.conf content (PodDNS.Format writes the
// file). The result always passes ResolvConf.Validate and fits the
// configured Limits. A kubelet that hands the runtime a DNSConfig instead of
// a file calls GetPodDNSConfig. ctx bounds the per-tenant DNS service
// lookup; nothing else waits.
//
// A tenant or namespace that is not a DNS-1123 label, a dnsConfig entry that
// cannot be written to resolv.conf, an unreadable host resolv.conf or a host
// entry that would reach the pod's file but cannot be written to it, or a
// failed per-tenant DNS service lookup is an error.
//
// Nameservers of a ClusterFirst pod come from, in order: its namespace's
// override, its tenant's override, its tenant's DNS service in its partition
// (regular tenants, when Services is set), the cluster DNS. With none of
// them the pod falls back to Default with a MissingClusterDNS warning.
func (c *Configurer) GetPodDNS(ctx context.Context, pod Pod) (*PodDNS, error) {
	tenant := pod.tenant()
	if err := validatePod(&pod, tenant); err != nil {
		return nil, fmt.Errorf("pod %q: %w", podRef(&pod, tenant), err)
	}
	host, err := c.hostResolvConf()
	if err != nil {
		return nil, err
	}

	var warnings []Warning
	typ, err := podDNSTypeOf(&pod)
	if err != nil {
		// The API server rejects unknown policies; upstream kubelet falls
		// back to ClusterFirst if one gets through anyway.
		warnings = append(warnings, Warning{ReasonInvalidDNSPolicy, err.Error() + "; falling back to ClusterFirst"})
		typ = dnsCluster
	}

	var rc ResolvConf
	switch typ {
	case dnsNone:
		// None starts from nothing; only dnsConfig fills it.
	case dnsCluster:
		var ok bool
		var ws []Warning
		if rc, ok, ws, err = c.clusterFirst(ctx, &pod, tenant, host); err != nil {
			return nil, fmt.Errorf("pod %q: %w", podRef(&pod, tenant), err)
		}
		warnings = append(warnings, ws...)
		if ok {
			break
		}
		fallthrough
	case dnsHost:
		rc = c.hostDefault(host)
	}

	if dc := pod.DNSConfig; dc != nil {
		rc = appendPodDNSConfig(rc, dc)
	}
	if rc, err = c.fit(rc, &warnings); err != nil {
		return nil, fmt.Errorf("pod %q: %w", podRef(&pod, tenant), err)
	}
	for _, w := range warnings {
		c.log.Debugf("Pod DNS warning: pod %q, reason %s: %s", podRef(&pod, tenant), w.Reason, w.Message)
	}
	return &PodDNS{ResolvConf: rc, Warnings: warnings}, nil
}

// validatePod checks the names that become search domains and the pod's
// dnsConfig.
func validatePod(pod *Pod, tenant string) error {
	if err := tenancy.ValidateTenantName(tenant); err != nil {
		return err
	}
	if err := tenancy.ValidateLabel("namespace", pod.Namespace); err != nil {
		return err
	}
	if dc := pod.DNSConfig; dc != nil {
		return validatePodDNSConfig(dc)
	}
	return nil
}

// clusterFirst is the ClusterFirst resolv.conf: the pod's TP's cluster DNS
// server as the only nameserver (it forwards what it cannot answer), and
// the search list of the pod's tenant. ok is false, with a warning, when
// there is no cluster DNS server: the caller falls back to Default.
func (c *Configurer) clusterFirst(ctx context.Context, pod *Pod, tenant string, host ResolvConf) (rc ResolvConf, ok bool, warnings []Warning, err error) {
	servers, warnings, err := c.clusterNameservers(ctx, pod, tenant)
	if err != nil {
		return rc, false, nil, err
	}
	if len(servers) == 0 {
		warnings = append(warnings, Warning{ReasonMissingClusterDNS, fmt.Sprintf(
			"pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
			podRef(pod, tenant), DNSClusterFirst, DNSDefault)})
		return rc, false, warnings, nil
	}
	rc.Nameservers = servers
	if tenancy.IsSystem(tenant) {
		rc.Searches = clusterSearches(host.Searches, pod.Namespace, c.domain)
		rc.Options = []string{systemNdots}
	} else {
		rc.Searches = tenantSearches(host.Searches, pod.Namespace, tenant, c.domain, c.scope)
		rc.Options = []string{tenantNdots}
	}
	return rc, true, warnings, nil
}

// hostDefault is the Default policy's resolv.conf: the host's.
func (c *Configurer) hostDefault(host ResolvConf) ResolvConf {
	rc := host
	if c.openHost == nil {
		// No host file: a local nameserver and the root search, which
		// effectively disables search (upstream's --resolv-conf="").
		rc.Nameservers = append([]string(nil), c.localServers...)
		rc.Searches = []string{"."}
	}
	return rc
}

// fit cuts rc to the resolver's limits, adding a warning for each cut, and
// validates the result.
func (c *Configurer) fit(rc ResolvConf, warnings *[]Warning) (ResolvConf, error) {
	var w *Warning
	if rc.Nameservers, w = fitNameservers(rc.Nameservers, c.limits); w != nil {
		*warnings = append(*warnings, *w)
	}
	if rc.Searches, w = fitSearches(rc.Searches, c.limits); w != nil {
		*warnings = append(*warnings, *w)
	}
	return rc, rc.Validate()
}

// hostResolvConf reads the host file, or returns an empty ResolvConf when
// there is none.
func (c *Configurer) hostResolvConf() (ResolvConf, error) {
	if c.openHost == nil {
		return ResolvConf{}, nil
	}
	f, err := c.openHost()
	if err != nil {
		return ResolvConf{}, fmt.Errorf("host resolv.conf: %w", err)
	}
	defer f.Close()
	rc, err := ParseResolvConf(f)
	if err != nil {
		return ResolvConf{}, fmt.Errorf("host resolv.conf %s: %w", c.resolverConfig, err)
	}
	return rc, nil
}

// CheckHostResolvConf reports what in the host resolv.conf will be trimmed
// from every ClusterFirst pod's file, as upstream kubelet's
// CheckLimitsForResolvConf does at start. It returns nil when all is well or
// when there is no host file.
func (c *Configurer) CheckHostResolvConf() []Warning {
	const reason = "CheckLimitsForResolvConf"
	if c.openHost == nil {
		return nil
	}
	host, err := c.hostResolvConf()
	if err != nil {
		return []Warning{{reason, err.Error()}}
	}
	limit := c.limits.MaxSearchPaths
	if c.domain != "" {
		limit -= 3 // upstream's count: <ns>.svc.<zone> svc.<zone> <zone>
	}
	if len(host.Searches) > limit {
		return []Warning{{reason, fmt.Sprintf("Resolv.conf file %q contains search line consisting of more than %d domains!", c.resolverConfig, limit)}}
	}
	for _, s := range host.Searches {
		if len(s) > c.limits.MaxSearchPathLength {
			return []Warning{{reason, fmt.Sprintf("Resolv.conf file %q contains a search path which length is more than allowed %d chars!", c.resolverConfig, c.limits.MaxSearchPathLength)}}
		}
	}
	if joinedLen(host.Searches) > c.limits.MaxSearchListChars {
		return []Warning{{reason, fmt.Sprintf("Resolv.conf file %q contains search line which length is more than allowed %d chars!", c.resolverConfig, c.limits.MaxSearchListChars)}}
	}
	return nil
}

// clusterNameservers picks a ClusterFirst pod's nameservers: its
// namespace's override, its tenant's override, its tenant's DNS service (not
// for the system tenant), then the cluster DNS. An empty result means none
// is known.
func (c *Configurer) clusterNameservers(ctx context.Context, pod *Pod, tenant string) ([]string, []Warning, error) {
	if s, ok := c.byNamespace[nsKey{tenant, pod.Namespace}]; ok {
		return append([]string(nil), s...), nil, nil
	}
	if s, ok := c.byTenant[tenant]; ok {
		return append([]string(nil), s...), nil, nil
	}
	if c.services != nil && !tenancy.IsSystem(tenant) {
		servers, w, err := c.tenantServiceNameservers(ctx, pod, tenant)
		if err != nil || len(servers) > 0 {
			return servers, nil, err
		}
		if w != nil {
			return append([]string(nil), c.clusterDNS...), []Warning{*w}, nil
		}
	}
	return append([]string(nil), c.clusterDNS...), nil, nil
}

// tenantServiceNameservers reads the cluster IPs of the tenant's DNS service
// in the pod's partition. No result and no warning means the tenant has no
// DNS service of its own, which is normal; a warning means one was expected
// but cannot be used.
func (c *Configurer) tenantServiceNameservers(ctx context.Context, pod *Pod, tenant string) ([]string, *Warning, error) {
	network := pod.NetworkName()
	name, err := DNSServiceName(network)
	if err != nil {
		return nil, &Warning{ReasonTenantDNSService, err.Error() + "; using the cluster DNS"}, nil
	}
	tp, ok := c.partitionOf(pod.UID)
	if !ok && c.partitionOfTen != nil {
		tp, ok = c.partitionOfTen(tenant)
	}
	if !ok {
		return nil, &Warning{ReasonTenantDNSService, fmt.Sprintf("tenant partition of pod UID %q is unknown, so its tenant's DNS service %s/%s cannot be read; using the cluster DNS", pod.UID, DNSServiceNamespace, name)}, nil
	}
	ips, found, err := c.services.ServiceIPs(ctx, tp, tenant, DNSServiceNamespace, name)
	if err != nil {
		// Not a fallback: resolv.conf is written once per sandbox, so a
		// transient error must fail this attempt rather than pin the pod to
		// the wrong server. The kubelet retries.
		return nil, nil, fmt.Errorf("reading DNS service %s/%s/%s in partition %s: %w", tenant, DNSServiceNamespace, name, tp, err)
	}
	if !found {
		return nil, nil, nil
	}
	var servers []string
	for _, ip := range ips {
		if isIP(ip) {
			servers = append(servers, ip)
		}
	}
	if len(servers) == 0 {
		return nil, &Warning{ReasonTenantDNSService, fmt.Sprintf("DNS service %s/%s/%s in partition %s has no cluster IP; using the cluster DNS", tenant, DNSServiceNamespace, name, tp)}, nil
	}
	return servers, nil, nil
}

type podDNSType int

const (
	dnsCluster podDNSType = iota
	dnsHost
	dnsNone
)

// podDNSTypeOf maps dnsPolicy to where the pod's resolver settings start.
// ClusterFirst on the host network means Default: the pod shares the node's
// network, so it gets the node's resolver unless it asks for
// ClusterFirstWithHostNet.
func podDNSTypeOf(pod *Pod) (podDNSType, error) {
	switch pod.DNSPolicy {
	case DNSNone:
		return dnsNone, nil
	case DNSClusterFirstWithHostNet:
		return dnsCluster, nil
	case DNSClusterFirst:
		if !pod.HostNetwork {
			return dnsCluster, nil
		}
		return dnsHost, nil
	case DNSDefault:
		return dnsHost, nil
	}
	return dnsCluster, fmt.Errorf("invalid DNSPolicy=%q", clip(string(pod.DNSPolicy)))
}

// clusterSearches is upstream's ClusterFirst search path:
// "<ns>.svc.<zone> svc.<zone> <zone>" then the host's, without duplicates.
// Without a cluster domain it is the host's search path.
func clusterSearches(host []string, namespace, domain string) []string {
	if domain == "" {
		return append([]string(nil), host...)
	}
	return dedupe([]string{namespace + ".svc." + domain, "svc." + domain, domain}, host)
}

// tenantSearches is the search path of a tenant pod. Without a cluster
// domain there are no cluster names to search: the full scope keeps the
// host's path and the tenant scope is empty.
func tenantSearches(host []string, namespace, tenant, domain string, scope Scope) []string {
	tenantZone := tenant + ".svc." + domain
	if scope == ScopeTenant {
		if domain == "" {
			return []string{}
		}
		return []string{namespace + "." + tenantZone, tenantZone}
	}
	if domain == "" {
		return append([]string(nil), host...)
	}
	return dedupe([]string{namespace + "." + tenantZone, tenantZone, "svc." + domain, domain}, host)
}

// dedupe returns a followed by b without repeats, first occurrence kept, in
// a new slice. Short lists (the usual case) are scanned; long ones, which
// only a huge host file can produce, use a set.
func dedupe(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	if len(a)+len(b) > 32 {
		seen := make(map[string]struct{}, len(a)+len(b))
		for _, list := range [2][]string{a, b} {
			for _, s := range list {
				if _, dup := seen[s]; !dup {
					seen[s] = struct{}{}
					out = append(out, s)
				}
			}
		}
		return out
	}
	for _, list := range [2][]string{a, b} {
	next:
		for _, s := range list {
			for _, prev := range out {
				if prev == s {
					continue next
				}
			}
			out = append(out, s)
		}
	}
	return out
}

// appendPodDNSConfig merges the pod's dnsConfig: nameservers and searches
// are appended without duplicates, options override by name.
func appendPodDNSConfig(rc ResolvConf, dc *PodDNSConfig) ResolvConf {
	rc.Nameservers = dedupe(rc.Nameservers, dc.Nameservers)
	rc.Searches = dedupe(rc.Searches, dc.Searches)
	rc.Options = mergePodOptions(rc.Options, dc.Options)
	return rc
}

// mergePodOptions applies the pod's options over existing by name; an option
// with no value (or an empty one) is written as its bare name.
func mergePodOptions(existing []string, opts []PodDNSConfigOption) []string {
	out := append(make([]string, 0, len(existing)+len(opts)), existing...)
	for _, o := range opts {
		tok := o.Name
		if o.Value != nil && *o.Value != "" {
			tok += ":" + *o.Value
		}
		out = setOption(out, o.Name, tok)
	}
	return out
}

// validatePodDNSConfig rejects dnsConfig entries that cannot be written to
// resolv.conf. The API server validates these too; this keeps a bad object
// from any source out of the file.
func validatePodDNSConfig(dc *PodDNSConfig) error {
	for i, ns := range dc.Nameservers {
		if err := validateNameserver(ns); err != nil {
			return fmt.Errorf("spec.dnsConfig.nameservers[%d]: %w", i, err)
		}
	}
	for i, s := range dc.Searches {
		if err := validateSearch(s); err != nil {
			return fmt.Errorf("spec.dnsConfig.searches[%d]: %w", i, err)
		}
	}
	for i, o := range dc.Options {
		tok := o.Name
		if strings.Contains(o.Name, ":") {
			return fmt.Errorf("spec.dnsConfig.options[%d]: option name %q must not contain ':'", i, clip(o.Name))
		}
		if o.Value != nil && *o.Value != "" {
			tok += ":" + *o.Value
		}
		if err := validateOption(tok); err != nil {
			return fmt.Errorf("spec.dnsConfig.options[%d]: %w", i, err)
		}
	}
	return nil
}

// podRef names a pod in messages as tenant/namespace/name, clipped; callers
// quote it where the names may not have been validated yet.
func podRef(pod *Pod, tenant string) string {
	return clip(tenant) + "/" + clip(pod.Namespace) + "/" + clip(pod.Name)
}
