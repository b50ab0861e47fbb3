package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// realisticDS is a DaemonSet as an API server sends it: a kube-proxy-like
// pod template, about 1.5 KB.
func realisticDS(tenant string) string {
	return `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"kube-proxy","namespace":"kube-system","tenant":"` + tenant + `",` +
		`"uid":"6f1c2a8e-4b7d-4f0a-9a57-1d2e3f4a5b6c","resourceVersion":"123456","generation":3,"creationTimestamp":"2026-11-01T00:00:00Z",` +
		`"labels":{"k8s-app":"kube-proxy"},"annotations":{"deprecated.daemonset.template.generation":"3"}},` +
		`"spec":{"selector":{"matchLabels":{"k8s-app":"kube-proxy"}},"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}},` +
		`"template":{"metadata":{"labels":{"k8s-app":"kube-proxy"}},"spec":{"priorityClassName":"system-node-critical","hostNetwork":true,` +
		`"serviceAccountName":"kube-proxy","tolerations":[{"operator":"Exists"}],"nodeSelector":{"kubernetes.io/os":"linux"},` +
		`"containers":[{"name":"kube-proxy","image":"registry.k8s.io/kube-proxy:v1.37.2","command":["/usr/local/bin/kube-proxy",` +
		`"--config=/var/lib/kube-proxy/config.conf","--hostname-override=$(NODE_NAME)"],"env":[{"name":"NODE_NAME","valueFrom":` +
		`{"fieldRef":{"fieldPath":"spec.nodeName"}}}],"securityContext":{"privileged":true},"volumeMounts":[{"name":"kube-proxy",` +
		`"mountPath":"/var/lib/kube-proxy"},{"name":"xtables-lock","mountPath":"/run/xtables.lock"},{"name":"lib-modules",` +
		`"mountPath":"/lib/modules","readOnly":true}]}],"volumes":[{"name":"kube-proxy","configMap":{"name":"kube-proxy"}},` +
		`{"name":"xtables-lock","hostPath":{"path":"/run/xtables.lock","type":"FileOrCreate"}},{"name":"lib-modules","hostPath":{"path":"/lib/modules"}}]}}},` +
		`"status":{"currentNumberScheduled":3,"numberMisscheduled":0,"desiredNumberScheduled":3,"numberReady":3,"observedGeneration":3}}`
}

// BenchmarkLoopbackHTTPS1kRPS measures the real program's latency over
// loopback HTTPS (HTTP/2, as the API server's webhook client) under an
// open-loop load of 1000 reviews per second: b.N requests are sent on a
// fixed 1 ms schedule whatever the responses do, half UPDATEs that are
// allowed (system tenant) and half CREATEs that are denied (tenant t1).
// Run it with a fixed count so the run time is bounded, e.g.
//
//	go test -run '^$' -bench LoopbackHTTPS1kRPS -benchtime 10000x ./cmd/tp-admission-webhook/
//
// (10 s). It reports p50/p99/max latency in ms from sending to the full
// response, and the rate achieved.
func BenchmarkLoopbackHTTPS1kRPS(b *testing.B) {
	const rate = 1000
	s := startServer(b, "-v=0")
	allowed := reviewBody("a", "UPDATE", "apps", "daemonsets", "DaemonSet", "kube-proxy", "object", realisticDS("system"), admin)
	allowed = strings.TrimSuffix(allowed, "}}") + `,"oldObject":` + realisticDS("system") + `}}`
	denied := reviewBody("d", "CREATE", "apps", "daemonsets", "DaemonSet", "kube-proxy", "object", realisticDS("t1"), alice)
	bodies := []string{allowed, denied}
	wantAllowed := []string{`"allowed":true`, `"allowed":false`}

	do := func(i int) (time.Duration, error) {
		start := time.Now()
		resp, err := s.client.Post(s.base+ValidatePath, "application/json", strings.NewReader(bodies[i%2]))
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), wantAllowed[i%2]) {
			return 0, fmt.Errorf("request %d: %d %s", i, resp.StatusCode, body)
		}
		return d, nil
	}
	// Warm up the connection and the TLS session.
	for i := range 50 {
		if _, err := do(i); err != nil {
			b.Fatal(err)
		}
	}

	lat := make([]time.Duration, b.N)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	interval := time.Second / rate
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d, err := do(i)
			if err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
			lat[i] = d
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}
