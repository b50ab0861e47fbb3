//go:build arktoslab && linux

package faketparktos

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/testbed/arktoslab"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

const (
	nodeName = "node-1"
	// configManagerWait is how long Arktos's API-server config manager
	// (client-go/datapartition) retries to get the master Endpoints
	// before kube-proxy exits; the lab holds kube-proxy past it.
	configManagerWait = 5 * time.Minute
	// configManagerOK is what the config manager logs once it has read
	// the master Endpoints; configManagerFailed, each failed try.
	configManagerOK     = "Set first update api server to time"
	configManagerFailed = "Error in getting api server endpoints"
)

// seed is what fake-tp serves besides its master services: kube-dns in
// tp1's system tenant, and a service of tenant acme in tp2, each with
// Endpoints (no selector: they are the seed's).
var seed = map[string]string{
	"tp1": `apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system}
spec: {clusterIP: 10.96.0.10, ports: [{name: dns, port: 53, protocol: UDP}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: kube-dns, namespace: kube-system}
subsets: [{addresses: [{ip: 10.244.1.10}], ports: [{name: dns, port: 53, protocol: UDP}]}]
`,
	"tp2": `apiVersion: v1
kind: Service
metadata: {name: app, namespace: web, tenant: acme}
spec: {clusterIP: 10.97.0.20, ports: [{name: http, port: 80, protocol: TCP, targetPort: 8080}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: app, namespace: web, tenant: acme}
subsets: [{addresses: [{ip: 10.244.2.20}], ports: [{name: http, port: 8080, protocol: TCP}]}]
`,
}

type lab struct {
	t        *testing.T
	bin, dir string
	labSH    string // LAB_SH, hack/arktos-lab.sh by run.sh
	// hollowBefore: the hollow-kubelet.* roots there before the lab, which
	// teardown keeps (hollow-node makes a new one in /tmp at each start).
	hollowBefore map[string]bool
	addr         string // the namespace's address, which the TPs listen on
	rpKC         string
	rp           string
	tpPort       [2]int
	tpKC         [2]string
	fakeTP       *exec.Cmd
	proxy        *exec.Cmd
	node         *exec.Cmd
	proxyLog     string
	nodeLog      string
	failed       []string
}

func (l *lab) check(name string, fn func() error) {
	if err := fn(); err != nil {
		fmt.Printf("CHECK %-28s FAIL: %v\n", name, err)
		l.failed = append(l.failed, name)
		l.t.Errorf("check %s: %v", name, err)
		return
	}
	fmt.Printf("CHECK %-28s PASS\n", name)
}

func TestStockArktosAgainstFakeTP(t *testing.T) {
	bin, fakeTP := os.Getenv("ARKTOS_BIN"), os.Getenv("FAKE_TP")
	if bin == "" || fakeTP == "" || os.Getenv("TPKIT_FAKETP_ARKTOS_LAB") == "" {
		t.Fatal("run this through `make check-faketp-arktos ARKTOS_BIN=DIR`: it needs Arktos's binaries, fake-tp and a network namespace of its own")
	}
	if err := arktoslab.CheckLabHost("check-faketp-arktos", bin, "kube-apiserver", "hollow-node", "kube-proxy"); err != nil {
		t.Fatal(err)
	}
	hold := configManagerWait + 15*time.Second
	if h := os.Getenv("FAKETP_ARKTOS_HOLD"); h != "" {
		d, err := time.ParseDuration(h)
		if err != nil {
			t.Fatalf("FAKETP_ARKTOS_HOLD=%q: %v", h, err)
		}
		hold = d
	}
	l := &lab{t: t, bin: bin, dir: t.TempDir(), addr: os.Getenv("ADVERTISE"), hollowBefore: arktoslab.HollowRoots()}
	t.Cleanup(l.teardown)
	start := time.Now()
	l.startRP()
	l.startFakeTP(fakeTP)
	proxyStart := time.Now()
	l.startProxy()
	l.startNode()

	l.check("proxy-config-manager", l.configManagerFound)
	l.check("proxy-rules-tp1", func() error { return l.waitDNAT("tp1's kube-dns", "10.96.0.10", "udp", 53, "10.244.1.10:53") })
	l.check("proxy-rules-tp2", func() error { return l.waitDNAT("tp2's acme/web/app", "10.97.0.20", "tcp", 80, "10.244.2.20:8080") })
	l.check("proxy-rules-master-tp1", func() error {
		return l.waitDNAT("tp1's kubernetes", "10.96.0.1", "tcp", 443, net.JoinHostPort(l.addr, strconv.Itoa(l.tpPort[0])))
	})
	l.check("proxy-rules-master-tp2", func() error {
		return l.waitDNAT("tp2's kubernetes", "10.97.0.1", "tcp", 443, net.JoinHostPort(l.addr, strconv.Itoa(l.tpPort[1])))
	})
	l.check("node-registered", l.nodeRegistered)
	l.check("proxy-up-past-wait", func() error { return l.proxyStaysUp(proxyStart, hold) })
	fmt.Printf("== %s in %s, failed: %v\n", t.Name(), time.Since(start).Round(time.Second), l.failed)
}

