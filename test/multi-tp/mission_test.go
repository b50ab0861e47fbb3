//go:build linux

package multitp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/testbed/kubeproxyk8s"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
	tporigink8s "github.com/tpkit-dev/tpkit/testbed/tporigink8s"
)

// The seed's facts that the assertions check (testdata/tps).
const (
	acmeWeb    = "10.96.20.1" // acme/default/web, tenant acme lives in tp2
	zetaWeb    = "10.96.30.1" // zeta/default/web, tenant zeta lives in tp3
	kubeDNSTP1 = "10.96.0.10" // system/kube-system/kube-dns in tp1
	kubeDNSTP2 = "10.97.0.10" // system/kube-system/kube-dns in tp2
	podTP1     = "127.0.0.2"  // the node-agent pod of tp1
	podTP2     = "127.0.0.3"  // the node-agent pod of tp2, same tenant/namespace/name
	dsMessage  = "only system tenant is allowed to have DaemonSet"
)

// mission is the running programs of TestMission.
type mission struct {
	t           *testing.T        // TestMission: it owns the programs
	kubeconfigs map[string]string // TP name → kubeconfig file
	tp12, tp3   *proc             // fake-tp serving tp1 and tp2; fake-tp serving tp3
	tp3Args     []string          // tp3's command line without --seed, for its restart
	dns         *dnsServer        // partition-dns, started with the TPs
	late        *dnsServer        // partition-dns started while tp3 was down
}

// dnsServer is a running partition-dns.
type dnsServer struct {
	*proc
	addr    string // DNS over UDP and TCP
	health  string // http://…: /healthz, /readyz, /readyz/partitions
	metrics string // http://…/metrics
}

func (m *mission) kubeconfigFlag() string {
	return m.kubeconfigs["tp1"] + "," + m.kubeconfigs["tp2"] + "," + m.kubeconfigs["tp3"]
}

// startMission starts two fake-tp processes (tp1+tp2, and tp3 alone so that
// it can be killed on its own) seeded from testdata/tps, and partition-dns
// on the three kubeconfigs, and waits until partition-dns is ready.
func startMission(t *testing.T) *mission {
	t.Helper()
	seed, err := filepath.Abs(filepath.Join("testdata", "tps"))
	if err != nil {
		t.Fatal(err)
	}
	kc := t.TempDir()
	m := &mission{t: t, kubeconfigs: map[string]string{}}
	for _, name := range []string{"tp1", "tp2", "tp3"} {
		m.kubeconfigs[name] = filepath.Join(kc, name+".kubeconfig")
	}
	// --listen port 0: fake-tp picks free ports and writes them into the
	// kubeconfigs; --admin-listen "": the suite makes outages with signals.
	m.tp12 = start(t, "fake-tp tp1,tp2", "fake-tp", "--partition-names", "tp1,tp2", "--listen", "127.0.0.1:0",
		"--kubeconfig-dir", kc, "--seed", seed, "--admin-listen", "")
	// tp3 comes back after its outage on the same port with the same data
	// (--data-dir), as a restarted API server does.
	// Its own service range, as tp3 of one fake-tp process would have.
	m.tp3Args = []string{"--partition-names", "tp3", "--service-cidr", "10.98.0.0/16", "--listen", freePort(t), "--kubeconfig-dir", kc,
		"--data-dir", filepath.Join(t.TempDir(), "data"), "--admin-listen", ""}
	m.tp3 = start(t, "fake-tp tp3", "fake-tp", append(m.tp3Args, "--seed", seed)...)
	m.tp12.WaitOutput(t, `"Serving tenant partition"`, 2)
	m.tp3.WaitOutput(t, `"Serving tenant partition"`, 1)

	m.dns = m.startDNS(t, "partition-dns")
	return m
}

// startDNS starts partition-dns on the three kubeconfigs and waits until
// it is ready.
func (m *mission) startDNS(t *testing.T, label string, extra ...string) *dnsServer {
	t.Helper()
	return startPartitionDNS(t, m.t, label, m.kubeconfigFlag(), extra...)
}

