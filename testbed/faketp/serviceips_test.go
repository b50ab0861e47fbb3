package faketp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// The TPs' service ranges: the default rule, explicit ranges and what is
// refused before any TP starts.
func TestServiceCIDRsOfTPs(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    faketp.Options
		cidr string // the ranges given, comma-separated (ParseServiceCIDRs)
		want string // the ranges, or the error's text
	}{
		{name: "one TP", want: "[10.96.0.0/16]"},
		{name: "tp1..tp3", o: faketp.Options{Partitions: 3}, want: "[10.96.0.0/16 10.97.0.0/16 10.98.0.0/16]"},
		{name: "named TPs in their order", o: faketp.Options{Names: []string{"b", "a"}}, want: "[10.96.0.0/16 10.97.0.0/16]"},
		{name: "the last default", o: faketp.Options{Partitions: faketp.MaxDefaultServiceCIDRs}, want: "10.255.0.0/16]"},
		{name: "beyond the defaults", o: faketp.Options{Partitions: faketp.MaxDefaultServiceCIDRs + 1},
			want: "no default service range for TP number 161: the defaults, 10.96.0.0/16 to 10.255.0.0/16, serve 160 TPs; give the ranges"},
		{name: "one range for one TP", cidr: "10.0.0.0/16", want: "[10.0.0.0/16]"},
		{name: "the recorded Arktos TPs", o: faketp.Options{Partitions: 2}, cidr: " 10.0.0.0/16, 10.1.0.0/16 ", want: "[10.0.0.0/16 10.1.0.0/16]"},
		{name: "sizes from /12 to /28", o: faketp.Options{Partitions: 2}, cidr: "10.96.0.0/12,192.168.0.0/28", want: "[10.96.0.0/12 192.168.0.0/28]"},
		{name: "one range for two TPs", o: faketp.Options{Names: []string{"a", "b"}}, cidr: "10.0.0.0/16",
			want: "ranges given: 1, TPs: 2 (a, b); give one range per TP, in their order"},
		{name: "three ranges for two TPs", o: faketp.Options{Partitions: 2}, cidr: "10.0.0.0/16,10.1.0.0/16,10.2.0.0/16",
			want: "ranges given: 3, TPs: 2 (tp1, tp2); give one range per TP, in their order"},
		{name: "overlapping ranges", o: faketp.Options{Partitions: 3}, cidr: "10.0.0.0/16,10.1.0.0/16,10.0.128.0/17",
			want: "the ranges of TPs tp1 (10.0.0.0/16) and tp3 (10.0.128.0/17) overlap: each TP allocates its own"},
		{name: "the same range twice", o: faketp.Options{Partitions: 2}, cidr: "10.0.0.0/16,10.0.0.0/16",
			want: "the ranges of TPs tp1 (10.0.0.0/16) and tp2 (10.0.0.0/16) overlap: each TP allocates its own"},
		{name: "not a CIDR", cidr: "10.0.0.0", want: `"10.0.0.0" is not a CIDR`},
		{name: "host bits", cidr: "10.96.0.1/16", want: "10.96.0.1/16 has host bits set (the network is 10.96.0.0/16)"},
		{name: "IPv6", cidr: "fd00::/112", want: "fd00::/112 is not an IPv4 range: fake-tp's service ranges are IPv4, as Arktos's single-stack TPs"},
		{name: "too large", cidr: "10.0.0.0/11", want: "10.0.0.0/11: the prefix length must be from /12 (2^20 addresses, kube-apiserver's limit) to /28"},
		{name: "too small", cidr: "10.0.0.0/29", want: "10.0.0.0/29: the prefix length must be from /12 (2^20 addresses, kube-apiserver's limit) to /28"},
		{name: "duplicate names", o: faketp.Options{Names: []string{"a", "b", "a"}}, want: `the TP name "a" is given twice: TP names must be distinct`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := func() (string, error) {
				var err error
				if tc.o.ServiceCIDRs, err = faketp.ParseServiceCIDRs(tc.cidr); err != nil {
					return "", err
				}
				cidrs, err := tc.o.ServiceCIDRsOfTPs()
				return fmt.Sprint(cidrs), err
			}()
			if err != nil {
				got = err.Error()
			}
			if !strings.HasSuffix(got, tc.want) {
				t.Fatalf("%s, want %s", got, tc.want)
			}
		})
	}
}

func TestPartitionNames(t *testing.T) {
	for _, tc := range []struct {
		o    faketp.Options
		want string
	}{
		{faketp.Options{}, "[tp1]"},
		{faketp.Options{Partitions: 2}, "[tp1 tp2]"},
		{faketp.Options{Partitions: 5, Names: []string{"x", "y"}}, "[x y]"},
		{faketp.Options{Names: []string{"x", "x"}}, `the TP name "x" is given twice: TP names must be distinct`},
		{faketp.Options{Names: []string{"a/b"}}, `"a/b" must not contain '/'`},
	} {
		got, err := tc.o.PartitionNames()
		s := fmt.Sprint(got)
		if err != nil {
			s = err.Error()
		}
		if !strings.Contains(s, tc.want) || (err == nil) != strings.HasPrefix(tc.want, "[") {
			t.Errorf("%+v: %s, want %s", tc.o, s, tc.want)
		}
	}
}

