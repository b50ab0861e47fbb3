//go:build arktoscluster

package arktoscluster

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/tpkit-dev/tpkit/testbed/arktoslab"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// The kubelet API per TP (docs/arktos-node.md, "The kubelet's API in
// scale-out"): pods of the system tenant can share tenant/namespace/name
// across TPs, and every request through a TP's API server must reach that
// TP's pod. tries is how often each kubectl command runs through each TP.
const tries = 20

// twin is system/default/NAME in TP i: a shell that prints "I am tpN", keeps
// "tpN" in /tmp/tp, answers "tpN" on port 8080 (perl-base, which the
// partition-dns image has as Debian's essential set does) and echoes each
// line of its stdin as "tpN: LINE" (for attach).
func (l *lab) twin(i int, name string, annotations string) error {
	tp := fmt.Sprintf("tp%d", i+1)
	script := fmt.Sprintf(`echo "I am %[1]s"; echo %[1]s > /tmp/tp
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die "listen: $!"; while ($c = $s->accept) { print $c "%[1]s\n"; close $c }' &
while read -r line; do echo "%[1]s: $line"; done
wait`, tp)
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q%s},"spec":{"nodeName":%q,
"terminationGracePeriodSeconds":1,"automountServiceAccountToken":false,
"containers":[{"name":"c","image":%q,"imagePullPolicy":"Never","stdin":true,"command":["/bin/sh","-c",%q]}]}}`,
		name, annotations, node, l.dnsImage, script)
	return arktoslab.Request("POST", l.tpURL[i]+"/api/v1/tenants/system/namespaces/default/pods", body, nil)
}

// running waits until pod tenant/ns/name of TP i runs, and returns its UID.
func (l *lab) running(i int, tenant, ns, name string) (string, error) {
	var uid string
	err := testbin.Poll(90*time.Second, 500*time.Millisecond, func() error {
		obj, err := l.get(i, "/api/v1/tenants/"+tenant+"/namespaces/"+ns+"/pods/"+name)
		if err != nil {
			return err
		}
		uid = arktoslab.Str(obj, "metadata", "uid")
		if phase := arktoslab.Str(obj, "status", "phase"); phase != "Running" {
			return fmt.Errorf("pod %s/%s/%s of tp%d is %q", tenant, ns, name, i+1, phase)
		}
		return nil
	})
	return uid, err
}

// arktosKubectl runs Arktos's kubectl (ARKTOS_BIN's, which knows
// --tenant), as an Arktos admin types it, against TP i.
func (l *lab) arktosKubectl(i int, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(l.bin, "kubectl"), append([]string{"--kubeconfig=" + l.tpKC[i], "--request-timeout=20s"}, args...)...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s (tp%d): %v: %s", strings.Join(args, " "), i+1, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// kubeletAPITwins: system/default/same runs in tp1 and in tp2 on the node;
// kubectl logs, exec, attach, port-forward and cp through each TP reach that
// TP's pod, every one of `tries` times. No Node is copied into any TP: the
// TPs' API servers find the node in the resource partition.
func (l *lab) kubeletAPITwins() error {
	for i := range l.tpURL {
		if err := l.twin(i, "same", ""); err != nil {
			return err
		}
	}
	for i := range l.tpURL {
		if _, err := l.running(i, "system", "default", "same"); err != nil {
			return err
		}
	}
	kinds := []struct {
		name string
		run  func(i, n int) (string, error)
		want func(tp string, n int) string // what a TP's own pod answers
	}{
		{"logs", func(i, _ int) (string, error) { return l.arktosKubectl(i, nil, "-n", "default", "logs", "same") },
			func(tp string, _ int) string { return "I am " + tp }},
		{"exec", func(i, _ int) (string, error) {
			return l.arktosKubectl(i, nil, "-n", "default", "exec", "same", "--", "cat", "/tmp/tp")
		}, func(tp string, _ int) string { return tp }},
		{"cp", l.copyFromTwin, func(tp string, _ int) string { return tp }},
		{"attach", l.attachTwin, func(tp string, n int) string { return fmt.Sprintf("%s: hello-%d", tp, n) }},
		{"port-forward", l.portForwardTwin, func(tp string, _ int) string { return tp }},
	}
	var failures []string
	for _, k := range kinds {
		wrong := 0
		for n := 0; n < tries; n++ {
			for i := range l.tpURL {
				tp := fmt.Sprintf("tp%d", i+1)
				got, err := k.run(i, n)
				if err != nil {
					return fmt.Errorf("%s through %s, try %d: %v", k.name, tp, n+1, err)
				}
				if want := k.want(tp, n); !strings.Contains(got, want) {
					if wrong++; wrong <= 3 {
						failures = append(failures, fmt.Sprintf("%s through %s, try %d: %q, want %q", k.name, tp, n+1, got, want))
					}
				}
			}
		}
		fmt.Printf("      %-12s %d of %d through each TP reached that TP's pod\n", k.name, tries-wrong/2, tries)
		if wrong > 0 {
			failures = append(failures, fmt.Sprintf("%s: %d of %d answers from the other TP's pod", k.name, wrong, 2*tries))
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("%s", strings.Join(failures, "; "))
	}
	return nil
}

// copyFromTwin is kubectl cp of the twin's /tmp/tp through TP i (try n).
func (l *lab) copyFromTwin(i, n int) (string, error) {
	dst := filepath.Join(l.dir, fmt.Sprintf("cp.tp%d.%d", i+1, n))
	if _, err := l.arktosKubectl(i, nil, "cp", "default/same:/tmp/tp", dst); err != nil {
		return "", err
	}
	b, err := os.ReadFile(dst)
	return strings.TrimSpace(string(b)), err
}

// attachTwin attaches to the twin through TP i with stdin, sends
// "hello-N" and reads until the pod echoes it (or 20 s pass).
func (l *lab) attachTwin(i, n int) (string, error) {
	cmd := exec.Command(filepath.Join(l.bin, "kubectl"), "--kubeconfig="+l.tpKC[i], "-n", "default", "attach", "-i", "same", "-c", "c")
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	hello := fmt.Sprintf("hello-%d", n)
	// The stream opens asynchronously; say hello until the pod answers.
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	var seen []string
	if _, err := fmt.Fprintln(in, hello); err != nil {
		return "", err
	}
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return strings.Join(seen, "|"), nil
			}
			seen = append(seen, line)
			if strings.HasSuffix(line, ": "+hello) {
				return line, nil
			}
		case <-tick.C:
			_, _ = fmt.Fprintln(in, hello)
		case <-deadline:
			return strings.Join(seen, "|"), fmt.Errorf("no echo of %s within 20 s", hello)
		}
	}
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)

// portForwardTwin forwards a local port to the twin's 8080 through TP i and
// reads what the pod answers there.
func (l *lab) portForwardTwin(i, _ int) (string, error) {
	cmd := exec.Command(filepath.Join(l.bin, "kubectl"), "--kubeconfig="+l.tpKC[i], "-n", "default", "port-forward", "pod/same", ":8080")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	port := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		var seen []string
		for s.Scan() {
			seen = append(seen, s.Text())
			if m := forwarding.FindStringSubmatch(s.Text()); m != nil {
				port <- m[1]
				io.Copy(io.Discard, out)
				return
			}
		}
		port <- "error: " + strings.Join(seen, "|")
	}()
	var p string
	select {
	case p = <-port:
	case <-time.After(20 * time.Second):
		return "", fmt.Errorf("kubectl port-forward through tp%d printed no port within 20 s", i+1)
	}
	if strings.HasPrefix(p, "error: ") {
		return "", fmt.Errorf("kubectl port-forward through tp%d: %s", i+1, p)
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// kubeletAPITenantPod: a pod of tenant kapi, which lives in tp2; kubectl
// logs and exec through tp2, with Arktos's --tenant, reach it.
func (l *lab) kubeletAPITenantPod() error {
	if err := arktoslab.Request("POST", l.tpURL[1]+"/api/v1/tenants", `{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"kapi"},"spec":{"storageClusterId":"0"}}`, nil); err != nil {
		return err
	}
	if err := arktoslab.Request("POST", l.tpURL[1]+"/api/v1/tenants/kapi/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"web"}}`, nil); err != nil {
		return err
	}
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"tenant-app"},"spec":{"nodeName":%q,
"terminationGracePeriodSeconds":1,"automountServiceAccountToken":false,
"containers":[{"name":"c","image":%q,"imagePullPolicy":"Never","command":["/bin/sh","-c","echo kapi-in-tp2; exec sleep infinity"]}]}}`, node, l.dnsImage)
	if err := arktoslab.Request("POST", l.tpURL[1]+"/api/v1/tenants/kapi/namespaces/web/pods", body, nil); err != nil {
		return err
	}
	if _, err := l.running(1, "kapi", "web", "tenant-app"); err != nil {
		return err
	}
	logs, err := l.arktosKubectl(1, nil, "--tenant", "kapi", "-n", "web", "logs", "tenant-app")
	if err != nil {
		return err
	}
	out, err := l.arktosKubectl(1, nil, "--tenant", "kapi", "-n", "web", "exec", "tenant-app", "--", "sh", "-c", "echo exec-in-$HOSTNAME")
	if err != nil {
		return err
	}
	if logs != "kapi-in-tp2" || out != "exec-in-tenant-app" {
		return fmt.Errorf("kubectl --tenant kapi logs: %q, exec: %q; want kapi-in-tp2 and exec-in-tenant-app", logs, out)
	}
	return nil
}

// kubeletAPICredentials: the kubelet has a client CA per TP
// (--tenant-partition-client-ca-files); a client certificate of tp1's CA
// asking for tp2's twin, straight at the kubelet's port, is refused 403 and
// counted, and tp2's own certificate gets tp2's pod's logs.
func (l *lab) kubeletAPICredentials() error {
	if !l.supports("kubelet", "tenant-partition-client-ca-files") {
		return fmt.Errorf("the kubelet has no --tenant-partition-client-ca-files: one client CA for every TP")
	}
	uid, err := l.running(1, "system", "default", "same")
	if err != nil {
		return err
	}
	path := fmt.Sprintf("/containerLogs/system/default/same/%s/c", uid)
	get := func(tp int, p string) (int, string, error) {
		cert, err := tls.LoadX509KeyPair(filepath.Join(l.caDir, fmt.Sprintf("tp%d-apiserver.crt", tp)), filepath.Join(l.caDir, fmt.Sprintf("tp%d-apiserver.key", tp)))
		if err != nil {
			return 0, "", err
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}} // the kubelet's self-signed serving certificate
		resp, err := c.Get("https://" + nodeIP + ":10250" + p)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b)), nil
	}
	refused := func() (string, error) {
		st, m, err := get(1, "/metrics") // node-scoped: the first TP's to authenticate
		if err != nil {
			return "", err
		}
		if st != http.StatusOK {
			return "", fmt.Errorf("the kubelet's /metrics with tp1's certificate: HTTP %d %.200q", st, m)
		}
		for _, line := range strings.Split(m, "\n") {
			if strings.HasPrefix(line, "kubelet_tenant_partition_auth_refused_total ") {
				return strings.TrimPrefix(line, "kubelet_tenant_partition_auth_refused_total "), nil
			}
		}
		return "", fmt.Errorf("the kubelet's /metrics has no kubelet_tenant_partition_auth_refused_total")
	}
	before, err := refused()
	if err != nil {
		return err
	}
	// One certificate without the other's CA would not be sent at all: the
	// kubelet must ask for every TP's (its TLS ClientCAs).
	st1, body1, err := get(1, path)
	if err != nil {
		return err
	}
	st2, body2, err := get(2, path)
	if err != nil {
		return err
	}
	after, err := refused()
	if err != nil {
		return err
	}
	// The log's first line (the attach check's echoes follow it).
	first := strings.SplitN(body2, "\n", 2)[0]
	fmt.Printf("      tp1's certificate: HTTP %d %q; tp2's: HTTP %d, first line %q; refusals counted %s -> %s\n", st1, body1, st2, first, before, after)
	if st1 != http.StatusForbidden || st2 != http.StatusOK || first != "I am tp2" || before == after {
		return fmt.Errorf("want 403 for tp1's certificate, tp2's logs for tp2's, and one more refusal counted")
	}
	return nil
}

// kubeletAPIMirrorLookalike: system/default/mirrorlike in tp1, and in tp2
// with the mirror annotation a kubelet puts on the mirror pods it writes.
// tp2's is an ordinary pod of tp2 (it runs), and tp1's pod of that name is
// not deleted as an orphaned mirror pod's name.
func (l *lab) kubeletAPIMirrorLookalike() error {
	if err := l.twin(0, "mirrorlike", ""); err != nil {
		return err
	}
	if err := l.twin(1, "mirrorlike", `,"annotations":{"kubernetes.io/config.mirror":"lookalike"}`); err != nil {
		return err
	}
	for i := range l.tpURL {
		if _, err := l.running(i, "system", "default", "mirrorlike"); err != nil {
			return err
		}
	}
	// The kubelet deletes orphaned mirror pods on its housekeeping (every
	// 2 s): after 10 s both pods must still be there and running.
	time.Sleep(10 * time.Second)
	for i := range l.tpURL {
		if _, err := l.running(i, "system", "default", "mirrorlike"); err != nil {
			return fmt.Errorf("10 s later: %v", err)
		}
		if out, err := l.arktosKubectl(i, nil, "-n", "default", "logs", "mirrorlike"); err != nil || out != fmt.Sprintf("I am tp%d", i+1) {
			return fmt.Errorf("logs of tp%d's mirrorlike: %q, %v", i+1, out, err)
		}
	}
	return nil
}

// kubeletAPITwinDeleted: tp1's twin is deleted; tp2's stays reachable
// through tp2, and tp1 finds no pod of that name.
func (l *lab) kubeletAPITwinDeleted() error {
	if err := arktoslab.Request("DELETE", l.tpURL[0]+"/api/v1/tenants/system/namespaces/default/pods/same", `{"gracePeriodSeconds":0}`, nil); err != nil {
		return err
	}
	err := testbin.Poll(60*time.Second, 500*time.Millisecond, func() error {
		if _, err := l.get(0, "/api/v1/tenants/system/namespaces/default/pods/same"); !arktoslab.IsNotFound(err) {
			return fmt.Errorf("tp1's pod same is not gone yet (%v)", err)
		}
		out, err := exec.Command("docker", "-H", "unix://"+l.dockerSock, "ps", "-q",
			"--filter", "label=io.kubernetes.pod.name=same").CombinedOutput()
		if err != nil {
			return fmt.Errorf("docker ps: %v: %s", err, out)
		}
		if n := len(strings.Fields(string(out))); n != 2 { // tp2's pod: its sandbox and its container
			return fmt.Errorf("%d containers of pods named same run, want tp2's 2", n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for n := 0; n < 5; n++ {
		logs, err := l.arktosKubectl(1, nil, "-n", "default", "logs", "same")
		if err != nil {
			return err
		}
		out, err := l.arktosKubectl(1, nil, "-n", "default", "exec", "same", "--", "cat", "/tmp/tp")
		if err != nil {
			return err
		}
		// The log has the attach check's echoes after its first line.
		if !strings.HasPrefix(logs, "I am tp2\n") || strings.Contains(logs, "tp1") || out != "tp2" {
			return fmt.Errorf("through tp2 after tp1's twin is deleted: logs %q, exec %q", logs, out)
		}
	}
	return nil
}

// supports tells whether the Arktos program bin/name has a flag (or, with
// "=", a feature gate) of that name: the lab runs stock binaries too, to
// show what they get wrong.
func (l *lab) supports(name, flag string) bool {
	out, _ := exec.Command(filepath.Join(l.bin, name), "--help").CombinedOutput()
	if strings.Contains(flag, "=") {
		return strings.Contains(string(out), flag)
	}
	return strings.Contains(string(out), "--"+flag+" ")
}
