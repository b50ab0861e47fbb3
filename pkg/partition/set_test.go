package partition

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/testbed/arktoshttp"
)

func writeKubeconfig(t *testing.T, dir, file, context, server string) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
users:
- name: u
  user:
    token: secret
contexts:
- name: %s
  context:
    cluster: c
    user: u
current-context: %q
`, server, contextOrDefault(context), context)
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func contextOrDefault(c string) string {
	if c == "" {
		return "unused"
	}
	return c
}

func TestFlagsAndNames(t *testing.T) {
	dir := t.TempDir()
	a := writeKubeconfig(t, dir, "a.kubeconfig", "tp-a", "https://127.0.0.1:6443")
	b := writeKubeconfig(t, dir, "second.yaml", "", "https://127.0.0.1:6444")

	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--tenant-server-kubeconfig=" + a + ", " + b}); err != nil {
		t.Fatal(err)
	}
	if o.SyncTimeout != DefaultSyncTimeout || o.Resync != 0 {
		t.Fatalf("defaults: sync timeout %v resync %v", o.SyncTimeout, o.Resync)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Partitions() {
		got = append(got, fmt.Sprintf("%d:%s", p.Index, p.Name))
	}
	// One file has no context: every TP is named after its file
	// (tenancy.PartitionNames), never a mix.
	if strings.Join(got, ",") != "0:a,1:second" {
		t.Fatalf("partitions = %v, want the files' names", got)
	}
	if p, ok := s.Get("second"); !ok || p.Config.Host != "https://127.0.0.1:6444" {
		t.Fatalf("Get(second) = %+v, %v", p, ok)
	}

	if err := fs.Parse([]string{"--tenant-partition-names=one,two"}); err != nil {
		t.Fatal(err)
	}
	s, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Partitions()[0].Name != "one" || s.Partitions()[1].Name != "two" {
		t.Fatalf("override names not applied: %s, %s", s.Partitions()[0].Name, s.Partitions()[1].Name)
	}
}

// TestArktosKubeconfigs: Arktos's worker script writes every TP's kubeconfig
// with the same context; the TPs are then named after the files.
func TestArktosKubeconfigs(t *testing.T) {
	dir := t.TempDir()
	a := writeKubeconfig(t, dir, "tenant-server-kubelet0.kubeconfig", "local-up-cluster", "http://127.0.0.1:6443")
	b := writeKubeconfig(t, dir, "tenant-server-kubelet1.kubeconfig", "local-up-cluster", "http://127.0.0.1:6444")
	s, err := New(Options{KubeconfigPaths: []string{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Partitions()[0].Name + "," + s.Partitions()[1].Name; got != "tenant-server-kubelet0,tenant-server-kubelet1" {
		t.Fatalf("names = %s, want the files' names", got)
	}
	if s.Partitions()[1].Config.Host != "http://127.0.0.1:6444" {
		t.Fatalf("tp 1's host = %s", s.Partitions()[1].Config.Host)
	}
}

func TestNewErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	good := writeKubeconfig(t, dir, "good.kubeconfig", "tp1", "https://127.0.0.1:6443")
	if err := os.Mkdir(filepath.Join(dir, "other"), 0o700); err != nil {
		t.Fatal(err)
	}
	twin := writeKubeconfig(t, filepath.Join(dir, "other"), "good.kubeconfig", "tp1", "https://127.0.0.1:6444")
	bad := filepath.Join(dir, "bad.kubeconfig")
	if err := os.WriteFile(bad, []byte("clusters: [this is: not yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.kubeconfig")
	cases := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"missing file", Options{KubeconfigPaths: []string{good, missing}}, missing},
		{"a directory", Options{KubeconfigPaths: []string{dir}}, dir},
		{"malformed file", Options{KubeconfigPaths: []string{bad}}, bad},
		{"duplicate file names", Options{KubeconfigPaths: []string{good, twin}}, `both named "good" by the kubeconfig files' names`},
		{"names count", Options{KubeconfigPaths: []string{good}, Names: []string{"a", "b"}}, "has 2 names"},
		{"no files", Options{}, "--tenant-server-kubeconfig is empty"},
		{"bad override name", Options{KubeconfigPaths: []string{good}, Names: []string{"a/b"}}, "must not contain '/'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestUnreachablePartitionDoesNotBlockOthers runs three TPs, one of them
// unreachable: after the bounded wait, two are synced, one is reported
// unreachable, AllSynced stays false; when the TP comes up it syncs.
func TestUnreachablePartitionDoesNotBlockOthers(t *testing.T) {
	var cfgs []*rest.Config
	for i := 0; i < 2; i++ {
		srv := httptest.NewServer(arktoshttp.NewHandler("pods", "PodList",
			fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"default","tenant":"system","uid":"u%d","resourceVersion":"1"}}`, i)))
		// Cleanups run after the deferred cancel below has ended the
		// informers' watches; httptest's Close waits for open requests.
		t.Cleanup(srv.Close)
		cfgs = append(cfgs, &rest.Config{Host: srv.URL})
	}
	// A port that refuses connections until the TP "comes up" below.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := ln.Addr().String()
	ln.Close()
	cfgs = append(cfgs, &rest.Config{Host: "http://" + downAddr})

	s, err := NewFromConfigs([]string{"tp1", "tp2", "tp3"}, cfgs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, p := range s.Partitions() {
		lw, err := informer.NewListWatch(p.Client, informer.Pods, informer.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		// Only the sync matters here, not the store's keys.
		f := informer.NewFeed(lw, &corev1.Pod{}, cache.NewStore(cache.MetaNamespaceKeyFunc), informer.FeedOptions{Name: p.Name + " pods"})
		p.TrackSynced("pods", f.HasSynced)
		go f.Run(ctx)
	}
	s.Start(ctx)

	begin := time.Now()
	const bound = 3 * time.Second
	if s.WaitForSync(ctx, bound) {
		t.Fatal("WaitForSync reported all synced with a TP down")
	}
	if waited := time.Since(begin); waited > 10*bound {
		t.Fatalf("WaitForSync did not honour its bound: %v", waited)
	}
	st := s.Statuses()
	if !st[0].Synced || !st[1].Synced {
		t.Fatalf("reachable TPs not synced: %+v", st)
	}
	if st[2].Synced || st[2].Reachable || !strings.Contains(st[2].LastError, "connection refused") {
		t.Fatalf("tp3 should be unsynced and unreachable with a connection error: %+v", st[2])
	}
	if !st[0].Reachable || st[0].LastEvent.IsZero() {
		t.Fatalf("tp1 should be reachable with a last event: %+v", st[0])
	}
	if s.AllSynced() {
		t.Fatal("AllSynced true with tp3 down")
	}
	if err := s.CheckAllSynced(); err == nil || !strings.Contains(err.Error(), "partition tp3 not synced (waiting for pods) (unreachable") {
		t.Fatalf("CheckAllSynced() = %v", err)
	}
	if err := s.CheckReachableSynced(); err != nil {
		t.Fatalf("CheckReachableSynced() = %v, want nil: tp3 is unreachable, the rest synced", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	expected := `
# HELP tpkit_partition_synced 1 when every consumer of the tenant partition has listed it once.
# TYPE tpkit_partition_synced gauge
tpkit_partition_synced{partition="tp1"} 1
tpkit_partition_synced{partition="tp2"} 1
tpkit_partition_synced{partition="tp3"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), "tpkit_partition_synced"); err != nil {
		t.Fatal(err)
	}

	// The TP comes up on the same address: the informer's retries reach it.
	ln, err = net.Listen("tcp", downAddr)
	if err != nil {
		t.Skipf("could not re-bind %s to bring tp3 up: %v", downAddr, err)
	}
	late := httptest.NewUnstartedServer(arktoshttp.NewHandler("pods", "PodList"))
	late.Listener.Close()
	late.Listener = ln
	late.Start()
	t.Cleanup(late.Close)
	if !s.WaitForSync(ctx, time.Minute) {
		t.Fatalf("tp3 did not sync after coming up: %+v", s.Statuses()[2])
	}
	if err := s.CheckAllSynced(); err != nil {
		t.Fatal(err)
	}
}

// TestSyncedFollowsTrackedChecks: a reachable TP is synced only when every
// consumer that registered a check has listed it, and tpkit_partition_synced
// follows; a TP nothing reads never syncs and says so.
func TestSyncedFollowsTrackedChecks(t *testing.T) {
	s, err := NewFromConfigs([]string{"tp1", "tp2"}, []*rest.Config{{Host: "http://127.0.0.1:1"}, {Host: "http://127.0.0.1:1"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var dnsDone, proxyDone atomic.Bool
	p1 := s.Partitions()[0]
	p1.TrackSynced("dns", dnsDone.Load)
	p1.TrackSynced("proxy", proxyDone.Load)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx)

	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	metric := func(tp1 int) string {
		return fmt.Sprintf(`
# HELP tpkit_partition_synced 1 when every consumer of the tenant partition has listed it once.
# TYPE tpkit_partition_synced gauge
tpkit_partition_synced{partition="tp1"} %d
tpkit_partition_synced{partition="tp2"} 0
`, tp1)
	}
	dnsDone.Store(true)
	time.Sleep(5 * syncPoll) // the poller looks; nothing may change yet
	if p1.Synced() {
		t.Fatal("tp1 synced with the proxy's check false")
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(metric(0)), "tpkit_partition_synced"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckAllSynced(); err == nil || !strings.Contains(err.Error(), "partition tp1 not synced (waiting for proxy)") ||
		!strings.Contains(err.Error(), "partition tp2 not synced (nothing reads it)") {
		t.Fatalf("CheckAllSynced() = %v", err)
	}
	proxyDone.Store(true)
	for !p1.Synced() {
		if ctx.Err() != nil {
			t.Fatal("tp1 never synced")
		}
		time.Sleep(syncPoll)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(metric(1)), "tpkit_partition_synced"); err != nil {
		t.Fatal(err)
	}
}