// startPartitionDNS starts partition-dns on the kubeconfigs of flag (owned
// by owner) and waits until it is ready. It needs fixed ports; one taken
// meanwhile by another process is retried with new ones.
func startPartitionDNS(t, owner *testing.T, label, kubeconfigs string, extra ...string) *dnsServer {
	t.Helper()
	for attempt := 1; ; attempt++ {
		d := &dnsServer{addr: freePort(t)}
		health, metrics := freePort(t), freePort(t)
		d.health, d.metrics = "http://"+health, "http://"+metrics
		d.proc = startOwned(t, owner, label, "partition-dns", append([]string{
			"--tenant-server-kubeconfig", kubeconfigs,
			"--listen", d.addr, "--health-listen", health, "--metrics-listen", metrics, "--ready-listen", "",
			"--upstream", "none", "--ttl", "5"}, extra...)...)
		end := time.Now().Add(deadline)
		for !d.Exited() && time.Now().Before(end) {
			if code, _ := httpGet(d.health + "/readyz"); code == http.StatusOK {
				return d
			}
			time.Sleep(25 * time.Millisecond)
		}
		if d.Exited() && attempt < 3 && strings.Contains(d.Output(), "address already in use") {
			continue
		}
		code, body := httpGet(d.health + "/readyz")
		t.Fatalf("%s not ready (exited: %v, %v): /readyz %d %s", label, d.Exited(), d.Err(), code, body)
	}
}

// TestMission runs the mission scenario end to end. The subtests share the
// programs and run in order; each states what it leaves behind.
func TestMission(t *testing.T) {
	m := startMission(t)
	t.Run("1-kubectl-tenants-and-daemonset-admission", func(t *testing.T) { testKubectl(t, m) })
	t.Run("2-dns-udp-tcp", func(t *testing.T) { testDNS(t, m) })
	t.Run("2b-pod-identity-through-node-cache", func(t *testing.T) { testNodeCache(t, m) })
	t.Run("3-kubectl-change-reaches-dns", func(t *testing.T) { testChange(t, m) })
	t.Run("4-library-parts-in-process", func(t *testing.T) { testLibraries(t, m) })
	t.Run("5-admission-webhook-program", func(t *testing.T) { testWebhook(t, m) })
	t.Run("6-tp-outage-serves-stale", func(t *testing.T) { testOutage(t, m) })
	t.Run("7-dns-starts-during-outage", func(t *testing.T) { testStartDuringOutage(t, m) })
	t.Run("8-tp-returns", func(t *testing.T) { testReturn(t, m) })
	t.Run("9-sigterm-stops-cleanly", func(t *testing.T) { testStop(t, m) })
}

// dsJSON is a DaemonSet manifest; tenant "" leaves metadata.tenant out.
func dsJSON(tenant, ns, name string) string {
	md := map[string]any{"name": name, "namespace": ns}
	if tenant != "" {
		md["tenant"] = tenant
	}
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": md,
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]string{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]string{"app": name}},
				"spec":     map[string]any{"containers": []any{map[string]string{"name": "c", "image": "registry.k8s.io/pause:3.10"}}},
			},
		},
	})
	return string(b)
}