// startRP starts the resource partition (the node's API server) with
// arktos-lab.sh.
func (l *lab) startRP() {
	l.labSH = os.Getenv("LAB_SH")
	if l.labSH == "" {
		l.t.Fatal("LAB_SH is not set: run this through `make check-faketp-arktos`")
	}
	d := filepath.Join(l.dir, "rp")
	cmd := exec.Command("bash", l.labSH, "up", "1", d)
	cmd.Env = append(os.Environ(), "ARKTOS_BIN="+l.bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		l.t.Fatalf("arktos-lab.sh up 1 %s: %v\n%s", d, err, out)
	}
	b, err := os.ReadFile(filepath.Join(d, "tp1", "url"))
	if err != nil {
		l.t.Fatal(err)
	}
	l.rp = strings.TrimSpace(string(b))
	l.rpKC = filepath.Join(d, "kc", "tp1.kubeconfig")
	fmt.Printf("== resource partition %s\n", l.rp)
}

// startFakeTP starts fake-tp with tp1 and tp2 on the namespace's address,
// seeded, and waits until it is ready.
func (l *lab) startFakeTP(path string) {
	seedDir := filepath.Join(l.dir, "seed")
	for tp, objs := range seed {
		if err := os.MkdirAll(filepath.Join(seedDir, tp), 0o755); err != nil {
			l.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(seedDir, tp, "objects.yaml"), []byte(objs), 0o644); err != nil {
			l.t.Fatal(err)
		}
	}
	port := l.freePorts(2)
	admin := l.freePorts(1)
	kcDir := filepath.Join(l.dir, "kc")
	var log string
	l.fakeTP, log = l.spawn(path, "--partitions=2", "--listen="+net.JoinHostPort(l.addr, strconv.Itoa(port)),
		"--kubeconfig-dir="+kcDir, "--seed="+seedDir, "--admin-listen=127.0.0.1:"+strconv.Itoa(admin))
	err := testbin.Poll(60*time.Second, 200*time.Millisecond, func() error {
		if !arktoslab.Alive(l.fakeTP) {
			return fmt.Errorf("fake-tp exited:\n%s", arktoslab.Tail(log, 20))
		}
		return arktoslab.Request("GET", fmt.Sprintf("http://127.0.0.1:%d/readyz", admin), "", nil)
	})
	if err != nil {
		l.t.Fatalf("fake-tp is not ready: %v", err)
	}
	for i := range l.tpKC {
		l.tpPort[i] = port + i
		l.tpKC[i] = filepath.Join(kcDir, fmt.Sprintf("tp%d.kubeconfig", i+1))
	}
	fmt.Printf("== fake-tp: tp1 %s:%d, tp2 %s:%d\n", l.addr, port, l.addr, port+1)
}

// freePorts is the first of n consecutive ports free on the lab's address
// a moment ago.
func (l *lab) freePorts(n int) int {
	for try := 0; try < 20; try++ {
		first, err := arktoslab.FreePort()
		if err != nil {
			l.t.Fatal(err)
		}
		ok := true
		for p := first; p < first+n && ok; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort(l.addr, strconv.Itoa(p)))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return first
		}
	}
	l.t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// spawn starts the program path, its output in the lab's NAME.log.
func (l *lab) spawn(path string, args ...string) (cmd *exec.Cmd, log string) {
	log = filepath.Join(l.dir, filepath.Base(path)+".log")
	cmd, err := arktoslab.Spawn(log, path, args...)
	if err == nil {
		fmt.Printf("== started %s (pid %d), log %s\n", filepath.Base(path), cmd.Process.Pid, log)
		return cmd, log
	}
	l.t.Fatal(err)
	return nil, ""
}

