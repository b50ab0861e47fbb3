package main

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/dns/kubednsconfig"
	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// watchKubeDNSConfigMaps feeds every partition's kube-dns ConfigMap (the
// system tenant's ns/name) to f until ctx ends. It does not hold up
// readiness: until a TP's ConfigMap is read, its pods get the default
// upstreams, as they do when it has none.
func watchKubeDNSConfigMaps(ctx context.Context, parts []*partition.Partition, ns, name string, f *kubednsconfig.Forwarders) error {
	for _, p := range parts {
		lw, err := informer.NewListWatch(p.Client, informer.ConfigMaps, informer.Scope{
			Tenant: tenancy.SystemTenant, Namespace: ns, FieldSelector: "metadata.name=" + name,
		})
		if err != nil {
			return fmt.Errorf("partition %s: %w", p.Name, err)
		}
		sink := &configMapSink{f: f, tp: p.Index, name: name}
		feed := informer.NewFeed(lw, &corev1.ConfigMap{}, sink, informer.FeedOptions{
			Name: "partition-dns configmap " + ns + "/" + name + " of " + p.Name, Backoff: configMapBackoff(),
		})
		go feed.Run(ctx)
	}
	klog.InfoS("Reading each TP's kube-dns ConfigMap for its pods' names outside the zones", "configMap", ns+"/"+name, "tenant", tenancy.SystemTenant)
	return nil
}

// configMapBackoff paces a ConfigMap feed's retries: slower than the
// index's feeds (informer.DefaultBackoff), since a TP without the Role of
// deploy/partition-dns/rbac-per-tp.yaml refuses every list, and each
// refusal is logged; the ConfigMap is read again within 30 s of the Role
// being applied.
func configMapBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.25, Steps: math.MaxInt32, Cap: 30 * time.Second}
}

// configMapSink applies one TP's ConfigMap as the feed reports it.
type configMapSink struct {
	f    *kubednsconfig.Forwarders
	tp   int
	name string
}

func (s *configMapSink) apply(obj any) {
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == s.name {
		_ = s.f.Apply(s.tp, cm.Data) // a bad one is logged and counted, and changes nothing
	}
}

func (s *configMapSink) Add(obj any) error    { s.apply(obj); return nil }
func (s *configMapSink) Update(obj any) error { s.apply(obj); return nil }
func (s *configMapSink) Resync() error        { return nil }

func (s *configMapSink) Delete(obj any) error {
	s.f.Remove(s.tp)
	return nil
}

// Replace is a (re)list: the ConfigMap, or none.
func (s *configMapSink) Replace(list []any, _ string) error {
	for _, obj := range list {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == s.name {
			s.apply(cm)
			return nil
		}
	}
	s.f.Remove(s.tp)
	return nil
}
