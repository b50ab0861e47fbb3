package informer

import (
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Client gives the REST client of one TP for an API group version. List
// and watch requests go through it; *Clients is one.
type Client interface {
	RESTClientFor(gv schema.GroupVersion) (rest.Interface, error)
}

// Clients holds one TP's REST clients for the API groups tpkit reads,
// core/v1 and discovery.k8s.io/v1, over one HTTP client.
//
// It stands in for client-go's clientset on purpose: a clientset links
// and registers every API group Kubernetes has, and in partition-dns that
// costs about 8 MiB of resident memory (code, and the scheme's maps) for
// two groups used. Components that need typed clients build a clientset
// from the same rest.Config and HTTP client.
type Clients struct {
	core, discovery rest.Interface
}

// NewClients returns the clients of c over h (rest.HTTPClientFor(c) when
// nil). c is used as given; wrap it with pkg/tenancy/k8s.WrapConfig first
// for Arktos's tenant paths.
func NewClients(c *rest.Config, h *http.Client) (*Clients, error) {
	if h == nil {
		var err error
		if h, err = rest.HTTPClientFor(c); err != nil {
			return nil, err
		}
	}
	core, err := restClient(c, h, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	disc, err := restClient(c, h, "/apis", discoveryv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &Clients{core: core, discovery: disc}, nil
}

// restClient is what a typed client's constructor does for gv.
func restClient(c *rest.Config, h *http.Client, apiPath string, gv schema.GroupVersion) (rest.Interface, error) {
	cfg := *c
	cfg.APIPath = apiPath
	cfg.GroupVersion = &gv
	cfg.NegotiatedSerializer = codecs().WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientForConfigAndClient(&cfg, h)
}

// CoreV1 is the core/v1 client.
func (c *Clients) CoreV1() rest.Interface { return c.core }

// DiscoveryV1 is the discovery.k8s.io/v1 client.
func (c *Clients) DiscoveryV1() rest.Interface { return c.discovery }

// RESTClientFor implements Client.
func (c *Clients) RESTClientFor(gv schema.GroupVersion) (rest.Interface, error) {
	switch gv {
	case corev1.SchemeGroupVersion:
		return c.core, nil
	case discoveryv1.SchemeGroupVersion:
		return c.discovery, nil
	}
	return nil, fmt.Errorf("informer: no client for %s", gv)
}

// scheme knows the types of the two groups. It is built on first use and
// never changed, so every client shares it.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	// Both register their group's list options and metav1's Status and
	// WatchEvent with it.
	if err := corev1.AddToScheme(s); err != nil {
		panic(err) // a registration conflict is a programming error
	}
	if err := discoveryv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
})

var codecs = sync.OnceValue(func() serializer.CodecFactory { return serializer.NewCodecFactory(scheme()) })

var parameterCodec = sync.OnceValue(func() runtime.ParameterCodec { return runtime.NewParameterCodec(scheme()) })

// ParameterCodec encodes list, get, create, update, delete and patch
// options as query parameters of the Clients' two groups, as client-go's
// typed clients do with their scheme's.
func ParameterCodec() runtime.ParameterCodec { return parameterCodec() }