// startProxy starts kube-proxy in iptables mode for both TPs, with only
// the flags stock Arktos has.
func (l *lab) startProxy() {
	l.proxy, l.proxyLog = l.spawn(filepath.Join(l.bin, "kube-proxy"),
		"--proxy-mode=iptables", "--kubeconfig="+l.rpKC,
		"--tenant-server-kubeconfig="+l.tpKC[0]+","+l.tpKC[1],
		"--hostname-override="+nodeName, "--bind-address=127.0.0.1",
		"--healthz-bind-address=127.0.0.1", "--healthz-port="+strconv.Itoa(l.freePorts(1)),
		"--metrics-bind-address=127.0.0.1", "--metrics-port="+strconv.Itoa(l.freePorts(1)),
		"--conntrack-max-per-core=0", "--conntrack-min=0",
		"--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		"--iptables-sync-period=30s", "--iptables-min-sync-period=0s", "--v=2")
}

// startNode starts hollow-node's kubelet: its node in the resource
// partition, its pods from both fake TPs.
func (l *lab) startNode() {
	l.node, l.nodeLog = l.spawn(filepath.Join(l.bin, "hollow-node"), "--morph=kubelet", "--name="+nodeName,
		"--kubeconfig="+l.rpKC, "--resource-server-kubeconfig="+l.rpKC,
		"--tenant-server-kubeconfigs="+l.tpKC[0]+","+l.tpKC[1],
		"--kube-api-content-type=application/json",
		"--kubelet-port="+strconv.Itoa(l.freePorts(1)), "--kubelet-read-only-port=0", "--v=2")
}

// configManagerFound: kube-proxy's API-server config manager read the
// master Endpoints at once, without a failed try.
func (l *lab) configManagerFound() error {
	return testbin.Poll(60*time.Second, 200*time.Millisecond, func() error {
		b, _ := os.ReadFile(l.proxyLog)
		if strings.Contains(string(b), configManagerFailed) {
			return fmt.Errorf("kube-proxy could not get the master Endpoints:\n%s", arktoslab.Tail(l.proxyLog, 20))
		}
		if !arktoslab.Alive(l.proxy) {
			return fmt.Errorf("kube-proxy exited:\n%s", arktoslab.Tail(l.proxyLog, 20))
		}
		if !strings.Contains(string(b), configManagerOK) {
			return fmt.Errorf("kube-proxy's log has no %q yet", configManagerOK)
		}
		return nil
	})
}

// waitDNAT waits until kube-proxy's rules send ip:port/proto to want.
func (l *lab) waitDNAT(what, ip, proto string, port int, want string) error {
	start := time.Now()
	var got []string
	err := testbin.Poll(90*time.Second, 250*time.Millisecond, func() error {
		if !arktoslab.Alive(l.proxy) {
			return fmt.Errorf("kube-proxy exited:\n%s", arktoslab.Tail(l.proxyLog, 20))
		}
		rules, err := arktoslab.NATRules()
		if err != nil {
			return err
		}
		if got = rules.DNAT(ip, proto, port); strings.Join(got, ",") != want {
			return fmt.Errorf("%s (%s:%d/%s) DNATs to %v, want [%s]", what, ip, port, proto, got, want)
		}
		return nil
	})
	if err == nil {
		fmt.Printf("      %s %s:%d/%s -> %s after %v\n", what, ip, port, proto, want, time.Since(start).Round(time.Millisecond))
	}
	return err
}

// nodeRegistered: hollow-node's kubelet registered its Node in the
// resource partition, and it is Ready.
func (l *lab) nodeRegistered() error {
	return testbin.Poll(120*time.Second, time.Second, func() error {
		if !arktoslab.Alive(l.node) {
			return fmt.Errorf("hollow-node exited:\n%s", arktoslab.Tail(l.nodeLog, 20))
		}
		var node struct {
			Status struct {
				Conditions []struct{ Type, Status string }
			}
		}
		if err := arktoslab.Request("GET", l.rp+"/api/v1/nodes/"+nodeName, "", &node); err != nil {
			return fmt.Errorf("node %s: %v", nodeName, err)
		}
		for _, c := range node.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready: %+v", nodeName, node.Status.Conditions)
	})
}

// proxyStaysUp: kube-proxy still runs hold after its start (by default past
// the config manager's 5 minutes), and never logged a failed try.
func (l *lab) proxyStaysUp(start time.Time, hold time.Duration) error {
	for time.Since(start) < hold {
		if !arktoslab.Alive(l.proxy) {
			return fmt.Errorf("kube-proxy exited after %v:\n%s", time.Since(start).Round(time.Second), arktoslab.Tail(l.proxyLog, 20))
		}
		time.Sleep(time.Second)
	}
	if !arktoslab.Alive(l.proxy) {
		return fmt.Errorf("kube-proxy exited:\n%s", arktoslab.Tail(l.proxyLog, 20))
	}
	if b, _ := os.ReadFile(l.proxyLog); strings.Contains(string(b), configManagerFailed) {
		return fmt.Errorf("kube-proxy logged %q", configManagerFailed)
	}
	fmt.Printf("      kube-proxy still running %v after its start\n", time.Since(start).Round(time.Second))
	return nil
}

func (l *lab) teardown() {
	arktoslab.Stop(l.proxy)
	arktoslab.Stop(l.node)
	arktoslab.Stop(l.fakeTP)
	if err := arktoslab.RemoveHollowRoots(l.hollowBefore); err != nil {
		l.t.Log(err)
	}
	if l.labSH != "" {
		if out, err := exec.Command("bash", l.labSH, "down", filepath.Join(l.dir, "rp")).CombinedOutput(); err != nil {
			l.t.Logf("arktos-lab.sh down: %v\n%s", err, out)
		}
	}
	if l.t.Failed() || os.Getenv("KEEP_LOGS") != "" {
		logs, _ := filepath.Glob(filepath.Join(l.dir, "*.log"))
		for _, f := range logs {
			fmt.Printf("---- %s (last 40 lines)\n%s\n", filepath.Base(f), arktoslab.Tail(f, 40))
		}
	}
}
