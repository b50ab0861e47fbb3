// Command podlatency is the pod start-up side of make bench-fleet
// (test/bench/fleet/run.sh): as Arktos's density test measures it, from
// the pod's creation to a watch seeing it Running.
//
//	podlatency --kubeconfig K --namespace N --count C --node-selector k=v [--image I] [--qps Q] [--timeout D]
//
// It creates C pods in namespace N of the kubeconfig's tenant (the pods
// select nodes by --node-selector: the hollow nodes), --qps a second, and
// watches them. The density test creates its latency pods at about 5 a
// second (one each 200 ms, after the saturation pods run), so that their
// start-up is the node's latency rather than a queue behind a burst. Each
// pod's latency is the time from just before its create request to the
// watch event that shows it Running, both on this process's
// clock, in milliseconds. The time to the first watch event that shows it
// bound to a node splits that in two: the TP's scheduler, then the node's
// kubelet (its pod watch, the start and the status write). It prints one
// line per pod, "pod NAME MS BOUND_MS" (BOUND_MS is -1 when no event showed
// the pod bound before Running), then
// "created C running R", and exits 1 when a pod is not Running within
// --timeout. The pods are deleted before it exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"

	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the TP's kubeconfig")
	ns := flag.String("namespace", "fleet", "namespace of the pods (it must exist)")
	count := flag.Int("count", 150, "pods to create")
	selector := flag.String("node-selector", "tpkit-fleet=hollow", "label the pods' nodes carry, k=v")
	image := flag.String("image", "tpkit-lab/pause:1", "the pods' image (hollow nodes pull nothing)")
	qps := flag.Float64("qps", 5, "creates a second (the density test's latency pods: 5)")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long every pod has to be Running")
	prefix := flag.String("prefix", "lat", "pod name prefix")
	flag.Parse()
	if err := run(*kubeconfig, *ns, *count, *selector, *image, *qps, *timeout, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "podlatency:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, ns string, count int, selector, image string, qps float64, timeout time.Duration, prefix string) error {
	k, v, ok := strings.Cut(selector, "=")
	if !ok || qps <= 0 || count <= 0 {
		return errors.New("--node-selector k=v, --qps and --count must be given and positive")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(2*qps+10), int(2*qps+10)
	c, err := partitiontest.NewClients(tenancyk8s.WrapConfig(cfg), nil)
	if err != nil {
		return err
	}
	pods := c.CoreV1().Pods(ns)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "tpkit-fleet-latency=" + prefix})
	if err != nil {
		return err
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: "tpkit-fleet-latency=" + prefix, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()

	var mu sync.Mutex
	created := map[string]time.Time{}
	running := map[string]time.Duration{}
	bound := map[string]time.Duration{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Spec.NodeName == "" {
				continue
			}
			seen := time.Now()
			mu.Lock()
			if t0, ok := created[p.Name]; ok {
				if _, had := bound[p.Name]; !had && p.Status.Phase != corev1.PodRunning {
					bound[p.Name] = seen.Sub(t0)
				}
				if _, had := running[p.Name]; !had && p.Status.Phase == corev1.PodRunning {
					running[p.Name] = seen.Sub(t0)
					b := int64(-1)
					if d, ok := bound[p.Name]; ok {
						b = d.Milliseconds()
					}
					fmt.Printf("pod %s %d %d\n", p.Name, running[p.Name].Milliseconds(), b)
				}
			}
			n := len(running)
			mu.Unlock()
			if n == count {
				return
			}
		}
	}()

	tick := time.NewTicker(time.Duration(float64(time.Second) / qps))
	defer tick.Stop()
	var createErr error
	for i := range count {
		<-tick.C
		name := fmt.Sprintf("%s-%d", prefix, i)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tpkit-fleet-latency": prefix}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{k: v},
				Containers:   []corev1.Container{{Name: "c", Image: image}},
			},
		}
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			createErr = fmt.Errorf("create %s: %w", name, err)
			break
		}
	}
	if createErr == nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	mu.Lock()
	n := len(running)
	mu.Unlock()
	fmt.Printf("created %d running %d\n", len(created), n)

	// The pods go, whatever happened.
	del, cancelDel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelDel()
	zero := int64(0)
	for name := range created {
		_ = pods.Delete(del, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	switch {
	case createErr != nil:
		return createErr
	case n < count:
		return fmt.Errorf("%d of %d pods Running within %s", n, count, timeout)
	}
	return nil
}
