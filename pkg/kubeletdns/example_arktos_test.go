package kubeletdns_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
)

// The types below are hand-written stand-ins for what an Arktos 6685f14
// kubelet has at its DNS call site, with the same shapes; they are not
// Arktos's code.

// runtimeDNSConfig stands in for the CRI's runtimeapi.DNSConfig
// (k8s.io/cri-api/pkg/apis/runtime/v1alpha2, api.pb.go:358).
type runtimeDNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// arktosUID stands in for types.UID, a string type.
type arktosUID string

// arktosPod stands in for Arktos's *v1.Pod: ObjectMeta has Tenant, and the
// DNS fields of the spec are upstream's.
type arktosPod struct {
	arktosObjectMeta
	Spec arktosPodSpec
}

type arktosObjectMeta struct {
	Tenant, Namespace, Name string
	UID                     arktosUID
	Labels                  map[string]string
}

type arktosPodSpec struct {
	DNSPolicy   string // v1.DNSPolicy, a string type
	HostNetwork bool
	DNSConfig   *arktosPodDNSConfig
}

type arktosPodDNSConfig struct {
	Nameservers []string
	Searches    []string
	Options     []arktosPodDNSConfigOption
}

// arktosPodDNSConfigOption has v1.PodDNSConfigOption's fields, so it
// converts to kubeletdns.PodDNSConfigOption directly.
type arktosPodDNSConfigOption struct {
	Name  string
	Value *string
}

// runtimeHelper stands in for pkg/kubelet/container.RuntimeHelper's
// GetPodDNS (helpers.go:50), which kuberuntime_sandbox.go:132 calls to fill
// the sandbox's DnsConfig.
type runtimeHelper interface {
	GetPodDNS(pod *arktosPod) (*runtimeDNSConfig, error)
}

// eventRecorder stands in for the kubelet's record.EventRecorder.
type eventRecorder struct{ events []string }

func (r *eventRecorder) Event(pod *arktosPod, eventType, reason, message string) {
	r.events = append(r.events, fmt.Sprintf("%s %s/%s/%s %s: %s", eventType, pod.Tenant, pod.Namespace, pod.Name, reason, message))
}

// arktosService and serviceLister stand in for the kubelet's per-TP service
// listers (kubelet.go:441-458, one []corelisters.ServiceLister entry per
// TP, each listing every tenant).
type arktosService struct {
	Tenant, Namespace, Name string
	ClusterIP               string
}

type serviceLister []arktosService

// clientManager stands in for kubeclientmanager's pod UID -> TP index map,
// without PickClient's fallback to TP 0: an unknown pod is unknown.
type clientManager map[arktosUID]int

// arktosKubelet is the Kubelet with the one change a tpkit-using tree makes:
// GetPodDNS (kubelet_network.go:85) asks tpkit's configurer, which it
// creates next to its dnsConfigurer (kubelet.go:527).
type arktosKubelet struct {
	tenantDNS *kubeletdns.Configurer
	recorder  *eventRecorder
}

// GetPodDNS is Kubelet.GetPodDNS with its new body.
func (kl *arktosKubelet) GetPodDNS(pod *arktosPod) (*runtimeDNSConfig, error) {
	cfg, warnings, err := kl.tenantDNS.GetPodDNSConfig(context.TODO(), podOf(pod))
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		kl.recorder.Event(pod, "Warning", w.Reason, w.Message)
	}
	return &runtimeDNSConfig{Servers: cfg.Servers, Searches: cfg.Searches, Options: cfg.Options}, nil
}

// podOf fills the core's pod from Arktos's, tenant included.
func podOf(pod *arktosPod) kubeletdns.Pod {
	p := kubeletdns.Pod{
		Tenant:      pod.Tenant,
		Namespace:   pod.Namespace,
		Name:        pod.Name,
		UID:         string(pod.UID),
		DNSPolicy:   kubeletdns.DNSPolicy(pod.Spec.DNSPolicy),
		HostNetwork: pod.Spec.HostNetwork,
		Network:     pod.Labels[kubeletdns.NetworkLabel],
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		p.DNSConfig = &kubeletdns.PodDNSConfig{Nameservers: dc.Nameservers, Searches: dc.Searches}
		for _, o := range dc.Options {
			p.DNSConfig.Options = append(p.DNSConfig.Options, kubeletdns.PodDNSConfigOption(o))
		}
	}
	return p
}

// listerLookup is a kubeletdns.ServiceIPLookup over the per-TP listers: the
// partition is the TP index as a string.
type listerLookup []serviceLister

