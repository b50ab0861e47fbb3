//go:build arktoslab && linux

package arktosnode

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tpkit-dev/tpkit/testbed/arktoslab"
)

// hollowRulesPath is where the patched hollow proxy serves the rules its
// proxier last wrote into kubemark's fake iptables (kubemark.IPTablesRulesPath).
const hollowRulesPath = "/debug/iptables"

// hollowProxy: kubemark's hollow proxy (hollow-node --morph=proxy, the
// patched iptables proxier on a fake iptables) given both TPs' kubeconfigs
// (--tenant-server-kubeconfigs) programs every TP's services, each with its
// own TP's endpoints: both kube-dns services (same name, one per TP),
// acme's service in tp2, and a service created in each TP while it runs.
// What it programmed is read from the fake iptables' last restore, which it
// serves at /debug/iptables beside /metrics (--proxy-metrics-bind-address);
// its /metrics has both TPs synced. Stock hollow-node has neither flag and
// watches --kubeconfig only.
func (l *lab) hollowProxy() error {
	if l.stock {
		return fmt.Errorf("stock hollow-node has no --proxy-metrics-bind-address, and its proxy watches --kubeconfig only (pkg/kubemark/hollow_proxy.go)")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(l.t))
	log := filepath.Join(l.dir, "hollow-proxy.log")
	start := time.Now()
	cmd := l.spawn(log, "hollow-node", "--morph=proxy", "--name="+nodeName,
		"--kubeconfig="+l.rpKC, "--tenant-server-kubeconfigs="+l.tpKC[0]+","+l.tpKC[1],
		"--kube-api-content-type=application/json", "--proxy-metrics-bind-address="+addr,
		"--proxier-sync-period=30s", "--proxier-min-sync-period=0s", "--v=2")
	defer arktoslab.Stop(cmd)
	fail := func(err error) error {
		if !arktoslab.Alive(cmd) {
			return fmt.Errorf("hollow proxy exited: %v\n%s", err, arktoslab.Tail(log, 10))
		}
		return err
	}

	// What the lab seeded: kube-dns in both TPs, acme/web/app in tp2.
	type svc struct {
		what, ip, proto string
		port            int
		want            string
	}
	var want []svc
	for i := range l.tps {
		obj, err := l.get(i, "/api/v1/tenants/system/namespaces/kube-system/services/kube-dns")
		if err != nil {
			return err
		}
		want = append(want, svc{fmt.Sprintf("kube-dns of tp%d", i+1), arktoslab.Str(obj, "spec", "clusterIP"), "udp", 53, l.dnsEndpoint(i) + ":53"})
	}
	obj, err := l.get(1, "/api/v1/tenants/acme/namespaces/web/services/app")
	if err != nil {
		return err
	}
	want = append(want, svc{"acme/web/app of tp2", arktoslab.Str(obj, "spec", "clusterIP"), "tcp", 80, "10.244.9.9:8080"})
	rulesURL := "http://" + addr + hollowRulesPath
	programmed := func(services []svc) error {
		rules, err := hollowRules(rulesURL)
		if err != nil {
			return err
		}
		for _, s := range services {
			if got := rules.DNAT(s.ip, s.proto, s.port); strings.Join(got, ",") != s.want {
				return fmt.Errorf("hollow proxy: %s (%s:%d/%s) DNATs to %v, want [%s]", s.what, s.ip, s.port, s.proto, got, s.want)
			}
		}
		return nil
	}
	if err := poll(60*time.Second, func() error { return programmed(want) }); err != nil {
		return fail(err)
	}
	first := time.Since(start)

	metricsURL := "http://" + addr + "/metrics"
	err = poll(10*time.Second, func() error {
		got, err := scrape(metricsURL)
		if err != nil {
			return err
		}
		m := map[string]float64{}
		for i := range l.tps {
			m[fmt.Sprintf(`tpkit_kubeproxy_partition_synced{partition=%q}`, workerTPNames[i])] = 1
		}
		if d := differences(got, m); d != "" {
			return fmt.Errorf("hollow proxy %s: %s", metricsURL, d)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}

	// A service created in each TP while the hollow proxy runs.
	var added []svc
	created := time.Now()
	for i := range l.tps {
		sys := "/api/v1/tenants/system/namespaces/kube-system"
		obj, err := l.write(i, "POST", sys+"/services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"hollow-probe"},"spec":{"ports":[{"name":"http","port":82,"protocol":"TCP"}]}}`)
		if err != nil {
			return err
		}
		ep := fmt.Sprintf("10.244.%d.20", i+1)
		if _, err := l.write(i, "POST", sys+"/endpoints", endpointsJSON("hollow-probe", "http", ep, 9082, "TCP")); err != nil {
			return err
		}
		added = append(added, svc{fmt.Sprintf("kube-system/hollow-probe of tp%d", i+1), arktoslab.Str(obj, "spec", "clusterIP"), "tcp", 82, ep + ":9082"})
	}
	if err := poll(10*time.Second, func() error { return programmed(added) }); err != nil {
		return fail(err)
	}
	fmt.Printf("      hollow proxy: seeded services of both TPs programmed %v after its start; a new service in each TP %v after its endpoints were written; peak RSS %s\n",
		first.Round(100*time.Millisecond), time.Since(created).Round(time.Millisecond), peakRSS(cmd.Process.Pid))
	return nil
}

// hollowRules reads the hollow proxy's last restored rules (both tables, in
// iptables-restore form, which arktoslab.NATTable.DNAT reads as it reads
// iptables-save's).
func hollowRules(url string) (arktoslab.NATTable, error) {
	resp, err := arktoslab.HTTPClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	if n, _ := strconv.Atoi(resp.Header.Get("X-Restores")); n == 0 {
		return nil, fmt.Errorf("GET %s: no rules restored yet", url)
	}
	return strings.Split(string(b), "\n"), nil
}

// peakRSS is a process's VmHWM as /proc prints it ("?" when unreadable).
func peakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.Join(strings.Fields(line[len("VmHWM:"):]), " ")
		}
	}
	return "?"
}
