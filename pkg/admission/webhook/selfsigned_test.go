package webhook

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSelfSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	now := time.Now()
	hosts := []string{"localhost", "127.0.0.1", "tp-admission-webhook.kube-system.svc"}
	f, err := SelfSigned(dir, hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(f.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("ca.crt holds no certificate")
	}
	pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	for _, h := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool}); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "evil.example", Roots: pool}); err == nil {
		t.Error("certificate valid for a host it was not made for")
	}
	for _, k := range []string{f.KeyFile, filepath.Join(dir, CAKeyName)} {
		if st, err := os.Stat(k); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v", k, st.Mode(), err)
		}
	}

	// Same hosts: reused, so the CA bundle a webhook configuration holds stays valid.
	if _, err := SelfSigned(dir, hosts, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ca2, _ := os.ReadFile(f.CAFile); !bytes.Equal(ca, ca2) {
		t.Error("CA replaced although the files were still good")
	}
	// A new host: regenerated.
	if _, err := SelfSigned(dir, append(hosts, "other.svc"), now); err != nil {
		t.Fatal(err)
	}
	if ca3, _ := os.ReadFile(f.CAFile); bytes.Equal(ca, ca3) {
		t.Error("CA kept although the certificate lacked a host")
	}
	// Near expiry: regenerated.
	ca4, _ := os.ReadFile(f.CAFile)
	if _, err := SelfSigned(dir, hosts, now.Add(365*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ca5, _ := os.ReadFile(f.CAFile); bytes.Equal(ca4, ca5) {
		t.Error("CA kept although the serving certificate expires within a day")
	}
	if _, err := SelfSigned(dir, nil, now); err == nil {
		t.Error("no hosts accepted")
	}
}

func TestKeyPairReloads(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	fa, err := SelfSigned(a, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fb, err := SelfSigned(b, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	serving := t.TempDir()
	cert, key := filepath.Join(serving, "tls.crt"), filepath.Join(serving, "tls.key")
	copyFile(t, fa.CertFile, cert)
	copyFile(t, fa.KeyFile, key)
	kp, err := LoadKeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", kp.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	get := func(caFile string) error {
		pool := x509.NewCertPool()
		ca, _ := os.ReadFile(caFile)
		pool.AppendCertsFromPEM(ca)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		defer c.CloseIdleConnections()
		resp, err := c.Get("https://" + ln.Addr().(*net.TCPAddr).String() + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(fa.CAFile); err != nil {
		t.Fatalf("first pair: %v", err)
	}
	// Rotate: the next handshake serves the new pair without a restart.
	copyFile(t, fb.CertFile, cert)
	copyFile(t, fb.KeyFile, key)
	future := time.Now().Add(time.Minute)
	os.Chtimes(cert, future, future)
	os.Chtimes(key, future, future)
	if err := get(fb.CAFile); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if err := get(fa.CAFile); err == nil {
		t.Fatal("old CA still trusted after rotation")
	}
	// A broken half-written pair keeps the last good one serving.
	os.WriteFile(key, []byte("garbage"), 0o600)
	os.Chtimes(key, future.Add(time.Minute), future.Add(time.Minute))
	if err := get(fb.CAFile); err != nil {
		t.Fatalf("broken files dropped the good pair: %v", err)
	}
	if _, err := LoadKeyPair(cert, key); err == nil {
		t.Fatal("LoadKeyPair accepted a broken key")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
