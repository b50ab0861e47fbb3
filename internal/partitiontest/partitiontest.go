package partitiontest

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1client "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Clients are the typed clients of one TP for the API groups tpkit's tests
// and harnesses write and read, core/v1 and discovery.k8s.io/v1: the part
// of client-go's clientset (kubernetes.Interface) they use, with the same
// method names, so cs.CoreV1().Services(ns) reads as it did. The clientset
// itself would compile every group's typed client and apply configuration
// into each test binary (in a cold race build, over a minute of a 2-core
// machine) for two groups used.
type Clients struct {
	core      *corev1client.CoreV1Client
	discovery *discoveryv1client.DiscoveryV1Client
}

// NewClients returns the clients of c over h (rest.HTTPClientFor(c) when
// nil), as kubernetes.NewForConfigAndClient builds a clientset: the groups
// share h and, when c sets QPS without a RateLimiter, one rate limiter. c
// is used as given; wrap it with pkg/tenancy/k8s.WrapConfig first for
// Arktos's tenant paths.
func NewClients(c *rest.Config, h *http.Client) (*Clients, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if h == nil {
		var err error
		if h, err = rest.HTTPClientFor(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("partitiontest: QPS %v needs a Burst above 0", cfg.QPS)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	core, err := corev1client.NewForConfigAndClient(&cfg, h)
	if err != nil {
		return nil, err
	}
	disc, err := discoveryv1client.NewForConfigAndClient(&cfg, h)
	if err != nil {
		return nil, err
	}
	return &Clients{core: core, discovery: disc}, nil
}

// CoreV1 is the core/v1 client.
func (c *Clients) CoreV1() corev1client.CoreV1Interface { return c.core }

// DiscoveryV1 is the discovery.k8s.io/v1 client.
func (c *Clients) DiscoveryV1() discoveryv1client.DiscoveryV1Interface { return c.discovery }

// Clientset returns the clients of p over its tenant-preserving config and
// HTTP client.
func Clientset(t testing.TB, p *partition.Partition) *Clients {
	t.Helper()
	cs, err := NewClients(p.Config, p.HTTPClient)
	if err != nil {
		t.Fatalf("clients of tenant partition %s: %v", p.Name, err)
	}
	return cs
}

// ListWatch lists and watches through a typed client's List and Watch,
// such as cs.CoreV1().Pods("").List and .Watch: the ListWatch that
// client-go's informer factory builds for the resource. With
// cache.NewSharedIndexInformer it makes the factory's informer without
// the factory, which would link every API group's informers and clients.
func ListWatch[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, o)
		},
		WatchFuncWithContext: watchFn,
	}
}
