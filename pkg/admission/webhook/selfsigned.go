package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Names of the files SelfSigned writes.
const (
	CAFileName   = "ca.crt"  // the CA bundle: the webhook configuration's caBundle
	CAKeyName    = "ca.key"  // kept so the pair can be inspected; not needed to serve
	CertFileName = "tls.crt" // the serving certificate (--tls-cert-file)
	KeyFileName  = "tls.key" // its private key (--tls-private-key-file)
)

// SelfSignedFiles are the paths SelfSigned wrote or reused.
type SelfSignedFiles struct {
	CAFile, CertFile, KeyFile string
}

// SelfSigned makes dir hold a development CA and a serving certificate for
// hosts (DNS names or IP addresses). Files that already hold a serving
// certificate signed by the CA, valid for every host for at least another
// day, are reused, so the CA bundle stays stable across restarts; otherwise
// new ones replace them. Keys are written with mode 0600.
//
// It is a dev mode: the CA key sits next to the certificates.
func SelfSigned(dir string, hosts []string, now time.Time) (SelfSignedFiles, error) {
	f := SelfSignedFiles{
		CAFile:   filepath.Join(dir, CAFileName),
		CertFile: filepath.Join(dir, CertFileName),
		KeyFile:  filepath.Join(dir, KeyFileName),
	}
	if len(hosts) == 0 {
		return f, errors.New("self-signed certificate: no hosts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, fmt.Errorf("self-signed certificate: %w", err)
	}
	if reusable(f, hosts, now) == nil {
		return f, nil
	}
	caPEM, caKeyPEM, certPEM, keyPEM, err := generate(hosts, now)
	if err != nil {
		return f, fmt.Errorf("self-signed certificate: %w", err)
	}
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{filepath.Join(dir, CAKeyName), caKeyPEM, 0o600},
		{f.KeyFile, keyPEM, 0o600},
		{f.CertFile, certPEM, 0o644},
		{f.CAFile, caPEM, 0o644},
	} {
		if err := writeAtomic(w.path, w.data, w.mode); err != nil {
			return f, fmt.Errorf("self-signed certificate: %w", err)
		}
	}
	return f, nil
}

// reusable reports why the files in f cannot serve hosts, or nil.
func reusable(f SelfSignedFiles, hosts []string, now time.Time) error {
	pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA certificate")
	}
	for _, h := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: now.Add(24 * time.Hour)}); err != nil {
			return err
		}
	}
	return nil
}

func generate(hosts []string, now time.Time) (caPEM, caKeyPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "tp-admission-webhook development CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: caKeyDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil { // crypto/rand does not fail on supported platforms
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// writeAtomic replaces path so that a reader never sees half a file.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
