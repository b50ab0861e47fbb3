package k8s

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
)

// Configurer is the core configurer for upstream *v1.Pod values.
type Configurer struct {
	core *kubeletdns.Configurer
}

// New returns a Configurer over kubeletdns.New(o). Without o.Logf it logs
// the pods' warnings through klog at V(4), as tpkit's programs do.
func New(o kubeletdns.Options) (*Configurer, error) {
	if o.Logf == nil {
		o.Logf = Logf
	}
	core, err := kubeletdns.New(o)
	if err != nil {
		return nil, err
	}
	return &Configurer{core: core}, nil
}

// GetPodDNS returns the pod's resolv.conf content: the core's GetPodDNS of
// PodOf(pod). A nil pod is an error.
func (c *Configurer) GetPodDNS(ctx context.Context, pod *v1.Pod) (*kubeletdns.PodDNS, error) {
	if pod == nil {
		return nil, errors.New("kubeletdns: nil pod")
	}
	return c.core.GetPodDNS(ctx, PodOf(pod))
}

// CheckHostResolvConf is the core's CheckHostResolvConf.
func (c *Configurer) CheckHostResolvConf() []kubeletdns.Warning {
	return c.core.CheckHostResolvConf()
}

// Core returns the core configurer, for callers that fill kubeletdns.Pod
// themselves.
func (c *Configurer) Core() *kubeletdns.Configurer { return c.core }

// Logf is a kubeletdns.Logf that writes to klog at V(4): the configurer
// logs only what it also returns as warnings.
func Logf(format string, args ...any) {
	klog.V(4).InfofDepth(1, format, args...)
}
