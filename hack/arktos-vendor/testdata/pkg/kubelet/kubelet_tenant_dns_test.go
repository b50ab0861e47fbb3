package kubelet

import (
	"net"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
)

func TestTenantPodDNS(t *testing.T) {
	var listers tpServiceLookup
	for tp, ip := range []string{"", "10.0.1.10"} {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if ip != "" {
			idx.Add(&v1.Service{ObjectMeta: metav1.ObjectMeta{Tenant: "acme", Namespace: "kube-system", Name: "kube-dns-default"}, Spec: v1.ServiceSpec{ClusterIP: ip}})
		}
		_ = tp
		listers = append(listers, corelisters.NewServiceLister(idx))
	}
	c, err := kubeletdns.New(kubeletdns.Options{ClusterDNS: []net.IP{net.ParseIP("10.0.0.10")}, ClusterDomain: "cluster.local",
		Limits: kubeletdns.LegacyLimits, Services: listers,
		PartitionOf: func(uid string) (string, bool) {
			return map[string]string{"u1": "1", "u0": "0"}[uid], uid == "u1" || uid == "u0"
		}})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Tenant: "acme", Namespace: "web", Name: "p", UID: "u1"}, Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}}
	cfg, err := tenantPodDNS(c, rec, pod)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Servers, ","); got != "10.0.1.10" {
		t.Errorf("servers %s", got)
	}
	if got := strings.Join(cfg.Searches, " "); got != "web.acme.svc.cluster.local acme.svc.cluster.local svc.cluster.local cluster.local" {
		t.Errorf("searches %s", got)
	}
	sys := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Tenant: "system", Namespace: "kube-system", Name: "p", UID: "u0"}, Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}}
	cfg, err = tenantPodDNS(c, rec, sys)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Servers, ",") + " " + strings.Join(cfg.Options, ","); got != "10.0.0.10 ndots:5" {
		t.Errorf("system: %s", got)
	}
}
