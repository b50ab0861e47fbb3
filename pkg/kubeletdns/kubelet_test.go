package kubeletdns

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
)

// TestGetPodDNSConfig: the kubelet entry gives what GetPodDNS forms, in the
// runtime's shape, with the same warnings, and nothing on error.
func TestGetPodDNSConfig(t *testing.T) {
	c := mustNew(t, Options{ClusterDNS: ips("10.0.0.10"), ClusterDomain: "cluster.local", ResolverConfig: hostFile(t, "nameserver 8.8.8.8\nsearch host.domain\n")})
	pods := []Pod{
		testPod("", "bar", DNSClusterFirst, false),
		testPod("baz", "bar", DNSClusterFirst, false),
		testPod("baz", "bar", DNSDefault, false),
		withDNSConfig(testPod("baz", "bar", DNSClusterFirst, false), &PodDNSConfig{Nameservers: []string{"10.0.0.11", "10.0.0.12", "10.0.0.13"}}),
		testPod("baz", "bar", DNSNone, false),
	}
	for _, pod := range pods {
		t.Run(fmt.Sprintf("%s/%s", pod.tenant(), pod.DNSPolicy), func(t *testing.T) {
			want, err := c.GetPodDNS(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			got, warnings, err := c.GetPodDNSConfig(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, &DNSConfig{Servers: want.Nameservers, Searches: want.Searches, Options: want.Options}) {
				t.Errorf("GetPodDNSConfig = %+v, GetPodDNS = %+v", got, want.ResolvConf)
			}
			if !reflect.DeepEqual(warnings, want.Warnings) {
				t.Errorf("warnings = %v, want %v", warnings, want.Warnings)
			}
		})
	}
	got, warnings, err := c.GetPodDNSConfig(context.Background(), testPod("Baz", "bar", DNSClusterFirst, false))
	if err == nil || got != nil || warnings != nil {
		t.Fatalf("bad tenant: %+v, %v, %v; want only an error", got, warnings, err)
	}
}

// TestLogger: each warning of a pod reaches the Logger once, at debug
// level, naming the pod; a nil Logger is allowed (the other tests run
// without one).
func TestLogger(t *testing.T) {
	var logged []string
	other := func(format string, args ...any) { t.Errorf("logged above debug level: "+format, args...) }
	c := mustNew(t, Options{ClusterDomain: "cluster.local", Logger: corelog.Funcs{Debug: func(format string, args ...any) {
		logged = append(logged, fmt.Sprintf(format, args...))
	}, Info: other, Warning: other, Error: other}})
	if _, err := c.GetPodDNS(context.Background(), testPod("baz", "bar", "Bogus", false)); err != nil {
		t.Fatal(err)
	}
	if len(logged) != 2 || !strings.Contains(logged[0], ReasonInvalidDNSPolicy) || !strings.Contains(logged[1], ReasonMissingClusterDNS) {
		t.Fatalf("logged %q; want InvalidDNSPolicy then MissingClusterDNS", logged)
	}
	for _, l := range logged {
		if !strings.Contains(l, `"baz/bar/test-pod"`) {
			t.Errorf("log line %q does not name the pod", l)
		}
	}
	logged = nil
	if _, err := c.GetPodDNS(context.Background(), testPod("baz", "bar", DNSNone, false)); err != nil || logged != nil {
		t.Fatalf("a pod without warnings: %v, logged %q", err, logged)
	}
}
