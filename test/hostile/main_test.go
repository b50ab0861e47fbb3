//go:build linux

package hostile

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// binDir holds the programs TestMain built.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testbin.RunWith(m, &binDir, "./cmd/fake-tp", "./cmd/partition-dns", "./cmd/tp-admission-webhook", "./test/hostile/idleclients"))
}

func start(t *testing.T, label, program string, args ...string) *testbin.Proc {
	t.Helper()
	return testbin.Start(t, t, label, filepath.Join(binDir, program), args...)
}

// bigPorts is the number of ports of the service "big": its SRV answer is
// far larger than 1232 bytes.
const bigPorts = 400

// startTP starts fake-tp serving one TP, tp1, seeded with the system
// tenant's kube-dns and a service of bigPorts ports, and returns its
// kubeconfig.
func startTP(t *testing.T) string {
	t.Helper()
	seed := t.TempDir()
	var b strings.Builder
	b.WriteString(`apiVersion: v1
kind: Namespace
metadata: {name: kube-system, tenant: system}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, tenant: system}
spec:
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10]
  ports: [{name: dns, protocol: UDP, port: 53}]
---
apiVersion: v1
kind: Service
metadata: {name: big, namespace: kube-system, tenant: system}
spec:
  clusterIP: 10.96.0.11
  clusterIPs: [10.96.0.11]
  ports:
`)
	for i := 0; i < bigPorts; i++ {
		fmt.Fprintf(&b, "  - {name: port-%d, protocol: TCP, port: %d}\n", i, 1000+i)
	}
	if err := os.WriteFile(filepath.Join(seed, "system.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := t.TempDir()
	p := start(t, "fake-tp", "fake-tp", "--partition-names", "tp1", "--listen", "127.0.0.1:0",
		"--kubeconfig-dir", kc, "--seed", seed, "--admin-listen", "")
	p.WaitOutput(t, `"Serving tenant partition"`, 1)
	return filepath.Join(kc, "tp1.kubeconfig")
}

// dnsServer is a running partition-dns.
type dnsServer struct {
	*testbin.Proc
	addr    string // DNS over UDP and TCP
	metrics string // http://…/metrics
}

// startDNS starts partition-dns on kubeconfig and waits until it is ready.
// Its ports are picked free; one taken meanwhile is retried.
func startDNS(t *testing.T, kubeconfig string, extra ...string) *dnsServer {
	t.Helper()
	for attempt := 1; ; attempt++ {
		d := &dnsServer{addr: testbin.FreePort(t)}
		health, metrics := testbin.FreePort(t), testbin.FreePort(t)
		d.metrics = "http://" + metrics + "/metrics"
		d.Proc = start(t, "partition-dns", "partition-dns", append([]string{
			"--tenant-server-kubeconfig", kubeconfig,
			"--listen", d.addr, "--health-listen", health, "--metrics-listen", metrics, "--ready-listen", ""}, extra...)...)
		end := time.Now().Add(testbin.Deadline)
		for !d.Exited() && time.Now().Before(end) {
			if code, _ := httpGet("http://" + health + "/readyz"); code == http.StatusOK {
				return d
			}
			time.Sleep(25 * time.Millisecond)
		}
		if d.Exited() && attempt < 3 && strings.Contains(d.Output(), "address already in use") {
			continue
		}
		t.Fatalf("partition-dns not ready (exited: %v, %v)", d.Exited(), d.Err())
	}
}

// httpGet returns the status and body of a GET, or 0 and the error text.
func httpGet(url string) (int, string) { return testbin.Get(url) }

// metric is the value of the unlabelled sample name at url, read with
// client.
func metric(t *testing.T, client *http.Client, url, name string) float64 {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", url, sc.Text(), err)
			}
			return f
		}
	}
	t.Fatalf("%s has no sample %s", url, name)
	return 0
}

// rssBytes is the resident set of process pid.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no VmRSS", pid)
	return 0
}

// upstream is a DNS server for names outside the zones that counts the
// queries it gets; it answers every A question with 192.0.2.1, or, when
// silent, never answers.
type upstream struct {
	addr    string
	queries atomic.Int64
}

func startUpstream(t *testing.T, silent bool) *upstream {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{addr: pc.LocalAddr().String()}
	if silent {
		// Read and drop: queries pile up waiting, as behind a dead upstream.
		go func() {
			buf := make([]byte, 512)
			for {
				if _, _, err := pc.ReadFrom(buf); err != nil {
					return
				}
				u.queries.Add(1)
			}
		}()
		t.Cleanup(func() { pc.Close() })
		return u
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		u.queries.Add(1)
		m := new(dns.Msg)
		m.SetReply(r)
		if len(r.Question) == 1 && r.Question[0].Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300}, A: net.ParseIP("192.0.2.1")}}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return u
}
