package source_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/dns/server"
	"github.com/tpkit-dev/tpkit/pkg/dns/source"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// wire sits in front of a fake TP and records what it sends: every
// request, and the tenant, namespace and name of every object in the
// answers to lists and watches, by resource.
type wire struct {
	tp http.Handler

	mu       sync.Mutex
	requests []*url.URL
	objects  []wireObject
}

type wireObject struct{ resource, tenant, namespace, name string }

func (o wireObject) String() string {
	return o.resource + " " + o.tenant + "/" + o.namespace + "/" + o.name
}

func (w *wire) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.requests = append(w.requests, r.URL)
	w.mu.Unlock()
	tee := &teeWriter{ResponseWriter: rw, w: w, resource: path.Base(r.URL.Path)}
	w.tp.ServeHTTP(tee, r)
	tee.record(tee.buf.Bytes()) // a list's body, or a watch's unterminated end
}

// seen returns the objects sent so far.
func (w *wire) seen() []wireObject {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.objects)
}

// reads returns the list and watch requests of resource, each as its path
// and field selector, and how many of them were lists.
func (w *wire) reads(resource string) (paths []string, lists int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range w.requests {
		if path.Base(u.Path) == resource {
			paths = append(paths, u.Path+"?fieldSelector="+u.Query().Get("fieldSelector"))
			if q := u.Query().Get("watch"); q != "1" && q != "true" {
				lists++
			}
		}
	}
	return paths, lists
}

// teeWriter passes a response on and records the objects in it: a watch's
// as each event line is complete, a list's at the end.
type teeWriter struct {
	http.ResponseWriter
	w        *wire
	resource string
	buf      bytes.Buffer
}

func (t *teeWriter) Write(b []byte) (int, error) {
	t.buf.Write(b)
	for {
		line, err := t.buf.ReadBytes('\n')
		if err != nil { // no complete line: keep it for later
			t.buf.Reset()
			t.buf.Write(line)
			break
		}
		t.record(line)
	}
	return t.ResponseWriter.Write(b)
}