func (l listerLookup) ServiceIPs(_ context.Context, partition, tenant, namespace, name string) ([]string, bool, error) {
	i, err := strconv.Atoi(partition)
	if err != nil || i < 0 || i >= len(l) {
		return nil, false, fmt.Errorf("no service lister for TP %q", partition)
	}
	for _, svc := range l[i] {
		if svc.Tenant == tenant && svc.Namespace == namespace && svc.Name == name {
			if svc.ClusterIP == "" || svc.ClusterIP == "None" {
				return nil, true, nil
			}
			return []string{svc.ClusterIP}, true, nil
		}
	}
	return nil, false, nil
}

// Example_arktosKubelet plugs the configurer into a stand-in of Arktos's
// kubelet DNS call site: the runtime asks Kubelet.GetPodDNS for a pod's
// DNSConfig, and the pod's tenant picks the search path, ndots and, from the
// pod's own TP, the tenant's kube-dns-<network> service.
func Example_arktosKubelet() {
	// Two TPs; tenant baz lives in TP 1 and has its own DNS service there.
	listers := listerLookup{
		{{Tenant: "system", Namespace: "kube-system", Name: "kube-dns", ClusterIP: "10.0.0.10"}},
		{{Tenant: "baz", Namespace: "kube-system", Name: "kube-dns-default", ClusterIP: "10.1.0.10"}},
	}
	origins := clientManager{"uid-sys": 0, "uid-baz": 1, "uid-qux": 1}

	tenantDNS, err := kubeletdns.New(kubeletdns.Options{
		ClusterDNS:    []net.IP{net.ParseIP("10.0.0.10")}, // --cluster-dns
		ClusterDomain: "cluster.local",                    // --cluster-domain
		Limits:        kubeletdns.LegacyLimits,            // Arktos's kubelet: 3 nameservers, 6 searches, 256 characters
		Services:      listers,
		PartitionOf: func(uid string) (string, bool) {
			tp, ok := origins[arktosUID(uid)]
			return strconv.Itoa(tp), ok
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	recorder := &eventRecorder{}
	var helper runtimeHelper = &arktosKubelet{tenantDNS: tenantDNS, recorder: recorder}

	pods := []*arktosPod{
		{arktosObjectMeta{Tenant: "system", Namespace: "kube-system", Name: "coredns", UID: "uid-sys"}, arktosPodSpec{DNSPolicy: "ClusterFirst"}},
		{arktosObjectMeta{Tenant: "baz", Namespace: "bar", Name: "web", UID: "uid-baz"}, arktosPodSpec{DNSPolicy: "ClusterFirst"}},
		{arktosObjectMeta{Tenant: "qux", Namespace: "bar", Name: "api", UID: "uid-qux"}, arktosPodSpec{DNSPolicy: "ClusterFirst",
			DNSConfig: &arktosPodDNSConfig{Nameservers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, Options: []arktosPodDNSConfigOption{{Name: "edns0"}}}}},
		{arktosObjectMeta{Tenant: "baz", Namespace: "Bad_NS", Name: "x", UID: "uid-bad"}, arktosPodSpec{DNSPolicy: "ClusterFirst"}},
	}
	for _, pod := range pods {
		// kuberuntime_sandbox.go: dnsConfig, err := m.runtimeHelper.GetPodDNS(pod)
		cfg, err := helper.GetPodDNS(pod)
		if err != nil {
			fmt.Printf("%s/%s: error: %v\n", pod.Tenant, pod.Name, err)
			continue
		}
		fmt.Printf("%s/%s:\n  servers  %s\n  searches %s\n  options  %s\n", pod.Tenant, pod.Name,
			strings.Join(cfg.Servers, " "), strings.Join(cfg.Searches, " "), strings.Join(cfg.Options, " "))
	}
	for _, e := range recorder.events {
		fmt.Println(e)
	}
	// Output:
	// system/coredns:
	//   servers  10.0.0.10
	//   searches kube-system.svc.cluster.local svc.cluster.local cluster.local
	//   options  ndots:5
	// baz/web:
	//   servers  10.1.0.10
	//   searches bar.baz.svc.cluster.local baz.svc.cluster.local svc.cluster.local cluster.local
	//   options  ndots:6
	// qux/api:
	//   servers  10.0.0.10 192.0.2.1 192.0.2.2
	//   searches bar.qux.svc.cluster.local qux.svc.cluster.local svc.cluster.local cluster.local
	//   options  ndots:6 edns0
	// baz/x: error: pod "baz/Bad_NS/x": namespace name "Bad_NS" is not a DNS-1123 label: use only lowercase letters, digits and '-', and start and end with a letter or digit
	// Warning qux/bar/api DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.10 192.0.2.1 192.0.2.2
}
