// Command nodeproxy is the API endpoint through which `make
// check-conformance` (hack/conformance.sh) runs Kubernetes's e2e suite
// against a tenant partition: every request goes to the TP, except those for
// Nodes, which go to the resource partition, and the list of the cluster DNS
// pods, which goes to the TP that runs them.
//
// In Arktos's scale-out, nodes register with a resource partition only, and
// a TP's API server has no Node objects; the suite, written for one API
// server, reads the nodes' addresses from the server it tests (the NodePort
// specs fail with "Failed to get Node internal IP" without them). nodeproxy
// shows it the nodes as a client that knows both partitions sees them,
// writing nothing into either: no Node is copied into a TP.
//
// The same holds for the cluster DNS: partition-dns serves every TP from one
// TP's system tenant (deploy/partition-dns), and the DNS specs that edit the
// kube-dns ConfigMap first look for its pods (kube-system, k8s-app=kube-dns)
// in the server they test, and stop when there are none. -dns names the TP
// that runs them; only that GET goes there. The ConfigMap itself is the
// tested TP's own (each TP's configures its own pods' lookups).
//
//	nodeproxy -listen 127.0.0.1:0 -tp http://10.254.0.1:PORT -rp http://10.254.0.1:PORT [-dns URL] -url-file F
//
// It serves plain HTTP (the partitions' insecure ports), streams watches and
// passes upgraded connections (exec, attach, port-forward) through, writes
// its URL to -url-file once it listens, and runs until SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	tp := flag.String("tp", "", "the tenant partition's URL (every request but the Nodes')")
	rp := flag.String("rp", "", "the resource partition's URL (the Nodes)")
	dnsTP := flag.String("dns", "", "the URL of the TP that runs the cluster DNS pods (default: -tp)")
	urlFile := flag.String("url-file", "", "write the URL served on into this file once listening")
	flag.Parse()
	if *dnsTP == "" {
		*dnsTP = *tp
	}
	if err := run(*listen, *tp, *rp, *dnsTP, *urlFile); err != nil {
		fmt.Fprintln(os.Stderr, "nodeproxy:", err)
		os.Exit(1)
	}
}

func run(listen, tp, rp, dnsTP, urlFile string) error {
	h, err := newHandler(tp, rp, dnsTP)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	u := "http://" + l.Addr().String()
	if urlFile != "" {
		if err := os.WriteFile(urlFile, []byte(u+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("nodeproxy: %s: Nodes from %s, the cluster DNS pods from %s, the rest from %s\n", u, rp, dnsTP, tp)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHandler routes Node requests to rp, the list of the cluster DNS pods
// to dnsTP, and the rest to tp.
func newHandler(tp, rp, dnsTP string) (http.Handler, error) {
	tpURL, err := parse("-tp", tp)
	if err != nil {
		return nil, err
	}
	rpURL, err := parse("-rp", rp)
	if err != nil {
		return nil, err
	}
	dnsURL, err := parse("-dns", dnsTP)
	if err != nil {
		return nil, err
	}
	toTP, toRP, toDNS := proxy(tpURL), proxy(rpURL), proxy(dnsURL)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case isNodes(r.URL.Path):
			toRP.ServeHTTP(w, r)
		case isDNSPods(r):
			toDNS.ServeHTTP(w, r)
		default:
			toTP.ServeHTTP(w, r)
		}
	}), nil
}

func parse(flagName, s string) (*url.URL, error) {
	if s == "" {
		return nil, fmt.Errorf("%s is required", flagName)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want http(s)://HOST:PORT", flagName, s)
	}
	return u, nil
}

// proxy forwards to target, flushing at once so that watches stream.
func proxy(target *url.URL) *httputil.ReverseProxy {
	p := httputil.NewSingleHostReverseProxy(target)
	p.FlushInterval = -1
	return p
}

// isNodes reports whether path names the Node resource or one Node (and its
// subresources), in core/v1 or in the watch form.
func isNodes(path string) bool {
	for _, prefix := range []string{"/api/v1/nodes", "/api/v1/watch/nodes"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// isDNSPods reports whether r lists the cluster DNS pods: the system
// tenant's kube-system pods with the label k8s-app=kube-dns, as the DNS
// ConfigMap specs find them (Arktos's client-go names the tenant in the
// path: /api/v1/tenants/system/namespaces/kube-system/pods).
func isDNSPods(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if p := r.URL.Path; p != "/api/v1/namespaces/kube-system/pods" && p != "/api/v1/tenants/system/namespaces/kube-system/pods" {
		return false
	}
	for _, term := range strings.Split(r.URL.Query().Get("labelSelector"), ",") {
		if strings.ReplaceAll(term, " ", "") == "k8s-app=kube-dns" {
			return true
		}
	}
	return false
}
