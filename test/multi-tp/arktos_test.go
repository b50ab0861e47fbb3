//go:build linux

package multitp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/testbed/kubeproxyk8s"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
	tporigink8s "github.com/tpkit-dev/tpkit/testbed/tporigink8s"
)

// TestArktosTPs checks partition-dns against two tenant partitions set up as
// the Arktos recordings (testbed/faketp/testdata/arktos) show them: tenant
// acme in tp1 and zeta in tp2, created through POST /api/v1/tenants with
// spec.storageClusterId; the same namespace and service names in both; the
// system tenant's kube-dns in both; core/v1 Endpoints with a hostname and a
// not-ready address; querier pods bound with a Binding and made ready with a
// status patch. Everything is written through Arktos's tenant paths, nothing
// through a short path that a fake could read more generously than Arktos
// does.
//
// By default the TPs are two fake-tp processes in their default mode. With
// ARKTOS_BIN set to a folder holding Arktos's kube-apiserver (make
// check-arktos; make arktos-src STOCK_BIN=DIR builds one) they are two real
// Arktos TPs started by hack/arktos-lab.sh, and the check also holds
// partition-dns to answering a new service within 3 seconds.
func TestArktosTPs(t *testing.T) {
	tps := startArktosTPs(t)
	facts := seedArktos(t, tps)
	d := startPartitionDNS(t, t, "partition-dns", tps.kubeconfigs[0]+","+tps.kubeconfigs[1], "--zone", "cluster.local,in-addr.arpa",
		// Pages of 2: every list is paged (limit and continue), as Arktos serves them.
		"--list-page-size", "2")

	t.Run("synced-metric", func(t *testing.T) {
		_, body := httpGet(d.metrics + "/metrics")
		for _, tp := range []string{"tp1", "tp2"} {
			if want := fmt.Sprintf("tpkit_partition_synced{partition=%q} 1", tp); !strings.Contains(body, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
		_, parts := httpGet(d.health + "/readyz/partitions")
		for _, tp := range []string{"tp1", "tp2"} {
			if want := tp + ": ok (endpoints from endpoints)"; !strings.Contains(parts, want) {
				t.Errorf("/readyz/partitions lacks %q:\n%s", want, parts)
			}
		}
	})

	t.Run("names", func(t *testing.T) {
		for _, c := range []struct {
			from, name string
			qtype      uint16
			want       string
		}{
			{"", "api.web.acme.svc.cluster.local", dns.TypeA, "NOERROR " + facts.acmeAPI},
			{"", "api.web.zeta.svc.cluster.local", dns.TypeA, "NOERROR " + facts.zetaAPI},
			// Headless from Endpoints: the ready address only.
			{"", "db.web.acme.svc.cluster.local", dns.TypeA, "NOERROR 10.244.1.5"},
			{"", "db-0.db.web.acme.svc.cluster.local", dns.TypeA, "NOERROR 10.244.1.5"},
			{"", "10-244-1-6.db.web.acme.svc.cluster.local", dns.TypeA, "NXDOMAIN"},
			{"", "_mysql._tcp.db.web.acme.svc.cluster.local", dns.TypeSRV, "NOERROR SRV"},
			{"", "_http._tcp.api.web.zeta.svc.cluster.local", dns.TypeSRV, "NOERROR SRV"},
			{"", reverse(facts.acmeAPI), dns.TypePTR, "NOERROR PTR"},
			// The system service from the querying pod's own TP.
			{"127.0.0.11", "kube-dns.kube-system.svc.cluster.local", dns.TypeA, "NOERROR " + facts.kubeDNS[0]},
			{"127.0.0.12", "kube-dns.kube-system.svc.cluster.local", dns.TypeA, "NOERROR " + facts.kubeDNS[1]},
			{"", "api.web.nosuch.svc.cluster.local", dns.TypeA, "NXDOMAIN"},
		} {
			for _, network := range []string{"udp", "tcp"} {
				r := query(t, d.addr, network, c.from, c.name, c.qtype)
				if got := answer(r); got != c.want {
					t.Errorf("%s %s from %q over %s: %q, want %q", dns.TypeToString[c.qtype], c.name, c.from, network, got, c.want)
				}
				if c.qtype == dns.TypePTR && len(r.Answer) == 1 && r.Answer[0].(*dns.PTR).Ptr != "api.web.acme.svc.cluster.local." {
					t.Errorf("PTR %s: %s", c.name, r.Answer[0])
				}
				if c.qtype == dns.TypeSRV && strings.HasPrefix(c.name, "_mysql") && len(r.Answer) == 1 && r.Answer[0].(*dns.SRV).Target != "db-0.db.web.acme.svc.cluster.local." {
					t.Errorf("SRV %s: %s", c.name, r.Answer[0])
				}
			}
		}
	})

	t.Run("kubeproxy-tporigin-objectkey", func(t *testing.T) { testArktosLibraries(t, tps, facts) })

	t.Run("new-service", func(t *testing.T) {
		began := time.Now()
		ip := tps.createService(t, 1, "zeta", "web", "fresh")
		testbin.Eventually(t, "fresh.web.zeta to resolve", func() bool {
			return answer(query(t, d.addr, "udp", "", "fresh.web.zeta.svc.cluster.local", dns.TypeA)) == "NOERROR "+ip
		})
		took := time.Since(began)
		t.Logf("a new service of %s was answered %v after its create request", tps.kind, took.Round(time.Millisecond))
		// Only against real Arktos: on shared test machines a timing
		// limit would make make test flaky, and fake-tp is not what is
		// measured.
		if tps.kind == "arktos" && took > 3*time.Second {
			t.Errorf("a new service took %v to be answered, want at most 3s", took)
		}
	})

	t.Run("tp2-stopped", func(t *testing.T) {
		tps.stop(t, 1)
		testbin.Eventually(t, "tp2 to show stale", func() bool {
			_, body := httpGet(d.health + "/readyz/partitions")
			return strings.Contains(body, "tp2: stale")
		})
		if code, body := httpGet(d.health + "/readyz"); code != http.StatusOK {
			t.Errorf("/readyz with tp2 stopped: %d %s", code, body)
		}
		for name, want := range map[string]string{
			"api.web.zeta.svc.cluster.local": "NOERROR " + facts.zetaAPI,
			"api.web.acme.svc.cluster.local": "NOERROR " + facts.acmeAPI,
		} {
			if got := answer(query(t, d.addr, "udp", "", name, dns.TypeA)); got != want {
				t.Errorf("%s with tp2 stopped: %q, want %q", name, got, want)
			}
		}
		ip := tps.createService(t, 0, "acme", "web", "during")
		testbin.Eventually(t, "tp1's new service while tp2 is stopped", func() bool {
			return answer(query(t, d.addr, "udp", "", "during.web.acme.svc.cluster.local", dns.TypeA)) == "NOERROR "+ip
		})
	})
}

// arktosFacts are the values the seed left that the checks compare with.
type arktosFacts struct {
	acmeAPI, zetaAPI string    // cluster IPs of acme/web/api (tp1), zeta/web/api (tp2)
	kubeDNS          [2]string // system/kube-system/kube-dns in tp1, tp2
	// pods are the UIDs of the querier pods, bound to node-1: acme's
	// client in tp1 (127.0.0.11) and a system pod in tp2 (127.0.0.12),
	// scheduled by a Binding and made ready as a kubelet would, as in the
	// recorded samples 95 and 96.
	pods [2]string
}

// arktosTPs are the two TPs of TestArktosTPs and TestArktosRestarts.
type arktosTPs struct {
	kind        string // "fake-tp" or "arktos"
	kubeconfigs [2]string
	stop        func(t *testing.T, i int)
	// restart kills TP i's API server and starts it again on the same
	// port and data, having compacted its store first when compact is set;
	// it returns once the TP answers again, and when.
	restart func(t *testing.T, i int, compact bool) time.Time
}

// startArktosTPs starts two fake-tp processes or, with ARKTOS_BIN, two real
// Arktos TPs.
func startArktosTPs(t *testing.T) *arktosTPs {
	if bin := os.Getenv("ARKTOS_BIN"); bin != "" {
		return startRealArktos(t, bin)
	}
	tps := &arktosTPs{kind: "fake-tp"}
	var (
		procs [2]*proc
		args  [2][]string
		admin [2]string
	)
	for i, name := range []string{"tp1", "tp2"} {
		dir := t.TempDir()
		// A fixed port and a --data-dir, so that a restart comes back
		// where its clients look, with its objects.
		admin[i] = freePort(t)
		args[i] = []string{"--partition-names", name, "--listen", freePort(t), "--kubeconfig-dir", dir,
			"--data-dir", filepath.Join(dir, "data"), "--admin-listen", admin[i]}
		procs[i] = start(t, "fake-tp "+name, "fake-tp", args[i]...)
		tps.kubeconfigs[i] = filepath.Join(dir, name+".kubeconfig")
	}
	for _, p := range procs {
		p.WaitOutput(t, `"Serving tenant partition"`, 1)
	}
	tps.stop = func(t *testing.T, i int) { _ = procs[i].Signal(t, syscall.SIGKILL) }
	tps.restart = func(rt *testing.T, i int, compact bool) time.Time {
		rt.Helper()
		_ = procs[i].Signal(rt, syscall.SIGKILL)
		procs[i] = start(t, fmt.Sprintf("fake-tp tp%d (restarted)", i+1), "fake-tp", args[i]...)
		procs[i].WaitOutput(rt, `"Serving tenant partition"`, 1)
		if compact {
			// fake-tp keeps its history in --data-dir: compacting the
			// restarted store expires every version from before, as
			// Arktos's restarted watch cache does, and any watch that has
			// reconnected meanwhile ends with 410 Expired. fake-tp opens
			// its admin listener after the TPs: wait for it, or the post
			// can find nothing listening yet.
			procs[i].WaitOutput(rt, `"Serving operational endpoints"`, 1)
			resp, err := http.Post(fmt.Sprintf("http://%s/tps/tp%d/compact", admin[i], i+1), "", nil)
			if err != nil {
				rt.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				rt.Fatalf("compacting tp%d: %s", i+1, resp.Status)
			}
		}
		return time.Now()
	}
	return tps
}

// startRealArktos runs hack/arktos-lab.sh up 2 (LAB_SH names another script
// with its interface) and stops the TPs at the end.
func startRealArktos(t *testing.T, bin string) *arktosTPs {
	lab := os.Getenv("LAB_SH")
	if lab == "" {
		root, err := testbin.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		lab = filepath.Join(root, "hack", "arktos-lab.sh")
	}
	dir := t.TempDir()
	up := exec.Command(lab, "up", "2", dir)
	up.Env = append(os.Environ(), "ARKTOS_BIN="+bin)
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("%s up 2 %s: %v\n%s", lab, dir, err, out)
	}
	// The lab writes the pids of tp1's etcd and API server, then tp2's;
	// restarts replace the API servers'.
	pids := testbin.LabPIDs(filepath.Join(dir, "pids"))
	if len(pids) < 4 {
		t.Fatalf("%s recorded %d pids, want 4", lab, len(pids))
	}
	apiservers := [2]int{pids[1], pids[3]}
	t.Cleanup(func() {
		if out, err := exec.Command(lab, "down", dir).CombinedOutput(); err != nil {
			t.Logf("%s down: %v\n%s", lab, err, out)
		}
		// A restarted API server is not in the lab's list, and a lab
		// script named by LAB_SH may not wait for what it signals: make
		// sure none is left.
		for _, pid := range append(testbin.LabPIDs(filepath.Join(dir, "pids")), apiservers[:]...) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	tps := &arktosTPs{kind: "arktos", kubeconfigs: [2]string{filepath.Join(dir, "kc", "tp1.kubeconfig"), filepath.Join(dir, "kc", "tp2.kubeconfig")}}
	tps.stop = func(t *testing.T, i int) {
		if err := syscall.Kill(apiservers[i], syscall.SIGKILL); err != nil {
			t.Fatalf("stopping the API server of tp%d: %v", i+1, err)
		}
	}
	tps.restart = func(rt *testing.T, i int, compact bool) time.Time {
		rt.Helper()
		apiservers[i] = restartAPIServer(rt, apiservers[i], filepath.Join(dir, fmt.Sprintf("tp%d", i+1)), compact)
		return time.Now()
	}
	return tps
}

// restartAPIServer kills the Arktos API server pid and starts it again with
// the same command line, its output appended to tpDir/apiserver.log; with
// compact, its etcd is compacted meanwhile, at a revision no client has
// seen. It returns the new pid once /healthz answers ok.
func restartAPIServer(t *testing.T, pid int, tpDir string, compact bool) int {
	t.Helper()
	args, err := testbin.Cmdline(pid)
	if err != nil {
		t.Fatal(err)
	}
	var etcd, port string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			etcd = v
		}
		if v, ok := strings.CutPrefix(a, "--insecure-port="); ok {
			port = v
		}
	}
	if etcd == "" || port == "" {
		t.Fatalf("the API server's command line lacks --etcd-servers or --insecure-port: %q", args)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the API server: %v", err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if compact {
		compactEtcd(t, etcd)
	}
	log, err := os.OpenFile(filepath.Join(tpDir, "apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the API server again: %v", err)
	}
	go func() { _ = cmd.Wait() }()
	testbin.Eventually(t, "the restarted API server to be healthy", func() bool {
		code, _ := httpGet("http://127.0.0.1:" + port + "/healthz")
		return code == http.StatusOK
	})
	return cmd.Process.Pid
}

// compactEtcd writes a key that no client watches into the etcd at url (v3
// JSON gateway), so that every version a client holds is older than the
// store's, and compacts at that revision.
func compactEtcd(t *testing.T, url string) {
	t.Helper()
	post := func(path, body string) map[string]any {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("etcd %s: %v", path, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("etcd %s: %s %v %v", path, resp.Status, out, err)
		}
		return out
	}
	put := post("/v3/kv/put", `{"key":"L3Rwa2l0L3Jlc3RhcnQ=","value":"MQ=="}`) // /tpkit/restart = 1
	rev, _ := field(put, "header", "revision").(string)
	if rev == "" {
		t.Fatalf("etcd put: no revision in %v", put)
	}
	post("/v3/kv/compaction", `{"revision":"`+rev+`","physical":true}`)
}

// seedArktos writes the scenario into both TPs through their tenant paths,
// and returns the facts the checks need.
func seedArktos(t *testing.T, tps *arktosTPs) arktosFacts {
	t.Helper()
	var f arktosFacts
	for i, tenant := range []string{"acme", "zeta"} {
		tps.write(t, i, "POST", "/api/v1/tenants", fmt.Sprintf(`{"apiVersion":"v1","kind":"Tenant","metadata":{"name":%q},"spec":{"storageClusterId":"0"}}`, tenant))
		tps.write(t, i, "POST", "/api/v1/tenants/"+tenant+"/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"web"}}`)
		ip := tps.createService(t, i, tenant, "web", "api")
		tps.write(t, i, "POST", "/api/v1/tenants/"+tenant+"/namespaces/web/endpoints",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"api"},"subsets":[{"addresses":[{"ip":"10.244.%d.7"}],"ports":[{"name":"http","port":8080}]}]}`, i+1))
		if i == 0 {
			f.acmeAPI = ip
		} else {
			f.zetaAPI = ip
		}
		dnsSvc := tps.write(t, i, "POST", "/api/v1/tenants/system/namespaces/kube-system/services",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"kube-dns","labels":{"k8s-app":"kube-dns"}},"spec":{"selector":{"k8s-app":"kube-dns"},"ports":[{"name":"dns","port":53,"protocol":"UDP"},{"name":"dns-tcp","port":53,"protocol":"TCP"}]}}`)
		f.kubeDNS[i], _ = field(dnsSvc, "spec", "clusterIP").(string)
	}
	f.pods[0] = tps.readyPod(t, 0, "acme", "web", "client", "127.0.0.11")
	f.pods[1] = tps.readyPod(t, 1, "system", "default", "agent", "127.0.0.12")
	// acme's headless db in tp1, with hand-written Endpoints (its service
	// has no selector, so no controller touches them).
	tps.write(t, 0, "POST", "/api/v1/tenants/acme/namespaces/web/services",
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"db"},"spec":{"clusterIP":"None","ports":[{"name":"mysql","port":3306}]}}`)
	tps.write(t, 0, "POST", "/api/v1/tenants/acme/namespaces/web/endpoints",
		`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"db"},"subsets":[{"addresses":[{"ip":"10.244.1.5","hostname":"db-0"}],"notReadyAddresses":[{"ip":"10.244.1.6","hostname":"db-1"}],"ports":[{"name":"mysql","port":3306}]}]}`)
	return f
}

// createService creates a selector-less ClusterIP service with port http 80
// in tenant/ns of TP i and returns the cluster IP the TP gave it.
func (a *arktosTPs) createService(t *testing.T, i int, tenant, ns, name string) string {
	t.Helper()
	svc := a.write(t, i, "POST", "/api/v1/tenants/"+tenant+"/namespaces/"+ns+"/services",
		fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":%q},"spec":{"ports":[{"name":"http","port":80}]}}`, name))
	ip, _ := field(svc, "spec", "clusterIP").(string)
	if ip == "" {
		t.Fatalf("service %s/%s/%s got no cluster IP: %v", tenant, ns, name, svc)
	}
	return ip
}

