package kubelet

import (
	"context"
	"strconv"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1alpha2"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
)

// tpServiceLookup is kubeletdns.ServiceIPLookup over the per-TP service listers.
type tpServiceLookup []corelisters.ServiceLister

func (l tpServiceLookup) ServiceIPs(_ context.Context, partition, tenant, ns, name string) ([]string, bool, error) {
	i, err := strconv.Atoi(partition)
	if err != nil || i < 0 || i >= len(l) {
		return nil, false, nil
	}
	svc, err := l[i].ServicesWithMultiTenancy(ns, tenant).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !v1helper.IsServiceIPSet(svc) {
		return nil, true, nil
	}
	return []string{svc.Spec.ClusterIP}, true, nil
}

// tenantPodDNS is the body GetPodDNS gets in the vendoring sketch.
func tenantPodDNS(c *kubeletdns.Configurer, recorder record.EventRecorder, pod *v1.Pod) (*runtimeapi.DNSConfig, error) {
	p := kubeletdns.Pod{Tenant: pod.Tenant, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID),
		DNSPolicy: kubeletdns.DNSPolicy(pod.Spec.DNSPolicy), HostNetwork: pod.Spec.HostNetwork,
		Network: pod.Labels[kubeletdns.NetworkLabel]}
	if dc := pod.Spec.DNSConfig; dc != nil {
		p.DNSConfig = &kubeletdns.PodDNSConfig{Nameservers: dc.Nameservers, Searches: dc.Searches}
		for _, o := range dc.Options {
			p.DNSConfig.Options = append(p.DNSConfig.Options, kubeletdns.PodDNSConfigOption{Name: o.Name, Value: o.Value})
		}
	}
	cfg, warnings, err := c.GetPodDNSConfig(context.TODO(), p)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		recorder.Event(pod, v1.EventTypeWarning, w.Reason, w.Message)
	}
	return &runtimeapi.DNSConfig{Servers: cfg.Servers, Searches: cfg.Searches, Options: cfg.Options}, nil
}
