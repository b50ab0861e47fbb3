package k8s_test

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
	kubeletdnsk8s "github.com/tpkit-dev/tpkit/pkg/kubeletdns/k8s"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func TestPodOf(t *testing.T) {
	three := "3"
	tenantPod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "bar", UID: "uid-1",
			Labels: map[string]string{kubeletdns.NetworkLabel: "vpc-1", "app": "web"},
		},
		Spec: v1.PodSpec{
			DNSPolicy: v1.DNSClusterFirstWithHostNet, HostNetwork: true,
			DNSConfig: &v1.PodDNSConfig{
				Nameservers: []string{"10.0.0.11"},
				Searches:    []string{"my.domain"},
				Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "edns0"}},
			},
		},
	}
	tenancy.SetTenant(tenantPod, "baz")
	cases := []struct {
		name string
		pod  *v1.Pod
		want kubeletdns.Pod
	}{
		{"every field", tenantPod, kubeletdns.Pod{
			Tenant: "baz", Namespace: "bar", Name: "web", UID: "uid-1",
			DNSPolicy: kubeletdns.DNSClusterFirstWithHostNet, HostNetwork: true,
			DNSConfig: &kubeletdns.PodDNSConfig{
				Nameservers: []string{"10.0.0.11"},
				Searches:    []string{"my.domain"},
				Options:     []kubeletdns.PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "edns0"}},
			},
			Network: "vpc-1",
		}},
		{"no tenant is the system tenant, no label no network", &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "kube-system", UID: "uid-2"},
			Spec:       v1.PodSpec{DNSPolicy: v1.DNSDefault},
		}, kubeletdns.Pod{Tenant: tenancy.SystemTenant, Namespace: "kube-system", Name: "dns", UID: "uid-2", DNSPolicy: kubeletdns.DNSDefault}},
		{"an empty dnsConfig stays a dnsConfig", &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec:       v1.PodSpec{DNSPolicy: v1.DNSNone, DNSConfig: &v1.PodDNSConfig{}},
		}, kubeletdns.Pod{Tenant: tenancy.SystemTenant, Namespace: "ns", Name: "p", DNSPolicy: kubeletdns.DNSNone, DNSConfig: &kubeletdns.PodDNSConfig{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := kubeletdnsk8s.PodOf(tc.pod); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PodOf =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestNetworkOf(t *testing.T) {
	if got := kubeletdnsk8s.NetworkOf(&v1.Pod{}); got != kubeletdns.DefaultNetwork {
		t.Errorf("NetworkOf(no label) = %q", got)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kubeletdns.NetworkLabel: "vpc-1"}}}
	if got := kubeletdnsk8s.NetworkOf(pod); got != "vpc-1" {
		t.Errorf("NetworkOf(vpc-1) = %q", got)
	}
}

// TestGetPodDNS runs upstream pods through the adapter: the tenant the
// transport keeps on a pod reaches the search path, the pod's dnsConfig is
// merged and left as it was, and the warnings reach Logf.
func TestGetPodDNS(t *testing.T) {
	var logged []string
	c, err := kubeletdnsk8s.New(kubeletdns.Options{
		ClusterDNS: []net.IP{net.ParseIP("10.0.0.10")}, ClusterDomain: "cluster.local",
		Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "bar", UID: "uid-1"},
		Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst, DNSConfig: &v1.PodDNSConfig{
			Nameservers: []string{"10.0.0.11", "10.0.0.12", "10.0.0.13"},
			Searches:    []string{"my.domain"},
		}},
	}
	tenancy.SetTenant(pod, "baz")
	before := pod.DeepCopy()
	got, err := c.GetPodDNS(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	want := kubeletdns.ResolvConf{
		Nameservers: []string{"10.0.0.10", "10.0.0.11", "10.0.0.12"},
		Searches:    []string{"bar.baz.svc.cluster.local", "baz.svc.cluster.local", "svc.cluster.local", "cluster.local", "my.domain"},
		Options:     []string{"ndots:6"},
	}
	if !reflect.DeepEqual(got.ResolvConf, want) {
		t.Errorf("got  %+v\nwant %+v", got.ResolvConf, want)
	}
	if !reflect.DeepEqual(pod, before) {
		t.Errorf("the pod was modified:\n%+v\nwas\n%+v", pod, before)
	}
	if len(got.Warnings) != 1 || len(logged) != 1 || !strings.Contains(logged[0], kubeletdns.ReasonDNSConfigForming) || !strings.Contains(logged[0], "baz/bar/web") {
		t.Errorf("warnings %v, logged %q; want one DNSConfigForming, logged with the pod", got.Warnings, logged)
	}

	if _, err := c.GetPodDNS(context.Background(), nil); err == nil {
		t.Error("nil pod: no error")
	}
	if _, err := kubeletdnsk8s.New(kubeletdns.Options{ClusterDomain: "a b"}); err == nil {
		t.Error("New with a bad cluster domain: no error")
	}
}