// readyPod creates a pod, binds it to node-1 and patches its status to
// Running and Ready with ip; it returns the pod's UID.
func (a *arktosTPs) readyPod(t *testing.T, i int, tenant, ns, name, ip string) string {
	t.Helper()
	base := "/api/v1/tenants/" + tenant + "/namespaces/" + ns + "/pods"
	pod := a.write(t, i, "POST", base, fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}`, name))
	a.write(t, i, "POST", base+"/"+name+"/binding", fmt.Sprintf(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":%q},"target":{"apiVersion":"v1","kind":"Node","name":"node-1"}}`, name))
	a.write(t, i, "PATCH", base+"/"+name+"/status", fmt.Sprintf(`{"status":{"phase":"Running","podIP":%q,"podIPs":[{"ip":%q}],"hostIP":"192.0.2.2","conditions":[{"type":"Ready","status":"True"}]}}`, ip, ip))
	uid, _ := field(pod, "metadata", "uid").(string)
	return uid
}

// testArktosLibraries runs the kube-proxy view, the origin tracker and the
// kubelet's configmap manager in this process against the TPs: the first
// two see every tenant of every TP, the third reads a pod's configmap from
// the pod's own TP and tenant.
func testArktosLibraries(t *testing.T, tps *arktosTPs, f arktosFacts) {
	// Lists in pages of one object: every list goes through Arktos's
	// limit and continue, into the informers' and the wiring's staging.
	lib := startNodeLibraries(t, partition.Options{KubeconfigPaths: tps.kubeconfigs[:], Names: []string{"tp1", "tp2"}},
		kubeproxyk8s.SourceOptions{PageSize: 1}, tporigink8s.WireOptions{NodeName: "node-1", Services: true, Endpoints: true, PageSize: 1})
	set, view, tracker := lib.set, lib.view, lib.tracker

	s := view.Snapshot()
	// The keys are Arktos's own ServicePortName strings: TP tp1 is
	// tenantPartitionId 0, tp2 is 1.
	for key, want := range map[string]string{
		"acme_0/web/api:http": "10.244.1.7:8080", "zeta_1/web/api:http": "10.244.2.7:8080",
	} {
		var got []string
		for p := range s.All() {
			if p.Name.String() == key {
				for _, e := range s.Endpoints(p.Name) {
					got = append(got, e.AddrPort().String())
				}
			}
		}
		if strings.Join(got, ",") != want {
			t.Errorf("kube-proxy view %s: endpoints %v, want %s", key, got, want)
		}
	}
	for _, k := range []string{"system_0/kube-system/kube-dns", "system_1/kube-system/kube-dns"} {
		found := false
		for n := range s.ServiceNames() {
			found = found || n.String() == k
		}
		if !found {
			t.Errorf("kube-proxy view lacks %s", k)
		}
	}

	for i, uid := range f.pods {
		if tp, ok := tracker.OriginOf(uid); !ok || tp != set.Partitions()[i].Name {
			t.Errorf("origin of the querier pod of tp%d: %q, %v", i+1, tp, ok)
		}
	}
	for tenant, want := range map[string]string{"acme": "tp1", "zeta": "tp2"} {
		if tp, ok := tracker.PartitionOfTenant(tenant); !ok || tp != want {
			t.Errorf("PartitionOfTenant(%s) = %q, %v; want %s", tenant, tp, ok, want)
		}
	}

	// The kubelet's configmap manager GETs a pod's configmap from the pod's
	// own TP, on its tenant's path: acme's from tp1, and the system
	// tenant's from tp2 for tp2's pod although tp1 has one of that name too.
	tps.write(t, 0, "POST", "/api/v1/tenants/acme/namespaces/web/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"from":"tp1 acme"}}`)
	tps.write(t, 0, "POST", "/api/v1/tenants/system/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"from":"tp1 system"}}`)
	tps.write(t, 1, "POST", "/api/v1/tenants/system/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"from":"tp2 system"}}`)
	chooser := tporigin.NewClientChooser(tracker)
	for i, c := range []struct{ tenant, ns, want string }{{"acme", "web", "tp1 acme"}, {"system", "default", "tp2 system"}} {
		cm, err := podConfigMap(context.Background(), t, set, chooser, c.tenant, c.ns, "cfg", f.pods[i])
		if err != nil || cm.Data["from"] != c.want {
			t.Errorf("configmap %s/%s/cfg for the pod of tp%d: %v %v, want data from %s", c.tenant, c.ns, i+1, cm, err, c.want)
		}
	}
}

// write sends a JSON body to TP i (a PATCH as a merge patch) and returns
// the object it answers; anything but a 2xx fails the test.
func (a *arktosTPs) write(t *testing.T, i int, method, path, body string) map[string]any {
	t.Helper()
	return mustObject(t, a.kubeconfigs[i], method, path, body, http.StatusOK)
}

// reverse is the in-addr.arpa name of an IPv4 address.
func reverse(ip string) string {
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		return "bad-address." + ip
	}
	return name
}