// Start refuses what the command line would: a fake-tp library user gets
// the same checks.
func TestStartRefusesBadPartitions(t *testing.T) {
	for _, o := range []faketp.Options{
		{Names: []string{"a", "a"}},
		{Partitions: 2, ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16")}},
		{Partitions: 2, ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("10.0.1.0/24")}},
	} {
		dir := t.TempDir()
		o.KubeconfigDir = dir
		if c, err := faketp.Start(context.Background(), o); err == nil {
			_ = c.Stop()
			t.Errorf("%+v: started", o)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
			t.Errorf("%+v: wrote %v before refusing", o, m)
		}
	}
}

const svcPath = "/api/v1/namespaces/default/services"

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// createService creates a service from spec (JSON) and returns its cluster
// IP ("<none>" without one).
func createService(t *testing.T, tp *faketp.TP, name, spec string) string {
	t.Helper()
	r := do(t, tp, "POST", svcPath, jsonCT, `{"metadata":{"name":"`+name+`"},"spec":`+spec+`}`)
	if r.code != 201 {
		t.Fatalf("%s: creating %s: %d %s", tp.Name(), name, r.code, r.body)
	}
	return jsonAt(t, r.body, "spec.clusterIP")
}

// Each TP allocates from its own range, by default and as configured;
// addresses services ask for are kept, in the range or not, and skipped.
func TestServiceRangePerTP(t *testing.T) {
	const port = `{"ports":[{"port":80}]}`
	for _, tc := range []struct {
		name string
		o    faketp.Options
		want []string // each TP's range and first two addresses
	}{
		{"default", faketp.Options{Partitions: 2}, []string{"10.96.0.0/16 10.96.0.11 10.96.0.12", "10.97.0.0/16 10.97.0.11 10.97.0.12"}},
		{"as the recorded Arktos TPs", faketp.Options{Names: []string{"tp0", "tp1"}, ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("10.1.0.0/16")}},
			[]string{"10.0.0.0/16 10.0.0.11 10.0.0.12", "10.1.0.0/16 10.1.0.11 10.1.0.12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := faketp.StartT(t, tc.o)
			for i, tp := range c.TPs() {
				got := fmt.Sprint(tp.ServiceCIDR(), " ", createService(t, tp, "a", port), " ", createService(t, tp, "b", port))
				if got != tc.want[i] {
					t.Errorf("%s: %s, want %s", tp.Name(), got, tc.want[i])
				}
			}
		})
	}

	c := faketp.StartT(t, faketp.Options{Partitions: 2})
	tp1, tp2 := c.TPs()[0], c.TPs()[1]
	// Seeded addresses (test/multi-tp's and examples/ seeds give tp2
	// addresses of 10.96.0.0/16 too) are kept and never handed out again.
	seed := filepath.Join(t.TempDir(), "svc.yaml")
	write(t, seed, "apiVersion: v1\nkind: Service\nmetadata: {name: dns, namespace: kube-system}\nspec: {clusterIP: 10.97.0.11, ports: [{port: 53}]}\n"+
		"---\napiVersion: v1\nkind: Service\nmetadata: {name: other, namespace: kube-system}\nspec: {clusterIP: 10.96.20.1, ports: [{port: 53}]}\n"+
		"---\napiVersion: v1\nkind: Service\nmetadata: {name: gets-one, namespace: kube-system}\nspec: {ports: [{port: 53}]}\n")
	if err := tp2.SeedFiles(seed); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ name, ip string }{{"dns", "10.97.0.11"}, {"other", "10.96.20.1"}, {"gets-one", "10.97.0.12"}} {
		r := do(t, tp2, "GET", "/api/v1/namespaces/kube-system/services/"+want.name, "", "")
		if got := jsonAt(t, r.body, "spec.clusterIP"); got != want.ip {
			t.Errorf("seeded %s: %s, want %s", want.name, got, want.ip)
		}
	}
	if got := createService(t, tp2, "next", port); got != "10.97.0.13" {
		t.Errorf("after the seed: %s, want 10.97.0.13", got)
	}
	// Through the API too (test/multi-tp creates 10.96.20.2 in tp2), and
	// headless services get no address.
	for i, tc := range []struct{ spec, want string }{
		{`{"clusterIP":"10.96.20.2","ports":[{"port":80}]}`, "10.96.20.2"},
		{`{"clusterIP":"10.97.0.14","ports":[{"port":80}]}`, "10.97.0.14"},
		{`{"clusterIP":"None","ports":[{"port":80}]}`, "None"},
		{`{"type":"ExternalName","externalName":"db.example.com"}`, "<none>"},
		{port, "10.97.0.15"},
	} {
		if got := createService(t, tp2, fmt.Sprintf("s%d", i), tc.spec); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.spec, got, tc.want)
		}
	}
	// A dry run allocates nothing, as Arktos's service REST.
	r := do(t, tp1, "POST", svcPath+"?dryRun=All", jsonCT, `{"metadata":{"name":"dry"},"spec":`+port+`}`)
	if r.code != 201 || jsonAt(t, r.body, "spec.clusterIP") != "<none>" {
		t.Errorf("dry run: %d %s", r.code, r.body)
	}
	if got := createService(t, tp1, "after-dry-run", port); got != "10.96.0.11" {
		t.Errorf("after a dry run: %s, want 10.96.0.11", got)
	}
}

