package k8s_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/faketp"
	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
	kubeletdnsk8s "github.com/tpkit-dev/tpkit/pkg/kubeletdns/k8s"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

func dnsService(tenant, name string, clusterIPs ...string) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: kubeletdns.DNSServiceNamespace, Name: name},
		Spec: v1.ServiceSpec{
			ClusterIP:  clusterIPs[0],
			ClusterIPs: clusterIPs,
			Ports:      []v1.ServicePort{{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53}},
		},
	}
	tenancy.SetTenant(svc, tenant)
	return svc
}

// TestTenantDNSServiceFromFakeTP reads each tenant's kube-dns-<network>
// service from the pod's own TP, over HTTP, with the real partition set and
// origin tracker.
func TestTenantDNSServiceFromFakeTP(t *testing.T) {
	cluster := faketp.StartT(t, faketp.Options{Partitions: 2})
	tp1, tp2 := cluster.TP("tp1"), cluster.TP("tp2")
	if err := tp1.Seed(
		dnsService("baz", "kube-dns-default", "10.1.0.10"),
		dnsService("baz", "kube-dns-vpc-1", "10.1.1.10", "fd00:1::10"),
		dnsService("hdl", "kube-dns-default", v1.ClusterIPNone),
		// The system tenant's service of the same name must never answer
		// for a regular tenant.
		dnsService(tenancy.SystemTenant, "kube-dns-default", "10.96.0.99"),
	); err != nil {
		t.Fatal(err)
	}
	// Arktos keeps a regular tenant in one TP; a second "baz" in tp2 shows
	// that the lookup goes to the pod's TP and nowhere else.
	if err := tp2.Seed(dnsService("baz", "kube-dns-default", "10.2.0.10"), dnsService("qux", "kube-dns-default", "10.2.1.10")); err != nil {
		t.Fatal(err)
	}

	names := []string{"tp1", "tp2"}
	set, err := partition.NewFromConfigs(names, []*rest.Config{tp1.RESTConfig(), tp2.RESTConfig()}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	origins, err := tporigin.Open(tporigin.Options{Partitions: names})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = origins.Close() })

	clients, err := kubeletdnsk8s.PartitionClients(set)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubeletdnsk8s.New(kubeletdns.Options{
		ClusterDNS:    []net.IP{net.ParseIP("10.96.0.10")},
		ClusterDomain: "cluster.local",
		Services:      &kubeletdnsk8s.ClientLookup{Client: clients},
		PartitionOf:   origins.OriginOf,
		// Only for pods whose UID the tracker has not seen yet.
		PartitionOfTenant: origins.PartitionOfTenant,
	})
	if err != nil {
		t.Fatal(err)
	}

	pod := func(tenant, tp, network string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "bar",
			UID: types.UID("uid-" + tenant + "-" + tp + "-" + network),
		}, Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}}
		tenancy.SetTenant(p, tenant)
		if network != "" {
			p.Labels = map[string]string{kubeletdns.NetworkLabel: network}
		}
		if tp != "" {
			if _, err := origins.Observe(tporigin.Observation{UID: string(p.UID), Kind: tporigin.KindPod, Partition: tp, Tenant: tenant}); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}

	cases := []struct {
		name        string
		pod         *v1.Pod
		nameservers []string
		warnings    []string
	}{
		{"tenant in tp1", pod("baz", "tp1", ""), []string{"10.1.0.10"}, nil},
		{"the pod's network, dual-stack", pod("baz", "tp1", "vpc-1"), []string{"10.1.1.10", "fd00:1::10"}, nil},
		{"the same tenant name in tp2", pod("baz", "tp2", ""), []string{"10.2.0.10"}, nil},
		{"another tenant in tp2", pod("qux", "tp2", ""), []string{"10.2.1.10"}, nil},
		{"no service of its own: not the system tenant's", pod("other", "tp1", ""), []string{"10.96.0.10"}, nil},
		{"a tenant of tp2 asked in tp1 finds nothing", pod("qux", "tp1", ""), []string{"10.96.0.10"}, nil},
		{"a headless service is not usable", pod("hdl", "tp1", ""), []string{"10.96.0.10"}, []string{kubeletdns.ReasonTenantDNSService}},
		{"an unknown pod is placed by its tenant (tp1 first in flag order)", pod("baz", "", ""), []string{"10.1.0.10"}, nil},
		{"an unknown pod of an unknown tenant cannot be placed", pod("nobody", "", ""), []string{"10.96.0.10"}, []string{kubeletdns.ReasonTenantDNSService}},
		{"system pods use the cluster DNS", pod(tenancy.SystemTenant, "tp1", ""), []string{"10.96.0.10"}, nil},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.GetPodDNS(ctx, tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Nameservers, tc.nameservers) {
				t.Errorf("nameservers = %q, want %q", got.Nameservers, tc.nameservers)
			}
			var reasons []string
			for _, w := range got.Warnings {
				reasons = append(reasons, w.Reason)
			}
			if !reflect.DeepEqual(reasons, tc.warnings) {
				t.Errorf("warnings = %v, want reasons %v", got.Warnings, tc.warnings)
			}
			tenant := tenancy.TenantOf(tc.pod)
			wantFirst := "bar." + tenant + ".svc.cluster.local"
			if tenancy.IsSystem(tenant) {
				wantFirst = "bar.svc.cluster.local"
			}
			if len(got.Searches) == 0 || got.Searches[0] != wantFirst {
				t.Errorf("searches = %q, want %q first", got.Searches, wantFirst)
			}
		})
	}

	// A TP that answers 503 fails the pod's DNS instead of pinning it to
	// the wrong server; the kubelet retries.
	if err := tp2.SetOutage(ctx, faketp.OutageUnavailable); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetPodDNS(ctx, pod("qux", "tp2", "")); err == nil {
		t.Fatalf("GetPodDNS during an outage = %+v, want an error", got)
	} else if !strings.Contains(err.Error(), "partition tp2") {
		t.Fatalf("error %q does not name the partition", err)
	}
	if err := tp2.SetOutage(ctx, faketp.OutageNone); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetPodDNS(ctx, pod("qux", "tp2", ""))
	if err != nil || !reflect.DeepEqual(got.Nameservers, []string{"10.2.1.10"}) {
		t.Fatalf("after the outage: %+v, %v", got, err)
	}
}

