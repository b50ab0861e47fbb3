package kubeletcache_test

import (
	"context"
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/tpkit-dev/tpkit/pkg/kubeletcache"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	tporigink8s "github.com/tpkit-dev/tpkit/pkg/tporigin/k8s"
)

// Example shows a kubelet's wiring: the TP set, the origin tracker fed by
// the node's pods on every TP, and the managers reading from each pod's TP.
func Example() {
	var (
		po partition.Options
		to tporigin.Options
		mo kubeletcache.Options
	)
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	po.AddFlags(fs)
	tporigink8s.AddFlags(fs, &to)
	mo.AddFlags(fs)
	_ = fs.Parse([]string{"--tenant-server-kubeconfig=/etc/tp1.kubeconfig,/etc/tp2.kubeconfig", "--tporigin-db=/var/lib/kubelet/tporigin.db"})

	ctx := context.Background()
	set, err := partition.New(po)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range set.Partitions() {
		to.Partitions = append(to.Partitions, p.Name)
	}
	to.Logf = tporigink8s.Logf
	tracker, err := tporigin.Open(to) // knows every pod's TP before any TP answers
	if err != nil {
		fmt.Println(err) // a *tporigin.CorruptError names the file
		return
	}
	defer tracker.Close()
	wiring, err := tporigink8s.Wire(tracker, set, tporigink8s.WireOptions{NodeName: "node-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	go tracker.Run(ctx)
	set.Start(ctx)
	wiring.Start(ctx)

	// The managers place each pod's objects by the tracker's decision.
	configMaps, _ := kubeletcache.NewConfigMapManager(set, tporigin.NewClientChooser(tracker), mo)
	go configMaps.Run(ctx)

	var pod *corev1.Pod // from the pod informer of its TP
	if err := configMaps.RegisterPod(pod); err == nil {
		cm, err := configMaps.GetConfigMap(tenancy.TenantOf(pod), pod.Namespace, "settings", pod.UID)
		fmt.Println(cm, err)
	}
}