// TestNewLogsThroughKlog: without a Logf, the warnings go to klog, and the
// configurer still answers.
func TestNewLogsThroughKlog(t *testing.T) {
	c, err := kubeletdnsk8s.New(kubeletdns.Options{ClusterDomain: "cluster.local"})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "bar"}, Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}}
	got, err := c.GetPodDNS(context.Background(), pod)
	if err != nil || len(got.Warnings) != 1 || got.Warnings[0].Reason != kubeletdns.ReasonMissingClusterDNS {
		t.Fatalf("GetPodDNS = %+v, %v; want a MissingClusterDNS warning", got, err)
	}
	if c.Core() == nil || c.CheckHostResolvConf() != nil {
		t.Fatalf("Core() = %v, CheckHostResolvConf() = %v", c.Core(), c.CheckHostResolvConf())
	}
}

func TestServiceClusterIPs(t *testing.T) {
	cases := []struct {
		spec v1.ServiceSpec
		want []string
	}{
		{v1.ServiceSpec{ClusterIP: "10.0.0.10"}, []string{"10.0.0.10"}},
		{v1.ServiceSpec{ClusterIP: "10.0.0.10", ClusterIPs: []string{"10.0.0.10", "fd00::10"}}, []string{"10.0.0.10", "fd00::10"}},
		{v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, ClusterIPs: []string{v1.ClusterIPNone}}, []string{}},
		{v1.ServiceSpec{}, []string{}},
	}
	for _, tc := range cases {
		if got := kubeletdnsk8s.ServiceClusterIPs(&v1.Service{Spec: tc.spec}); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ServiceClusterIPs(%+v) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestParseNameserverOverride(t *testing.T) {
	cases := []struct {
		in      string
		want    kubeletdns.NameserverOverride
		wantErr string
	}{
		{"baz=10.9.0.10", kubeletdns.NameserverOverride{Tenant: "baz", Nameservers: []string{"10.9.0.10"}}, ""},
		{"baz/bar=10.9.0.10, fd00::10", kubeletdns.NameserverOverride{Tenant: "baz", Namespace: "bar", Nameservers: []string{"10.9.0.10", "fd00::10"}}, ""},
		{"system/kube-system=10.0.0.53", kubeletdns.NameserverOverride{Tenant: "system", Namespace: "kube-system", Nameservers: []string{"10.0.0.53"}}, ""},
		{"baz", kubeletdns.NameserverOverride{}, "want <tenant>"},
		{"baz=", kubeletdns.NameserverOverride{}, "no nameservers"},
		{"Baz=1.1.1.1", kubeletdns.NameserverOverride{}, "tenant name"},
		{"all=1.1.1.1", kubeletdns.NameserverOverride{}, "reserved"},
		{"baz/=1.1.1.1", kubeletdns.NameserverOverride{}, "namespace name must not be empty"},
		{"baz/b c=1.1.1.1", kubeletdns.NameserverOverride{}, "namespace name"},
		{"baz=1.1.1.1,dns", kubeletdns.NameserverOverride{}, "not an IP"},
		{strings.Repeat("x", 200), kubeletdns.NameserverOverride{}, `"` + strings.Repeat("x", 80) + `": want`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := kubeletdnsk8s.ParseNameserverOverride(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("= %+v, %v; want %+v", got, err, tc.want)
			}
			// What the flag accepts, New accepts.
			if _, err := kubeletdns.New(kubeletdns.Options{Overrides: []kubeletdns.NameserverOverride{got}}); err != nil {
				t.Fatalf("New rejects a parsed override: %v", err)
			}
		})
	}
}