// testKubectl: the real kubectl against tp2 reads a regular tenant's
// service by its Arktos path, and the DaemonSet admission refuses a
// DaemonSet in tenant acme and accepts one in system. Leaves the DaemonSet
// system/kube-system/log-agent in tp2.
func testKubectl(t *testing.T, m *mission) {
	k := newKubectl(t, m.kubeconfigs["tp2"])

	var svc map[string]any
	out := k.must("get", "--raw", "/api/v1/tenants/acme/namespaces/default/services/web")
	if err := json.Unmarshal([]byte(out), &svc); err != nil {
		t.Fatalf("get --raw: %v: %s", err, out)
	}
	if field(svc, "metadata", "tenant") != "acme" || field(svc, "spec", "clusterIP") != acmeWeb {
		t.Fatalf("acme's web from tp2: tenant %v clusterIP %v, want acme %s", field(svc, "metadata", "tenant"), field(svc, "spec", "clusterIP"), acmeWeb)
	}
	// The same tenant/namespace/name in tp3 is zeta's, not acme's: acme
	// lives in tp2 only.
	k3 := newKubectl(t, m.kubeconfigs["tp3"])
	k3.fails("NotFound", "get", "--raw", "/api/v1/tenants/acme/namespaces/default/services/web")
	if err := json.Unmarshal([]byte(k3.must("get", "--raw", "/api/v1/tenants/zeta/namespaces/default/services/web")), &svc); err != nil {
		t.Fatal(err)
	}
	if field(svc, "metadata", "tenant") != "zeta" || field(svc, "spec", "clusterIP") != zetaWeb {
		t.Fatalf("zeta's web from tp3: tenant %v clusterIP %v", field(svc, "metadata", "tenant"), field(svc, "spec", "clusterIP"))
	}

	// A DaemonSet in regular tenant acme, by its Arktos path, with and
	// without metadata.tenant in the body: refused by admission.
	for _, body := range []string{dsJSON("", "default", "log-agent"), dsJSON("acme", "default", "log-agent")} {
		k.fails(dsMessage, "create", "--raw", "/apis/apps/v1/tenants/acme/namespaces/default/daemonsets", "-f", writeFile(t, "ds.json", body))
	}
	// kubectl apply sends to the short path, which means tenant system: a
	// manifest saying tenant acme is refused there too, not created in
	// system under acme's name.
	k.fails("the tenant of the provided object does not match the tenant sent on the request", "apply", "-f", writeFile(t, "ds-acme.json", dsJSON("acme", "default", "log-agent")))
	var list map[string]any
	if err := json.Unmarshal([]byte(k.must("get", "--raw", "/apis/apps/v1/tenants/acme/daemonsets")), &list); err != nil {
		t.Fatal(err)
	}
	if items, _ := list["items"].([]any); len(items) != 0 {
		t.Fatalf("tenant acme has DaemonSets after refusals: %v", items)
	}

	// In the system tenant, kubectl apply creates it, and kubectl sees it
	// next to the seeded node-agent.
	out = k.must("apply", "-f", writeFile(t, "ds-system.json", dsJSON("system", "kube-system", "log-agent")))
	if !strings.Contains(out, "daemonset.apps/log-agent created") {
		t.Fatalf("kubectl apply in system: %s", out)
	}
	out = k.must("get", "daemonsets", "-n", "kube-system", "-o", "name")
	if got := strings.Fields(out); !slices.Equal(got, []string{"daemonset.apps/log-agent", "daemonset.apps/node-agent"}) {
		t.Fatalf("kubectl get daemonsets -n kube-system: %q", got)
	}
	ds := rawGet(t, m.kubeconfigs["tp2"], "/apis/apps/v1/tenants/system/namespaces/kube-system/daemonsets/log-agent")
	if field(ds, "metadata", "tenant") != "system" {
		t.Fatalf("applied DaemonSet: metadata.tenant %v", field(ds, "metadata", "tenant"))
	}
}

// testDNS: partition-dns over real UDP and TCP packets. Leaves nothing.
func testDNS(t *testing.T, m *mission) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			for _, c := range []struct {
				name, from, want string
			}{
				// The same namespace/name in two tenants of two TPs: each
				// tenant's own cluster IP.
				{"web.default.acme.svc.cluster.local", "", "NOERROR " + acmeWeb},
				{"web.default.zeta.svc.cluster.local", "", "NOERROR " + zetaWeb},
				// Regular tenants have only the tenant form.
				{"web.default.svc.cluster.local", "", "NXDOMAIN"},
				// The legacy name is the system tenant's, answered from the
				// querier's TP: tp1 for an unknown source (the default
				// --system-partition), else the TP of the pod asking.
				{"kube-dns.kube-system.svc.cluster.local", "", "NOERROR " + kubeDNSTP1},
				{"kube-dns.kube-system.svc.cluster.local", podTP1, "NOERROR " + kubeDNSTP1},
				{"kube-dns.kube-system.svc.cluster.local", podTP2, "NOERROR " + kubeDNSTP2},
				{"kube-dns.kube-system.system.svc.cluster.local", podTP2, "NOERROR " + kubeDNSTP2},
				{"missing.default.acme.svc.cluster.local", "", "NXDOMAIN"},
				{"web.default.nobody.svc.cluster.local", "", "NXDOMAIN"},
			} {
				r := query(t, m.dns.addr, network, c.from, c.name, dns.TypeA)
				if got := answer(r); got != c.want {
					t.Errorf("%s from %q: %q, want %q", c.name, c.from, got, c.want)
				}
				if !r.Authoritative {
					t.Errorf("%s: not authoritative", c.name)
				}
				if r.Rcode == dns.RcodeNameError {
					if len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA || r.Ns[0].Header().Name != "cluster.local." {
						t.Errorf("%s: NXDOMAIN without the zone's SOA in authority: %v", c.name, r.Ns)
					}
				}
			}
		})
	}
}