// The cluster IP survives updates as in Arktos: it cannot change while the
// service has one, and a service that stops being ExternalName gets one.
func TestServiceClusterIPOnUpdate(t *testing.T) {
	tp := faketp.StartT(t, faketp.Options{}).TPs()[0]
	ip := createService(t, tp, "web", `{"selector":{"app":"web"},"ports":[{"name":"http","port":80}]}`)
	createService(t, tp, "ext", `{"type":"ExternalName","externalName":"db.example.com"}`)
	put := func(name, spec string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	runSteps(t, tp, []step{
		{name: "a PUT without the cluster IP", method: "PUT", path: svcPath + "/web", body: put("web", `{"ports":[{"port":80}]}`),
			code: 422, reason: metav1.StatusReasonInvalid, message: `Service "web" is invalid: spec.clusterIP: Invalid value: "": field is immutable`},
		{name: "a PUT with another cluster IP", method: "PUT", path: svcPath + "/web", body: put("web", `{"clusterIP":"10.96.0.99","ports":[{"port":80}]}`),
			code: 422, reason: metav1.StatusReasonInvalid, message: `Service "web" is invalid: spec.clusterIP: Invalid value: "10.96.0.99": field is immutable`},
		{name: "a PUT that keeps it", method: "PUT", path: svcPath + "/web", body: put("web", `{"clusterIP":"`+ip+`","ports":[{"port":8080}]}`), code: 200},
	})
	r := do(t, tp, "PATCH", svcPath+"/web", "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}},"spec":{"sessionAffinity":null}}`)
	// A patch keeps the address and the defaults (sessionAffinity comes
	// back, targetPort follows the port of the last PUT).
	for path, want := range map[string]string{"spec.clusterIP": ip, "spec.sessionAffinity": "None", "spec.type": "ClusterIP",
		"spec.ports.0.targetPort": "8080", "spec.ports.0.protocol": "TCP", "status": `{"loadBalancer":{}}`} {
		if got := jsonAt(t, r.body, path); r.code != 200 || got != want {
			t.Errorf("after a patch (%d): %s %s, want %s", r.code, path, got, want)
		}
	}
	r = do(t, tp, "PUT", svcPath+"/ext", jsonCT, put("ext", `{"type":"ClusterIP","ports":[{"port":80}]}`))
	if got := jsonAt(t, r.body, "spec.clusterIP"); r.code != 200 || got != "10.96.0.12" {
		t.Errorf("ExternalName to ClusterIP: %d %s", r.code, r.body)
	}
}

// A TP that restarts from its data file never hands out an address its
// stored services hold.
func TestServiceIPsAfterRestart(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{DataDir: t.TempDir()})
	tp := c.TPs()[0]
	const port = `{"ports":[{"port":80}]}`
	first := createService(t, tp, "a", port)
	if err := tp.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The restart closed the server's side of the test's keep-alive
	// connection; a POST on it may still be sent before the client has
	// seen that, and net/http does not retry a POST (an EOF, seen in a cold
	// make test). client-go's clients retry; this one starts afresh.
	http.DefaultClient.CloseIdleConnections()
	if second := createService(t, tp, "b", port); first != "10.96.0.11" || second != "10.96.0.12" {
		t.Fatalf("before and after a restart: %s, %s", first, second)
	}
}

// A full range is kube-apiserver's 500, and a deleted service's address
// is handed out again.
func TestServiceRangeFull(t *testing.T) {
	tp := faketp.StartT(t, faketp.Options{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/28")}}).TPs()[0]
	const port = `{"ports":[{"port":80}]}`
	for i := 11; i <= 14; i++ {
		if got := createService(t, tp, fmt.Sprintf("s%d", i), port); got != fmt.Sprintf("10.0.0.%d", i) {
			t.Fatalf("s%d: %s", i, got)
		}
	}
	runSteps(t, tp, []step{
		{name: "full", method: "POST", path: svcPath, body: `{"metadata":{"name":"full"},"spec":` + port + `}`, code: 500, reason: metav1.StatusReasonInternalError,
			message: "Internal error occurred: failed to allocate a serviceIP: the service range 10.0.0.0/28 is full"},
		{name: "delete", method: "DELETE", path: svcPath + "/s12", code: 200},
	})
	if got := createService(t, tp, "again", port); got != "10.0.0.12" {
		t.Fatalf("after a deletion: %s, want 10.0.0.12", got)
	}
}
