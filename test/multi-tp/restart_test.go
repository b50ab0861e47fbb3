//go:build linux

package multitp

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/testbed/kubeproxyk8s"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
	tporigink8s "github.com/tpkit-dev/tpkit/testbed/tporigink8s"
)

// convergeWithin is how soon after a restarted real Arktos TP answers
// again the programs and libraries must agree with it: the feeds relist
// within 625ms of it answering (informer.DefaultBackoff), and a relist of
// its few objects takes milliseconds. Against fake-tp, in make test on a
// machine that may be busy, the bound is convergeWithinBusy: what is timed
// there is that they converge at all after a restart, a compaction
// included, not how fast.
const (
	convergeWithin     = time.Second
	convergeWithinBusy = 10 * time.Second
)

// TestArktosRestarts restarts each TP's API server again and again while
// objects are created and deleted in both TPs, once after compacting its
// store so that every watch gets 410 Gone and every list starts over. After
// each restart, partition-dns's answers, the kube-proxy view and the origin
// tracker must match a list of the TP within convergeWithin of the TP
// answering, and the other TP's answers must never stop meanwhile.
//
// Against fake-tp (make test) each TP restarts twice, the second time
// compacted: the process is killed and started again on its port and
// --data-dir. Against real Arktos (make check-arktos) each API server is
// killed and started again with its command line 10 times, the third time
// after its etcd was compacted.
func TestArktosRestarts(t *testing.T) {
	tps := startArktosTPs(t)
	facts := seedArktos(t, tps)
	d := startPartitionDNS(t, t, "partition-dns", tps.kubeconfigs[0]+","+tps.kubeconfigs[1], "--zone", "cluster.local,in-addr.arpa")
	lib := startNodeLibraries(t, partition.Options{KubeconfigPaths: tps.kubeconfigs[:], Names: []string{"tp1", "tp2"}},
		kubeproxyk8s.SourceOptions{}, tporigink8s.WireOptions{NodeName: "node-1", Services: true, Endpoints: true})

	rounds, compacted := 2, 2
	if tps.kind == "arktos" {
		rounds, compacted = 10, 3
	}
	tenants := [2]string{"acme", "zeta"}
	var writers [2]*churner
	for i := range writers {
		tps.write(t, i, "POST", "/api/v1/tenants/"+tenants[i]+"/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"churn"}}`)
		writers[i] = startChurner(t, tps.kubeconfigs[i], i, tenants[i])
	}
	// Both TPs' stable names are asked all along: the restarted TP's from
	// partition-dns's last state, the other's from its live one.
	probe := startProber(t, d.addr, map[int]string{
		0: "api.web.acme.svc.cluster.local", 1: "api.web.zeta.svc.cluster.local",
	}, map[int]string{0: "NOERROR " + facts.acmeAPI, 1: "NOERROR " + facts.zetaAPI})

	c := &convergence{t: t, tps: tps, dns: d.addr, lib: lib, queriers: [2]string{"127.0.0.11", "127.0.0.12"}}
	for r := 1; r <= rounds; r++ {
		for i := range 2 {
			compact := r == compacted
			oldRV := tps.listRV(t, i)
			// A change after oldRV, so that a compaction now expires it.
			writers[i].waitDone(t, writers[i].done.Load()+2)
			before := writers[i].done.Load()
			probe.restarting.Store(int32(i))
			back := tps.restart(t, i, compact)
			probe.restarting.Store(-1)
			if compact {
				tps.expectGone(t, i, oldRV)
			}
			// Changes made after the restart must show too.
			writers[i].waitDone(t, before+3)
			writers[i].pause()
			settled := time.Since(back)
			took, parts := c.check(i, writers[i].deleted(), back)
			writers[i].resume()
			t.Logf("round %d, tp%d (compacted: %v): converged %v after the TP answered again (its writer's 3 changes at %v; partition-dns %v, kube-proxy view %v, origin tracker %v)",
				r, i+1, compact, took.Round(time.Millisecond), settled.Round(time.Millisecond), parts[0].Round(time.Millisecond), parts[1].Round(time.Millisecond), parts[2].Round(time.Millisecond))
			c.took = append(c.took, took)
		}
	}
	for i, w := range writers {
		w.stop()
		t.Logf("tp%d: %d changes, %d failed requests while the TPs restarted", i+1, w.done.Load(), w.failed.Load())
	}
	slices.Sort(c.took)
	t.Logf("convergence over %d restarts: p50 %v, p99 %v, max %v", len(c.took), c.took[len(c.took)/2].Round(time.Millisecond),
		c.took[(len(c.took)*99+99)/100-1].Round(time.Millisecond), c.took[len(c.took)-1].Round(time.Millisecond))
	asked, wrong := probe.stop()
	t.Logf("prober: %d questions", asked)
	for _, w := range wrong {
		t.Error(w)
	}
}

// convergence compares the programs and libraries with a TP's own lists.
type convergence struct {
	t        *testing.T
	tps      *arktosTPs
	dns      string
	lib      *nodeLibraries
	queriers [2]string // a pod address in each TP, for its system names
	took     []time.Duration
}

// check waits until partition-dns, the kube-proxy view and the origin
// tracker agree with a list of TP i taken now (the TP's writer is paused),
// and with deleted (names of the churn namespace no longer served). It
// fails the test when that takes longer than convergeWithin (real Arktos)
// or convergeWithinBusy (fake-tp) from since, and returns how long it took
// and when each of the three first agreed, from since.
func (c *convergence) check(i int, deleted []string, since time.Time) (time.Duration, [3]time.Duration) {
	t := c.t
	want := c.tps.listObjects(t, i)
	var diff []string
	var parts [3]time.Duration
	end := time.Now().Add(deadline)
	for {
		diff = diff[:0]
		for k, d := range [3][]string{c.dnsDiff(i, want, deleted), c.viewDiff(i, want), c.originDiff(i, want)} {
			if len(d) == 0 && parts[k] == 0 {
				parts[k] = time.Since(since)
			}
			diff = append(diff, d...)
		}
		if len(diff) == 0 || time.Now().After(end) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(since)
	limit := convergeWithinBusy
	if c.tps.kind == "arktos" {
		limit = convergeWithin
	}
	switch {
	case len(diff) > 0:
		t.Fatalf("tp%d never matched its lists:\n%s", i+1, strings.Join(diff, "\n"))
	case took > limit:
		t.Errorf("tp%d: the programs matched its lists %v after it answered again, want at most %v", i+1, took, limit)
	}
	return took, parts
}

// dnsDiff asks partition-dns for every service of TP i and for the deleted
// names, and returns what differs from the lists.
func (c *convergence) dnsDiff(i int, want tpObjects, deleted []string) []string {
	var diff []string
	for _, s := range want.services {
		name, from := s.name+"."+s.namespace+"."+s.tenant+".svc.cluster.local", ""
		if s.tenant == "system" {
			name, from = s.name+"."+s.namespace+".svc.cluster.local", c.queriers[i]
		}
		exp := "NOERROR " + s.clusterIP
		if s.clusterIP == "None" {
			ips := want.readyIPs(s)
			if len(ips) == 0 {
				continue // a headless service without ready endpoints has no fixed answer form
			}
			exp = "NOERROR " + strings.Join(ips, " ")
		}
		if got := sortedAnswer(c.ask(from, name)); got != exp {
			diff = append(diff, fmt.Sprintf("dns %s: %q, want %q", name, got, exp))
		}
	}
	for _, name := range deleted {
		if got := sortedAnswer(c.ask("", name)); got != "NXDOMAIN" {
			diff = append(diff, fmt.Sprintf("dns %s (deleted): %q, want NXDOMAIN", name, got))
		}
	}
	return diff
}

func (c *convergence) ask(from, name string) *dns.Msg {
	return query(c.t, c.dns, "udp", from, name, dns.TypeA)
}

// viewDiff compares the kube-proxy view's ports of TP i with its lists:
// every port of every service with a cluster IP, with its ready endpoints.
func (c *convergence) viewDiff(i int, want tpObjects) []string {
	exp := map[string]string{}
	for _, s := range want.services {
		if s.clusterIP == "None" || s.clusterIP == "" {
			continue
		}
		for _, p := range s.ports {
			name := kubeproxy.ServicePortName{ServiceName: kubeproxy.ServiceName{TenantPartitionID: i, Tenant: s.tenant, Namespace: s.namespace, Name: s.name}, Port: p}
			exp[name.String()] = s.clusterIP + " " + strings.Join(want.endpointsOf(s, p), ",")
		}
	}
	got := map[string]string{}
	for p := range c.lib.view.Snapshot().All() {
		if p.Name.TenantPartitionID != i {
			continue
		}
		var ips, eps []string
		for _, ip := range p.ClusterIPs {
			ips = append(ips, ip.String())
		}
		for _, e := range p.Endpoints {
			eps = append(eps, e.AddrPort().String())
		}
		slices.Sort(eps)
		got[p.Name.String()] = strings.Join(ips, ",") + " " + strings.Join(eps, ",")
	}
	return mapDiff("kube-proxy view", got, exp)
}

// originDiff compares the tracker's origins of TP i with its lists: each
// listed pod (on node-1), service and Endpoints has TP i as its origin, and
// the tracker counts no more of each kind than the TP lists.
func (c *convergence) originDiff(i int, want tpObjects) []string {
	tp := c.lib.set.Partitions()[i].Name
	var diff []string
	listed := map[tporigin.Kind]int{}
	for kind, uids := range map[tporigin.Kind][]string{tporigin.KindPod: want.podUIDs, tporigin.KindService: want.serviceUIDs(), tporigin.KindEndpoints: want.endpointsUIDs()} {
		listed[kind] = len(uids)
		for _, uid := range uids {
			if got, ok := c.lib.tracker.OriginOf(uid); !ok || got != tp {
				diff = append(diff, fmt.Sprintf("origin of %s %s: %q (known: %v), want %s", kind, uid, got, ok, tp))
			}
		}
	}
	for _, e := range c.lib.tracker.Stats().Entries {
		if n, ok := listed[e.Kind]; ok && e.Partition == tp && e.Count != n {
			diff = append(diff, fmt.Sprintf("origins: %d %s of %s, the TP lists %d", e.Count, e.Kind, tp, n))
		}
	}
	return diff
}

// mapDiff lists the keys whose values differ between got and want.
func mapDiff(what string, got, want map[string]string) []string {
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			diff = append(diff, fmt.Sprintf("%s %s: %q (present: %v), want %q", what, k, g, ok, want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s %s: %q, not in the TP's lists", what, k, got[k]))
		}
	}
	return diff
}

// sortedAnswer is answer with the addresses sorted: a headless name's
// addresses come in any order.
func sortedAnswer(r *dns.Msg) string {
	f := strings.Fields(answer(r))
	slices.Sort(f[1:])
	return strings.Join(f, " ")
}

// tpObjects are a TP's services, Endpoints and node-1's pods, as it lists
// them for every tenant.
type tpObjects struct {
	services  []listedService
	endpoints map[string]listedEndpoints // by tenant/namespace/name
	podUIDs   []string
}

type listedService struct {
	tenant, namespace, name, uid, clusterIP string
	ports                                   []string
}

type listedEndpoints struct {
	uid     string
	subsets []struct {
		Addresses []struct {
			IP string `json:"ip"`
		} `json:"addresses"`
		Ports []struct {
			Name string `json:"name"`
			Port int    `json:"port"`
		} `json:"ports"`
	}
}

func (o tpObjects) serviceUIDs() []string {
	var out []string
	for _, s := range o.services {
		out = append(out, s.uid)
	}
	return out
}

func (o tpObjects) endpointsUIDs() []string {
	var out []string
	for _, e := range o.endpoints {
		out = append(out, e.uid)
	}
	return out
}

// endpointsOf is the sorted "ip:port" list of s's port named port.
func (o tpObjects) endpointsOf(s listedService, port string) []string {
	var out []string
	for _, ss := range o.endpoints[s.tenant+"/"+s.namespace+"/"+s.name].subsets {
		for _, p := range ss.Ports {
			if p.Name != port {
				continue
			}
			for _, a := range ss.Addresses {
				out = append(out, fmt.Sprintf("%s:%d", a.IP, p.Port))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// readyIPs is the sorted ready addresses of s's Endpoints.
func (o tpObjects) readyIPs(s listedService) []string {
	var out []string
	for _, ss := range o.endpoints[s.tenant+"/"+s.namespace+"/"+s.name].subsets {
		for _, a := range ss.Addresses {
			out = append(out, a.IP)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listObjects lists TP i's services, Endpoints and the pods bound to node-1
// across every tenant.
func (a *arktosTPs) listObjects(t *testing.T, i int) tpObjects {
	t.Helper()
	var svcs struct {
		Items []struct {
			Metadata struct{ Tenant, Namespace, Name, UID string }
			Spec     struct {
				ClusterIP string
				Ports     []struct{ Name string }
			}
		}
	}
	a.list(t, i, "/api/v1/tenants/all/services", &svcs)
	var o tpObjects
	for _, s := range svcs.Items {
		ls := listedService{tenant: s.Metadata.Tenant, namespace: s.Metadata.Namespace, name: s.Metadata.Name, uid: s.Metadata.UID, clusterIP: s.Spec.ClusterIP}
		for _, p := range s.Spec.Ports {
			ls.ports = append(ls.ports, p.Name)
		}
		o.services = append(o.services, ls)
	}
	var eps struct {
		Items []struct {
			Metadata struct{ Tenant, Namespace, Name, UID string }
			Subsets  json.RawMessage
		}
	}
	a.list(t, i, "/api/v1/tenants/all/endpoints", &eps)
	o.endpoints = map[string]listedEndpoints{}
	for _, e := range eps.Items {
		le := listedEndpoints{uid: e.Metadata.UID}
		if len(e.Subsets) > 0 {
			if err := json.Unmarshal(e.Subsets, &le.subsets); err != nil {
				t.Fatalf("Endpoints %s/%s/%s: %v", e.Metadata.Tenant, e.Metadata.Namespace, e.Metadata.Name, err)
			}
		}
		o.endpoints[e.Metadata.Tenant+"/"+e.Metadata.Namespace+"/"+e.Metadata.Name] = le
	}
	var pods struct {
		Items []struct{ Metadata struct{ UID string } }
	}
	a.list(t, i, "/api/v1/tenants/all/pods?fieldSelector=spec.nodeName%3Dnode-1", &pods)
	for _, p := range pods.Items {
		o.podUIDs = append(o.podUIDs, p.Metadata.UID)
	}
	return o
}

// list GETs a list from TP i into v.
func (a *arktosTPs) list(t *testing.T, i int, path string, v any) {
	t.Helper()
	code, b := tpRequest(t, a.kubeconfigs[i], http.MethodGet, path, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s from tp%d: %d %s", path, i+1, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s from tp%d: %v", path, i+1, err)
	}
}

// listRV is the resourceVersion of a list of TP i's services now.
func (a *arktosTPs) listRV(t *testing.T, i int) string {
	t.Helper()
	var l struct {
		Metadata struct{ ResourceVersion string }
	}
	a.list(t, i, "/api/v1/tenants/all/services?limit=1", &l)
	return l.Metadata.ResourceVersion
}

// expectGone checks that TP i's compaction took: a watch from rv, a
// version from before it, is answered 410 Gone (as a status or as the
// watch's ERROR event), so every client watching from before relists.
func (a *arktosTPs) expectGone(t *testing.T, i int, rv string) {
	t.Helper()
	code, b := tpRequest(t, a.kubeconfigs[i], http.MethodGet, "/api/v1/tenants/all/services?watch=1&timeoutSeconds=1&resourceVersion="+rv, "")
	if code == http.StatusGone || (code == http.StatusOK && strings.Contains(string(b), `"ERROR"`) && strings.Contains(string(b), `"code":410`)) {
		return
	}
	t.Errorf("tp%d after compaction: a watch from resourceVersion %s got %d %s, want 410 Gone", i+1, rv, code, b)
}

// churner creates and deletes services (each with its Endpoints and a pod
// on node-1) in the churn namespace of one tenant of one TP, about 20
// changes a second, until stopped. Requests fail while the TP is down;
// they are counted and the churner goes on.
type churner struct {
	kubeconfig, tenant string
	net                int // the TP's index: the third octet of endpoint addresses
	mu                 sync.Mutex
	live, gone         []string
	next               int
	done, failed       atomic.Int64
	quit               chan struct{}
	exited             chan struct{}
}

func startChurner(t *testing.T, kubeconfig string, i int, tenant string) *churner {
	c := &churner{kubeconfig: kubeconfig, tenant: tenant, net: i, quit: make(chan struct{}), exited: make(chan struct{})}
	go c.run()
	t.Cleanup(c.stop)
	return c
}

func (c *churner) run() {
	defer close(c.exited)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		if len(c.live) < 5 || (len(c.live) < 15 && rand.IntN(2) == 0) {
			c.create()
		} else {
			c.delete()
		}
		c.mu.Unlock()
	}
}

func (c *churner) base() string { return "/api/v1/tenants/" + c.tenant + "/namespaces/churn/" }

// create adds service s<N>, its Endpoints and pod s<N>; the service counts
// as live once its create succeeded.
func (c *churner) create() {
	c.next++
	name := fmt.Sprintf("s%d", c.next)
	if !c.do("POST", c.base()+"services", fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":%q},"spec":{"ports":[{"name":"http","port":80}]}}`, name)) {
		return
	}
	c.live = append(c.live, name)
	c.do("POST", c.base()+"endpoints", fmt.Sprintf(`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":%q},"subsets":[{"addresses":[{"ip":"10.245.%d.%d"}],"ports":[{"name":"http","port":8080}]}]}`, name, c.net, c.next%250+1))
	c.do("POST", c.base()+"pods", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}`, name))
}

// delete removes the oldest live service with its Endpoints and pod (at
// once: no kubelet confirms a pod's end here).
func (c *churner) delete() {
	name := c.live[0]
	for _, r := range []string{"pods/", "endpoints/"} {
		c.do("DELETE", c.base()+r+name+"?gracePeriodSeconds=0", "")
	}
	if c.do("DELETE", c.base()+"services/"+name, "") {
		c.live = c.live[1:]
		c.gone = append(c.gone, name)
	}
}

// do sends one request; a 404 on a DELETE (the object went in an earlier
// try whose answer was lost) and a 409 on a POST count as done.
func (c *churner) do(method, path, body string) bool {
	code, err := tryRequest(c.kubeconfig, method, path, body, 5*time.Second)
	if err == nil && (code/100 == 2 || (method == "DELETE" && code == http.StatusNotFound) || (method == "POST" && code == http.StatusConflict)) {
		c.done.Add(1)
		return true
	}
	c.failed.Add(1)
	return false
}

// waitDone waits until the churner has made n changes in all.
func (c *churner) waitDone(t *testing.T, n int64) {
	t.Helper()
	testbin.Eventually(t, fmt.Sprintf("%d changes in %s's TP", n, c.tenant), func() bool { return c.done.Load() >= n })
}

func (c *churner) pause()  { c.mu.Lock() }
func (c *churner) resume() { c.mu.Unlock() }

// deleted is the names of the services the churner deleted, as DNS names;
// call it while paused.
func (c *churner) deleted() []string {
	var out []string
	for _, n := range c.gone {
		out = append(out, n+".churn."+c.tenant+".svc.cluster.local")
	}
	return out
}

func (c *churner) stop() {
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
	<-c.exited
}

// prober asks partition-dns for one stable name of each TP all along and
// keeps every wrong or missing answer, with the TP restarting then.
type prober struct {
	restarting atomic.Int32 // the TP being restarted, -1 for none
	quit       chan struct{}
	exited     chan struct{}
	asked      int
	wrong      []string
}

func startProber(t *testing.T, server string, names, want map[int]string) *prober {
	p := &prober{quit: make(chan struct{}), exited: make(chan struct{})}
	p.restarting.Store(-1)
	go func() {
		defer close(p.exited)
		client := &dns.Client{Net: "udp", Timeout: time.Second}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-tick.C:
			}
			for tp, name := range names {
				m := new(dns.Msg)
				m.SetQuestion(dns.Fqdn(name), dns.TypeA)
				var got string
				// One retry: a lost datagram on a loaded machine is not an outage.
				for range 2 {
					r, _, err := client.Exchange(m, server)
					if got = fmt.Sprint(err); err == nil {
						if got = answer(r); got == want[tp] {
							break
						}
					}
				}
				p.asked++
				if got != want[tp] {
					when := "between restarts"
					if r := p.restarting.Load(); r >= 0 {
						when = fmt.Sprintf("while tp%d restarted", r+1)
					}
					p.wrong = append(p.wrong, fmt.Sprintf("%s %s (tp%d) %s: %q, want %q",
						time.Now().Format("15:04:05.000"), name, tp+1, when, got, want[tp]))
				}
			}
		}
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop ends the prober and returns how many questions it asked and the
// wrong answers.
func (p *prober) stop() (int, []string) {
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	<-p.exited
	return p.asked, p.wrong
}