// testChange: objects created and deleted with kubectl appear in and
// vanish from partition-dns's answers. Leaves nothing.
func testChange(t *testing.T, m *mission) {
	k := newKubectl(t, m.kubeconfigs["tp2"])
	const name, ip = "api.default.acme.svc.cluster.local", "10.96.20.2"
	if got := answer(query(t, m.dns.addr, "udp", "", name, dns.TypeA)); got != "NXDOMAIN" {
		t.Fatalf("%s before its creation: %q", name, got)
	}
	svc := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"api","namespace":"default"},` +
		`"spec":{"clusterIP":"` + ip + `","clusterIPs":["` + ip + `"],"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}}`
	k.must("create", "--raw", "/api/v1/tenants/acme/namespaces/default/services", "-f", writeFile(t, "svc.json", svc))
	testbin.Eventually(t, name+" to answer "+ip, func() bool {
		return answer(query(t, m.dns.addr, "udp", "", name, dns.TypeA)) == "NOERROR "+ip
	})
	if got := answer(query(t, m.dns.addr, "tcp", "", name, dns.TypeA)); got != "NOERROR "+ip {
		t.Fatalf("%s over TCP after UDP answered: %q", name, got)
	}
	// The new service is acme's only: zeta's same name stays unknown.
	if got := answer(query(t, m.dns.addr, "udp", "", "api.default.zeta.svc.cluster.local", dns.TypeA)); got != "NXDOMAIN" {
		t.Fatalf("zeta's api: %q", got)
	}
	k.must("delete", "--raw", "/api/v1/tenants/acme/namespaces/default/services/api")
	testbin.Eventually(t, name+" to become NXDOMAIN after its deletion", func() bool {
		return answer(query(t, m.dns.addr, "udp", "", name, dns.TypeA)) == "NXDOMAIN"
	})
	if got := answer(query(t, m.dns.addr, "udp", "", "web.default.acme.svc.cluster.local", dns.TypeA)); got != "NOERROR "+acmeWeb {
		t.Fatalf("acme's web after deleting its api: %q", got)
	}
}