func (t *teeWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

type wireMeta struct {
	Metadata struct{ Tenant, Namespace, Name string }
}

// record notes the objects of a list body or a watch event.
func (t *teeWriter) record(b []byte) {
	var v struct {
		Kind   string
		Items  []wireMeta
		Object *wireMeta
	}
	if json.Unmarshal(b, &v) != nil || v.Kind == "Status" {
		return
	}
	if v.Object != nil {
		v.Items = append(v.Items, *v.Object)
	}
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	for _, o := range v.Items {
		m := o.Metadata
		if m.Name != "" {
			t.w.objects = append(t.w.objects, wireObject{t.resource, m.Tenant, m.Namespace, m.Name})
		}
	}
}

// seedScoped gives two TPs the same layout in tenants alpha (tp1) and
// beta (tp2) and the system tenant: namespaces web, other and default, a
// service in each, a headless one with endpoints in web and other, and
// the API server's service default/kubernetes in both.
func seedScoped(t *testing.T, tps []*faketp.TP) {
	for i, tp := range tps {
		tenant := []string{"alpha", "beta"}[i]
		net := 96 + i
		objs := []any{svc("system", "default", "kubernetes", []string{fmt.Sprintf("10.%d.0.1", net)}, port("https", corev1.ProtocolTCP, 443)),
			svc("system", "default", "registry", []string{fmt.Sprintf("10.%d.0.2", net)}, port("http", corev1.ProtocolTCP, 80)),
			svc("system", "kube-system", "kube-dns", []string{fmt.Sprintf("10.%d.0.10", net)}, port("dns", corev1.ProtocolUDP, 53)),
			ns(tenant, "default"), ns(tenant, "web"), ns(tenant, "other"),
			svc(tenant, "default", "kubernetes", []string{fmt.Sprintf("10.%d.9.1", net)}, port("https", corev1.ProtocolTCP, 443)),
			pod(tenant, "web", "client", fmt.Sprintf("127.0.0.%d1", i+1)),
		}
		for j, n := range []string{"web", "other"} {
			objs = append(objs, svc(tenant, n, "api", []string{fmt.Sprintf("10.%d.%d.1", net, j+1)}, port("http", corev1.ProtocolTCP, 80)),
				svc(tenant, n, "db", []string{"None"}, port("mysql", corev1.ProtocolTCP, 3306)),
				endpoints(tenant, n, "db", []corev1.EndpointAddress{{IP: fmt.Sprintf("10.%d.%d.5", 244+i, j+1)}}))
			objs = append(objs, ns("system", n), svc("system", n, "api", []string{fmt.Sprintf("10.%d.%d.2", net, j+1)}, port("http", corev1.ProtocolTCP, 80)))
		}
		if err := tp.Seed(objs...); err != nil {
			t.Fatal(err)
		}
	}
}

// startScoped runs the source with o over two seeded fake TPs (of fo),
// each behind a wire, and returns the wires and the DNS server's address
// once synced.
func startScoped(t *testing.T, fo faketp.Options, o source.Options) (*faketp.Cluster, []*wire, string) {
	fo.Partitions = 2
	c := faketp.StartT(t, fo)
	seedScoped(t, c.TPs())
	var names []string
	var cfgs []*rest.Config
	var wires []*wire
	for _, tp := range c.TPs() {
		w := &wire{tp: tp}
		srv := httptest.NewServer(w)
		t.Cleanup(srv.Close) // after runSource's cancel: Close waits for the watches
		cfg := tp.RESTConfig()
		cfg.Host = srv.URL
		names, cfgs, wires = append(names, tp.Name()), append(cfgs, cfg), append(wires, w)
	}
	b := runSource(t, names, cfgs, o)
	h, addr := serve(t, b, server.Options{Pods: server.PodsInsecure})
	h.MarkSynced()
	return c, wires, addr
}

// apiServer says whether a TP may send an object of the API server's
// service under --dns-tenant: its service by name, and the endpoints of the
// system tenant's default namespace (kept by name in the store).
func apiServer(res, tenant, ns, name string) bool {
	return tenant == "system" && ns == "default" && (res == "endpoints" || name == "kubernetes")
}

// TestScopeOnTheWire: with --dns-namespace and --dns-tenant, a TP never
// sends the services and endpoints of what is not served (the wire in
// front of each fake TP sees every object it sends, in lists and watches),
// and what is served resolves, including objects created afterwards.
// Under --dns-tenant the system tenant's default/kubernetes still answers
// kubernetes.default, from the querier's own TP.
func TestScopeOnTheWire(t *testing.T) {
	type q struct{ from, name, want string }
	for _, tc := range []struct {
		name string
		opts source.Options
		// sent says whether a TP may send a service or endpoints object.
		sent func(resource, tenant, namespace, name string) bool
		// selectors are those of every services and endpoints list and
		// watch, per TP.
		selectors []string
		queries   []q
	}{{
		name: "namespace",
		opts: source.Options{Namespaces: []string{"web"}},
		sent: func(_, _, ns, _ string) bool { return ns == "web" || ns == "default" },
		selectors: []string{
			"/api/v1/tenants/all/%s?fieldSelector=metadata.namespace=default",
			"/api/v1/tenants/all/%s?fieldSelector=metadata.namespace=web",
		},
		queries: []q{
			{"127.0.0.1", "api.web.alpha", "10.96.1.1"},
			{"127.0.0.1", "db.web.alpha", "10.244.1.5"},
			{"127.0.0.1", "api.web.beta", "10.97.1.1"},
			{"127.0.0.1", "api.web", "10.96.1.2"},
			{"127.0.0.1", "kubernetes.default", "10.96.0.1"},
			{"127.0.0.1", "registry.default", "10.96.0.2"},
			{"127.0.0.1", "kubernetes.default.alpha", "10.96.9.1"},
			{"127.0.0.1", "late.web.alpha", "10.96.1.9"},
			{"127.0.0.1", "api.other.alpha", "NXDOMAIN"},
			{"127.0.0.1", "db.other.beta", "NXDOMAIN"},
			{"127.0.0.1", "api.other", "NXDOMAIN"},
			{"127.0.0.1", "kube-dns.kube-system", "NXDOMAIN"},
			{"127.0.0.1", "late.other.alpha", "NXDOMAIN"},
		},
	}, {
		name: "tenant",
		opts: source.Options{Tenant: "alpha"},
		sent: func(res, tenant, ns, name string) bool {
			return tenant == "alpha" || apiServer(res, tenant, ns, name)
		},
		selectors: []string{
			"/api/v1/tenants/alpha/%s?fieldSelector=",
			"/api/v1/tenants/system/namespaces/default/%s?fieldSelector=",
		},
		queries: []q{
			{"127.0.0.11", "kubernetes.default", "10.96.0.1"},
			{"127.0.0.1", "kubernetes.default", "10.96.0.1"},
			{"127.0.0.21", "kubernetes.default", "10.97.0.1"},
			{"127.0.0.1", "api.web.alpha", "10.96.1.1"},
			{"127.0.0.1", "db.other.alpha", "10.244.2.5"},
			{"127.0.0.1", "kubernetes.default.alpha", "10.96.9.1"},
			{"127.0.0.1", "late.web.alpha", "10.96.1.9"},
			{"127.0.0.1", "late.other.alpha", "10.96.2.9"},
			{"127.0.0.1", "registry.default", "NXDOMAIN"},
			{"127.0.0.1", "kube-dns.kube-system", "NXDOMAIN"},
			{"127.0.0.1", "api.web", "NXDOMAIN"},
			{"127.0.0.1", "api.web.beta", "NXDOMAIN"},
			{"127.0.0.1", "kubernetes.default.beta", "NXDOMAIN"},
		},
	}, {
		name: "tenant and namespace",
		opts: source.Options{Tenant: "alpha", Namespaces: []string{"web"}},
		sent: func(res, tenant, ns, name string) bool {
			return tenant == "alpha" && (ns == "web" || ns == "default") || apiServer(res, tenant, ns, name)
		},
		selectors: []string{
			"/api/v1/tenants/alpha/namespaces/default/%s?fieldSelector=",
			"/api/v1/tenants/alpha/namespaces/web/%s?fieldSelector=",
			"/api/v1/tenants/system/namespaces/default/%s?fieldSelector=",
		},
		queries: []q{
			{"127.0.0.11", "kubernetes.default", "10.96.0.1"},
			{"127.0.0.21", "kubernetes.default", "10.97.0.1"},
			{"127.0.0.1", "api.web.alpha", "10.96.1.1"},
			{"127.0.0.1", "db.web.alpha", "10.244.1.5"},
			{"127.0.0.1", "kubernetes.default.alpha", "10.96.9.1"},
			{"127.0.0.1", "late.web.alpha", "10.96.1.9"},
			{"127.0.0.1", "api.other.alpha", "NXDOMAIN"},
			{"127.0.0.1", "late.other.alpha", "NXDOMAIN"},
			{"127.0.0.1", "registry.default", "NXDOMAIN"},
			{"127.0.0.1", "api.web", "NXDOMAIN"},
			{"127.0.0.1", "api.web.beta", "NXDOMAIN"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, wires, addr := startScoped(t, faketp.Options{}, tc.opts)
			// Created after the first list: only watches carry them, other's
			// first.
			tp1 := c.TPs()[0]
			for _, n := range []string{"other", "web"} {
				ip := map[string]string{"web": "10.96.1.9", "other": "10.96.2.9"}[n]
				if err := tp1.Seed(svc("alpha", n, "late", []string{ip}, port("http", corev1.ProtocolTCP, 80))); err != nil {
					t.Fatal(err)
				}
			}
			testbin.Eventually(t, "late.web.alpha answered", func() bool {
				return strings.Join(answers(ask(t, addr, "udp", "127.0.0.1", "late.web.alpha.svc.cluster.local.", dns.TypeA)), ",") == "10.96.1.9"
			})
			for _, x := range tc.queries {
				r := ask(t, addr, "udp", x.from, x.name+".svc.cluster.local.", dns.TypeA)
				got := strings.Join(answers(r), ",")
				if r.Rcode != dns.RcodeSuccess {
					got = dns.RcodeToString[r.Rcode]
				}
				if got != x.want {
					t.Errorf("%s from %s: %s, want %s", x.name, x.from, got, x.want)
				}
			}

			for i, w := range wires {
				var services, endpoints int
				for _, o := range w.seen() {
					switch o.resource {
					case "services":
						services++
					case "endpoints":
						endpoints++
					default:
						continue
					}
					if !tc.sent(o.resource, o.tenant, o.namespace, o.name) {
						t.Errorf("tp%d sent %s", i+1, o)
					}
				}
				if i == 0 && (services == 0 || endpoints == 0) { // tp1 has alpha's
					t.Errorf("tp%d: the wire saw %d services and %d endpoints", i+1, services, endpoints)
				}
				for _, res := range []string{"services", "endpoints"} {
					var want []string
					for _, s := range tc.selectors {
						want = append(want, fmt.Sprintf(s, res))
					}
					if res == "services" && tc.opts.Tenant != "" {
						want[len(want)-1] += "metadata.name=kubernetes"
					}
					paths, _ := w.reads(res)
					got := slices.Compact(slices.Sorted(slices.Values(paths)))
					if !slices.Equal(got, want) {
						t.Errorf("tp%d: %s read through\n  %s\nwant\n  %s", i+1, res, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
					}
				}
			}
			if !slices.Contains(wires[0].seen(), wireObject{"services", "alpha", "web", "late"}) {
				t.Error("the wire missed late.web.alpha's watch event")
			}
		})
	}
}

// TestScopeSurvivesWatchRestarts: the per-namespace watches start again
// when the TP ends them, and after a compaction the source lists every
// namespace again; changes keep arriving.
func TestScopeSurvivesWatchRestarts(t *testing.T) {
	// No bookmarks: they would move a watch's resourceVersion past the
	// compaction below, and nothing would need a relist.
	c, wires, addr := startScoped(t, faketp.Options{BookmarkInterval: time.Hour}, source.Options{Namespaces: []string{"web"}})
	tp := c.TPs()[0]
	cs, err := partitiontest.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancyk8s.WithTenant(context.Background(), "alpha")
	resolves := func(name, want string) func() bool {
		return func() bool {
			r := ask(t, addr, "udp", "127.0.0.1", name+".svc.cluster.local.", dns.TypeA)
			got := strings.Join(answers(r), ",")
			if r.Rcode != dns.RcodeSuccess {
				got = dns.RcodeToString[r.Rcode]
			}
			return got == want
		}
	}
	create := func(name, ip string) {
		t.Helper()
		if _, err := cs.CoreV1().Services("web").Create(ctx, svc("alpha", "web", name, []string{ip}, port("http", corev1.ProtocolTCP, 80)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testbin.Eventually(t, name+" answered", resolves(name+".web.alpha", ip))
	}
	for i := 0; i < 3; i++ {
		tp.CloseWatches()
		create(fmt.Sprintf("after-close-%d", i), fmt.Sprintf("10.96.1.%d", 100+i))
	}

	// A change no watch here sees, then a compaction at its version: both
	// namespaces' watches are older, get 410 Expired, and the feed lists.
	_, lists := wires[0].reads("services")
	if _, err := cs.CoreV1().Services("other").Create(ctx, svc("alpha", "other", "unwatched", []string{"10.96.2.110"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tp.Compact()
	tp.CloseWatches()
	testbin.Eventually(t, "services listed again", func() bool { _, n := wires[0].reads("services"); return n >= lists+2 })
	create("after-compaction", "10.96.1.110")
	if err := cs.CoreV1().Services("web").Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "api.web.alpha gone", resolves("api.web.alpha", "NXDOMAIN"))
	for _, x := range [][2]string{{"kubernetes.default", "10.96.0.1"}, {"after-close-0.web.alpha", "10.96.1.100"}, {"api.other.alpha", "NXDOMAIN"}} {
		if !resolves(x[0], x[1])() {
			t.Errorf("%s: want %s", x[0], x[1])
		}
	}
}