func TestClientLookupUnknownPartition(t *testing.T) {
	clients, err := kubeletdnsk8s.PartitionClients(mustSet(t))
	if err != nil {
		t.Fatal(err)
	}
	l := &kubeletdnsk8s.ClientLookup{Client: clients}
	if _, _, err := l.ServiceIPs(context.Background(), "nope", "baz", "kube-system", "kube-dns-default"); err == nil || !strings.Contains(err.Error(), "unknown tenant partition") {
		t.Fatalf("error = %v", err)
	}
}

func mustSet(t *testing.T) *partition.Set {
	t.Helper()
	set, err := partition.NewFromConfigs([]string{"tp1"}, []*rest.Config{{Host: "http://127.0.0.1:1"}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// A server that answers for the wrong tenant (a short path read as the
// system tenant, or a proxy that drops the tenant) must not hand a pod
// another tenant's DNS server.
func TestClientLookupRejectsAnotherTenantsService(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Service","apiVersion":"v1","metadata":{"name":"kube-dns-default","namespace":"kube-system","tenant":"system"},"spec":{"clusterIP":"10.96.0.99","clusterIPs":["10.96.0.99"]}}`))
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(tenancyk8s.WrapConfig(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	l := &kubeletdnsk8s.ClientLookup{Client: func(string) (kubernetes.Interface, bool) { return client, true }}
	_, _, err = l.ServiceIPs(context.Background(), "tp1", "baz", "kube-system", "kube-dns-default")
	if err == nil || !strings.Contains(err.Error(), `got tenant "system"`) {
		t.Fatalf("error = %v, want a tenant mismatch", err)
	}
	mu.Lock()
	got := append([]string(nil), paths...)
	mu.Unlock()
	if want := "/api/v1/tenants/baz/namespaces/kube-system/services/kube-dns-default"; len(got) != 1 || got[0] != want {
		t.Fatalf("requested %q, want %q", got, want)
	}
	ips, found, err := l.ServiceIPs(context.Background(), "tp1", "system", "kube-system", "kube-dns-default")
	if err != nil || !found || !reflect.DeepEqual(ips, []string{"10.96.0.99"}) {
		t.Fatalf("system tenant lookup = %q, %v, %v", ips, found, err)
	}
}