// testLibraries wires the library parts as a node would, in this process,
// against the same fake-tp TPs: the kube-proxy view and the kubelet's
// configmap manager with the origin tracker. Leaves nothing (its clients
// stop when it ends).
func testLibraries(t *testing.T, m *mission) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lib := startNodeLibraries(t, partition.Options{KubeconfigPaths: []string{m.kubeconfigs["tp1"], m.kubeconfigs["tp2"], m.kubeconfigs["tp3"]}},
		kubeproxyk8s.SourceOptions{}, tporigink8s.WireOptions{NodeName: "node-1"})
	set, view, tracker := lib.set, lib.view, lib.tracker
	var names []string
	for _, p := range set.Partitions() {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"tp1", "tp2", "tp3"}) {
		t.Fatalf("partition names from the kubeconfigs: %v", names)
	}

	t.Run("kubeproxy", func(t *testing.T) {
		s := view.Snapshot()
		var keys []string
		for k := range s.ServiceNames() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		// Keys carry the TP as Arktos does: its position in the kubeconfig
		// list (tp1 is 0). Every TP has its master service kubernetes.
		want := []string{
			"acme_1/default/web", "system_0/default/kubernetes", "system_0/kube-system/kube-dns",
			"system_1/default/kubernetes", "system_1/kube-system/kube-dns", "system_2/default/kubernetes", "zeta_2/default/web",
		}
		if !slices.Equal(keys, want) {
			t.Fatalf("services in the snapshot:\n got %q\nwant %q", keys, want)
		}
		for _, c := range []struct {
			tp, clusterIP string
			endpoints     []string
		}{
			{"tp1", kubeDNSTP1, []string{"10.244.1.2:53", "10.244.1.3:53"}},
			{"tp2", kubeDNSTP2, []string{"10.244.2.2:53"}},
		} {
			id, ok := kubeproxyk8s.PartitionsOf(set).ID(c.tp)
			if !ok {
				t.Fatalf("no TP %s", c.tp)
			}
			n := kubeproxy.ServicePortName{
				ServiceName: kubeproxy.ServiceName{TenantPartitionID: id, Tenant: "system", Namespace: "kube-system", Name: "kube-dns"},
				Port:        "dns",
			}
			if want := fmt.Sprintf("system_%d/kube-system/kube-dns:dns", id); n.String() != want {
				t.Errorf("port name %q, want %q", n, want)
			}
			p, ok := s.Port(n)
			if !ok {
				t.Fatalf("no %s in the snapshot", n)
			}
			if len(p.ClusterIPs) != 1 || p.ClusterIPs[0].String() != c.clusterIP {
				t.Errorf("%s cluster IPs %v, want %s", n, p.ClusterIPs, c.clusterIP)
			}
			var eps []string
			for _, e := range p.Endpoints {
				eps = append(eps, e.AddrPort().String())
			}
			if !slices.Equal(eps, c.endpoints) {
				t.Errorf("%s endpoints %v, want only its own TP's %v", n, eps, c.endpoints)
			}
		}
	})

	t.Run("tporigin-objectkey", func(t *testing.T) {
		// The node's pods as the kubelet sees them: the node-agent pod of
		// tp1 and of tp2, equal in tenant, namespace and name, with their
		// own UIDs.
		pods := map[string]*corev1.Pod{}
		for _, tp := range []string{"tp1", "tp2"} {
			p, _ := set.Get(tp)
			list, err := partitiontest.Clientset(t, p).CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-1"})
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				if list.Items[i].Name == "node-agent-x7k2p" {
					pods[tp] = &list.Items[i]
				}
			}
			if pods[tp] == nil {
				t.Fatalf("no node-agent pod on node-1 in %s", tp)
			}
			if tenancy.TenantOf(pods[tp]) != "system" || pods[tp].Namespace != "kube-system" {
				t.Fatalf("%s's pod: tenant %q namespace %q", tp, tenancy.TenantOf(pods[tp]), pods[tp].Namespace)
			}
			if got, ok := tracker.OriginOf(string(pods[tp].UID)); !ok || got != tp {
				t.Fatalf("origin of %s's pod %s: %q %v", tp, pods[tp].UID, got, ok)
			}
		}
		chooser := tporigin.NewClientChooser(tracker)
		// tp2's pod first: the answer must never be tp1's object of the
		// same name.
		for _, tp := range []string{"tp2", "tp1", "tp2"} {
			cm, err := podConfigMap(ctx, t, set, chooser, tenancy.TenantOf(pods[tp]), pods[tp].Namespace, "node-agent-config", string(pods[tp].UID))
			if err != nil {
				t.Fatalf("GetConfigMap for %s's pod: %v", tp, err)
			}
			if cm.Data["partition"] != tp || tenancy.TenantOf(cm) != "system" {
				t.Errorf("%s's pod got the configmap of %q (tenant %q), want its own TP's", tp, cm.Data["partition"], tenancy.TenantOf(cm))
			}
		}
	})
}

var webhookAddr = regexp.MustCompile(`"Serving admission webhook".* address="([^"]+)"`)

