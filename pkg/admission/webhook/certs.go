package webhook

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// KeyPair serves a certificate and key from files and picks up replacements
// (cert-manager, a rotated Secret) at the next TLS handshake, without a
// restart. Use GetCertificate in a tls.Config.
type KeyPair struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime [2]time.Time
}

// LoadKeyPair loads certFile and keyFile; it fails if they do not form a pair.
func LoadKeyPair(certFile, keyFile string) (*KeyPair, error) {
	k := &KeyPair{certFile: certFile, keyFile: keyFile}
	if _, err := k.GetCertificate(nil); err != nil {
		return nil, err
	}
	return k, nil
}

// GetCertificate implements tls.Config.GetCertificate. When the files changed
// but no longer form a pair (one written, the other not yet), the previous
// pair keeps serving.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var mt [2]time.Time
	for i, f := range []string{k.certFile, k.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			if k.cert != nil {
				return k.cert, nil
			}
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
		mt[i] = st.ModTime()
	}
	if k.cert != nil && mt == k.modTime {
		return k.cert, nil
	}
	c, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if k.cert != nil {
			return k.cert, nil
		}
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	k.cert, k.modTime = &c, mt
	return k.cert, nil
}

// TLSConfig returns a server configuration serving k, TLS 1.2 or newer, with
// HTTP/2 offered as the API server's webhook client prefers it.
func (k *KeyPair) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: k.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}
