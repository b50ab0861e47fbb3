package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// arktosUser is how Arktos 6685f14's x509 authenticator names the user of
// a client certificate (staging/src/k8s.io/apiserver/pkg/authentication/
// request/x509/x509.go, convertToUserInfo): the tenant from a sole
// organization "tenant:<name>", else the part of the CN before a colon.
func arktosUser(s pkix.Name) (name, tenant string) {
	if len(s.Organization) == 1 {
		if t, ok := strings.CutPrefix(s.Organization[0], "tenant:"); ok {
			return s.CommonName, t
		}
	}
	if i := strings.Index(s.CommonName, ":"); i >= 0 {
		return s.CommonName, s.CommonName[:i]
	}
	return s.CommonName, ""
}

// TestTPKubeconfig: hack/tp-kubeconfig.sh turns a TP's admin kubeconfig and
// the TP's client CA into a kubeconfig for tpkit:partition-dns, the user
// deploy/partition-dns/rbac-per-tp.yaml binds, of the system tenant. A TLS
// server that trusts only that CA's client certificates stands in for the
// TP; the script's --check makes the real kubectl list every tenant's
// services through it with the new kubeconfig, and the certificate it
// presented names that user by Arktos's rule. The context keeps the admin
// kubeconfig's name, by which partition-dns names the TP.
func TestTPKubeconfig(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl is missing: hack/ensure-tools.sh kubectl")
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is missing: hack/ensure-tools.sh openssl")
	}
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	keyDER, _ := x509.MarshalECPrivateKey(caKey)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caCrt, caKeyFile := write("client-ca.crt", caPEM), write("client-ca.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))

	// The TP: serving certificate from the same CA, client certificates required.
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	var mu sync.Mutex
	var seen []pkix.Name
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, c := range r.TLS.PeerCertificates[:1] {
			seen = append(seen, c.Subject)
		}
		mu.Unlock()
		if r.URL.Path != "/api/v1/tenants/all/services" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}}}
	// The kubectl on these machines (Google Cloud SDK's dispatcher) asks each
	// kubeconfig's server for /version first, with the admin's credentials,
	// which carry no certificate: those handshakes fail here, as they should.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()

	admin := write("admin.kubeconfig", fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: admin
  user: {token: not-used}
contexts:
- name: tp-east
  context: {cluster: c, user: admin}
current-context: tp-east
`, srv.URL, base64.StdEncoding.EncodeToString(caPEM)))
	out := filepath.Join(dir, "tp1.kubeconfig")
	cmd := exec.Command("../../hack/tp-kubeconfig.sh", "--admin", admin, "--ca-cert", caCrt, "--ca-key", caKeyFile, "--out", out, "--check")
	cmd.Env = append(os.Environ(), "HOME="+dir) // kubectl's cache
	b, err := cmd.CombinedOutput()
	t.Logf("%s", b)
	if err != nil {
		t.Fatalf("tp-kubeconfig.sh: %v", err)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v, want 0600", out, err, st.Mode())
	}

	mu.Lock()
	if len(seen) == 0 {
		t.Fatal("--check never reached the TP")
	}
	for _, s := range seen {
		if name, tenant := arktosUser(s); name != "tpkit:partition-dns" || tenant != "system" {
			t.Errorf("the certificate (%s) is user %q of tenant %q to Arktos, want tpkit:partition-dns of system", s, name, tenant)
		}
	}
	mu.Unlock()

	cfg, err := clientcmd.LoadFromFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "tp-east" {
		t.Errorf("current context %q, want the admin kubeconfig's tp-east", cfg.CurrentContext)
	}
	if c := cfg.Contexts[cfg.CurrentContext]; c == nil || c.AuthInfo != "tpkit:partition-dns" {
		t.Errorf("context %+v, want user tpkit:partition-dns", c)
	}
	if u := cfg.AuthInfos["tpkit:partition-dns"]; u == nil || len(u.ClientCertificateData) == 0 || len(u.ClientKeyData) == 0 || u.Token != "" {
		t.Errorf("user %+v: want an embedded client certificate and key, and nothing of the admin's", u)
	}

	// Bad input: a clear error, nothing written.
	again := exec.Command("../../hack/tp-kubeconfig.sh", "--admin", admin, "--ca-cert", caCrt, "--ca-key", caKeyFile, "--out", out)
	if b, err := again.CombinedOutput(); err == nil || !strings.Contains(string(b), "exists") {
		t.Errorf("an existing --out: %v: %s", err, b)
	}
	if b, err := exec.Command("../../hack/tp-kubeconfig.sh", "--admin", admin).CombinedOutput(); err == nil || !strings.Contains(string(b), "--ca-key") {
		t.Errorf("no CA: %v: %s", err, b)
	}
}