// testWebhook: tp-admission-webhook, the same DaemonSet rule for a real
// API server, decides as fake-tp did on the DaemonSet that fake-tp stores.
// Leaves nothing: the webhook is stopped with SIGTERM.
func testWebhook(t *testing.T, m *mission) {
	dir := t.TempDir()
	w := start(t, "tp-admission-webhook", "tp-admission-webhook", "--listen", "127.0.0.1:0", "--self-signed-dir", dir)
	match := webhookAddr.FindStringSubmatch(strings.Join(w.WaitOutput(t, `"Serving admission webhook"`, 1), "\n"))
	if match == nil {
		t.Fatalf("no address in the webhook's log:\n%s", w.Output())
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no certificate in the webhook's CA bundle")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	// The seeded DaemonSet as tp1 stores it (metadata.tenant system), and
	// the same object moved to tenant acme.
	stored := rawGet(t, m.kubeconfigs["tp1"], "/apis/apps/v1/tenants/system/namespaces/kube-system/daemonsets/node-agent")
	if field(stored, "metadata", "tenant") != "system" {
		t.Fatalf("stored DaemonSet: metadata.tenant %v", field(stored, "metadata", "tenant"))
	}
	for _, c := range []struct {
		tenant, user string
		allowed      bool
	}{
		{"system", `{"username":"admin","groups":["system:masters","system:authenticated"]}`, true},
		{"acme", `{"username":"alice","groups":["system:authenticated"],"extra":{"tenant":["acme"]}}`, false},
	} {
		stored["metadata"].(map[string]any)["tenant"] = c.tenant
		obj, _ := json.Marshal(stored)
		review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"review-%s",`+
			`"kind":{"group":"apps","version":"v1","kind":"DaemonSet"},"resource":{"group":"apps","version":"v1","resource":"daemonsets"},`+
			`"namespace":"kube-system","name":"node-agent","operation":"CREATE","userInfo":%s,"object":%s}}`, c.tenant, c.user, obj)
		resp, err := client.Post("https://"+match[1]+"/validate", "application/json", strings.NewReader(review))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Response struct {
				UID     string
				Allowed bool
				Status  struct{ Message string }
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("review of tenant %s: %d %v", c.tenant, resp.StatusCode, err)
		}
		if out.Response.UID != "review-"+c.tenant || out.Response.Allowed != c.allowed {
			t.Errorf("DaemonSet in tenant %s: %+v, want allowed=%v", c.tenant, out.Response, c.allowed)
		}
		if !c.allowed && !strings.Contains(out.Response.Status.Message, dsMessage) {
			t.Errorf("DaemonSet in tenant %s: message %q lacks %q", c.tenant, out.Response.Status.Message, dsMessage)
		}
	}
	if err := w.Signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("tp-admission-webhook after SIGTERM: %v", err)
	}
}

// testOutage kills tp3's fake-tp (SIGKILL: no goodbye on any connection).
// partition-dns keeps answering zeta's name from tp3's last known records,
// never NXDOMAIN, stays ready, and reports tp3 as stale. Leaves tp3 dead.
func testOutage(t *testing.T, m *mission) {
	if err := m.tp3.Signal(t, syscall.SIGKILL); err == nil {
		t.Fatal("fake-tp tp3 exited with status 0 after SIGKILL")
	}
	const zeta = "web.default.zeta.svc.cluster.local"
	testbin.Eventually(t, "/readyz/partitions to report tp3 stale", func() bool {
		// Every answer while partition-dns notices the outage is the
		// last known one.
		if got := answer(query(t, m.dns.addr, "udp", "", zeta, dns.TypeA)); got != "NOERROR "+zetaWeb {
			t.Fatalf("%s during tp3's outage: %q, want %q", zeta, got, "NOERROR "+zetaWeb)
		}
		_, body := httpGet(m.dns.health + "/readyz/partitions")
		return strings.Contains(body, "tp3: stale")
	})
	_, body := httpGet(m.dns.health + "/readyz/partitions")
	for _, want := range []string{"tp1: ok", "tp2: ok", "tp3: stale (unreachable; serving its last known records)"} {
		if !strings.Contains(body, want) {
			t.Errorf("/readyz/partitions lacks %q:\n%s", want, body)
		}
	}
	if code, body := httpGet(m.dns.health + "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz during a TP outage: %d %s; a stale TP must not make the server unready", code, body)
	}
	for _, network := range []string{"udp", "tcp"} {
		for name, want := range map[string]string{zeta: zetaWeb, "web.default.acme.svc.cluster.local": acmeWeb} {
			if got := answer(query(t, m.dns.addr, network, "", name, dns.TypeA)); got != "NOERROR "+want {
				t.Errorf("%s over %s with tp3 down: %q, want %q", name, network, got, "NOERROR "+want)
			}
		}
	}
	_, metrics := httpGet(m.dns.metrics + "/metrics")
	for _, want := range []string{
		`tpkit_dns_partition_stale{partition="tp3"} 1`,
		`tpkit_dns_partition_stale{partition="tp1"} 0`,
		`tpkit_partition_reachable{partition="tp3"} 0`,
		`tpkit_partition_reachable{partition="tp2"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// testStartDuringOutage starts a second partition-dns while tp3 is down, as
// on a node that boots during an outage: after --partition-sync-timeout it
// is ready and answers from the TPs it reached, and says tp3 has not synced.
// Leaves it running (m.late) for testReturn.
func testStartDuringOutage(t *testing.T, m *mission) {
	if !m.tp3.Exited() {
		t.Skip("tp3 was not stopped by the outage subtest")
	}
	m.late = m.startDNS(t, "partition-dns (started during the outage)", "--partition-sync-timeout", "1s")
	for _, network := range []string{"udp", "tcp"} {
		for _, c := range []struct{ name, from, want string }{
			{"web.default.acme.svc.cluster.local", "", "NOERROR " + acmeWeb},
			{"kube-dns.kube-system.svc.cluster.local", podTP2, "NOERROR " + kubeDNSTP2},
		} {
			if got := answer(query(t, m.late.addr, network, c.from, c.name, dns.TypeA)); got != c.want {
				t.Errorf("%s over %s: %q, want %q", c.name, network, got, c.want)
			}
		}
	}
	_, body := httpGet(m.late.health + "/readyz/partitions")
	for _, want := range []string{"tp1: ok", "tp2: ok", "tp3: not synced"} {
		if !strings.Contains(body, want) {
			t.Errorf("/readyz/partitions lacks %q:\n%s", want, body)
		}
	}
}

// testReturn restarts tp3's fake-tp on the same port and data: both
// partition-dns servers report tp3 ok, the one started during the outage
// learns tp3's records, and a change made in tp3 after its return reaches
// both. Leaves tp3 running with zeta's service api.
func testReturn(t *testing.T, m *mission) {
	if !m.tp3.Exited() {
		t.Skip("tp3 was not stopped by the outage subtest")
	}
	m.tp3 = startOwned(t, m.t, "fake-tp tp3 (restarted)", "fake-tp", m.tp3Args...)
	m.tp3.WaitOutput(t, `"Serving tenant partition"`, 1)
	servers := []*dnsServer{m.dns}
	if m.late != nil {
		servers = append(servers, m.late)
	}
	for _, d := range servers {
		testbin.Eventually(t, d.Label+" to report tp3 ok", func() bool {
			_, body := httpGet(d.health + "/readyz/partitions")
			return strings.Contains(body, "tp3: ok")
		})
	}
	// The change goes through client-go (tenancy's transport), so this
	// subtest runs where kubectl is not installed.
	cfg, err := clientcmd.BuildConfigFromFlags("", m.kubeconfigs["tp3"])
	if err != nil {
		t.Fatal(err)
	}
	cs, err := partitiontest.NewClients(tenancyk8s.WrapConfig(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	const name, ip = "api.default.zeta.svc.cluster.local", "10.96.30.2"
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}},
	}
	created, err := cs.CoreV1().Services("default").Create(tenancyk8s.WithTenant(context.Background(), "zeta"), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tenancy.TenantOf(created) != "zeta" {
		t.Fatalf("created service: tenant %q", tenancy.TenantOf(created))
	}
	for _, d := range servers {
		testbin.Eventually(t, d.Label+": "+name+" to answer "+ip, func() bool {
			return answer(query(t, d.addr, "udp", "", name, dns.TypeA)) == "NOERROR "+ip
		})
		if got := answer(query(t, d.addr, "tcp", "", "web.default.zeta.svc.cluster.local", dns.TypeA)); got != "NOERROR "+zetaWeb {
			t.Errorf("%s: zeta's web after tp3's return: %q", d.Label, got)
		}
		_, metrics := httpGet(d.metrics + "/metrics")
		for _, want := range []string{`tpkit_dns_partition_stale{partition="tp3"} 0`, `tpkit_partition_reachable{partition="tp3"} 1`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("%s: /metrics lacks %q", d.Label, want)
			}
		}
	}
}

// testStop: SIGTERM stops partition-dns and every fake-tp still running
// with exit status 0.
func testStop(t *testing.T, m *mission) {
	procs := []*proc{m.dns.proc}
	if m.late != nil {
		procs = append(procs, m.late.proc)
	}
	for _, p := range procs {
		if err := p.Signal(t, syscall.SIGTERM); err != nil {
			t.Errorf("%s after SIGTERM: %v", p.Label, err)
		}
	}
	for _, p := range []*proc{m.tp12, m.tp3} {
		if p.Exited() {
			continue
		}
		if err := p.Signal(t, syscall.SIGTERM); err != nil {
			t.Errorf("%s after SIGTERM: %v", p.Label, err)
		}
		if !strings.Contains(p.Output(), `"Stopped"`) {
			t.Errorf("%s logged no clean stop", p.Label)
		}
	}
}
