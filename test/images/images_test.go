//go:build linux

package images

import (
	"archive/tar"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// ociImage is what an archive says of its one image.
type ociImage struct {
	ref    string // org.opencontainers.image.ref.name: the image's name
	config struct {
		Created time.Time `json:"created"`
		Config  struct {
			User       string   `json:"User"`
			Entrypoint []string `json:"Entrypoint"`
			Cmd        []string `json:"Cmd"`
		} `json:"config"`
	}
	layers []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	}
}

// readArchive reads the index, manifest and config of an OCI archive.
func readArchive(t *testing.T, path string) *ociImage {
	t.Helper()
	small := map[string][]byte{} // index.json and the JSON blobs
	eachEntry(t, path, func(h *tar.Header, r io.Reader) {
		if h.Typeflag == tar.TypeReg && h.Size < 1<<16 {
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			small[h.Name] = b
		}
	})
	blob := func(digest string, v any) {
		t.Helper()
		b, ok := small["blobs/"+strings.Replace(digest, ":", "/", 1)]
		if !ok {
			t.Fatalf("%s: no blob %s", path, digest)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: blob %s: %v", path, digest, err)
		}
	}
	var index struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(small["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("%s: index.json: %v, %d manifests", path, err, len(index.Manifests))
	}
	img := &ociImage{ref: index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]}
	var manifest struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
		Layers json.RawMessage `json:"layers"`
	}
	blob(index.Manifests[0].Digest, &manifest)
	blob(manifest.Config.Digest, &img.config)
	if err := json.Unmarshal(manifest.Layers, &img.layers); err != nil {
		t.Fatal(err)
	}
	return img
}

// eachEntry calls f for each entry of the tar file at path.
func eachEntry(t *testing.T, path string, f func(*tar.Header, io.Reader)) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	tr := tar.NewReader(file)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		f(h, tr)
	}
}

// layerFiles lists the entries of the gzipped layer digest in the archive.
// gzip -d unpacks it: the race detector makes Go's own gzip slow.
func layerFiles(t *testing.T, path, digest string) []*tar.Header {
	t.Helper()
	var hs []*tar.Header
	eachEntry(t, path, func(h *tar.Header, r io.Reader) {
		if h.Name != "blobs/"+strings.Replace(digest, ":", "/", 1) {
			return
		}
		gz := exec.Command("gzip", "-dc")
		gz.Stdin, gz.Stderr = r, os.Stderr
		out, err := gz.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := gz.Start(); err != nil {
			t.Fatal(err)
		}
		lr := tar.NewReader(out)
		for {
			lh, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: layer %s: %v", path, digest, err)
			}
			hs = append(hs, lh)
		}
		if err := gz.Wait(); err != nil {
			t.Fatalf("%s: layer %s: gzip -d: %v", path, digest, err)
		}
	})
	if hs == nil {
		t.Fatalf("%s: no layer %s", path, digest)
	}
	return hs
}

// TestArchives checks what make images promises of each archive: its name
// and tag, the user and entrypoint, the size, and for the static images a
// single layer with the binary and /tmp alone (no /etc, no passwd), every
// file dated the image's creation, so that a rebuild gives the same layer.
func TestArchives(t *testing.T) {
	needImages(t)
	for _, p := range programs {
		t.Run(p, func(t *testing.T) {
			img := readArchive(t, archive(p))
			// In full, as kubelet looks for it after ctr images import.
			if want := "docker.io/" + image(p); img.ref != want {
				t.Errorf("ref name %q, want %q", img.ref, want)
			}
			c := img.config.Config
			if want := []string{"/usr/local/bin/" + p}; !slices.Equal(c.Entrypoint, want) || len(c.Cmd) != 0 {
				t.Errorf("entrypoint %q cmd %q, want %q and none", c.Entrypoint, c.Cmd, want)
			}
			var size int64
			for _, l := range img.layers {
				if !strings.HasSuffix(l.MediaType, "tar+gzip") {
					t.Errorf("layer %s: media type %s, want a gzipped tar", l.Digest, l.MediaType)
				}
				size += l.Size
			}
			t.Logf("%s: %d layers, %.1f MB compressed", img.ref, len(img.layers), float64(size)/1e6)
			limit, layers := int64(25e6), 1
			if p == "partition-dns" {
				limit, layers = 40e6, 2
			}
			// Not root by default; node-cache's DaemonSet asks for root.
			if c.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", c.User)
			}
			if size > limit || len(img.layers) != layers {
				t.Errorf("%d layers of %d bytes compressed, want %d under %d", len(img.layers), size, layers, limit)
			}
			if len(img.layers) == 0 {
				return
			}
			// The last layer: the binary (and, FROM scratch, /tmp).
			var names []string
			for _, h := range layerFiles(t, archive(p), img.layers[len(img.layers)-1].Digest) {
				names = append(names, h.Name)
				if !h.ModTime.Equal(img.config.Created) {
					t.Errorf("%s dated %v, want the image's creation %v", h.Name, h.ModTime, img.config.Created)
				}
				switch h.Name {
				case "tmp/":
					if h.Mode&0o7777 != 0o1777 {
						t.Errorf("/tmp mode %o, want 1777", h.Mode&0o7777)
					}
				case "usr/local/bin/" + p:
					if h.Uid != 0 || h.Mode&0o777 != 0o755 {
						t.Errorf("%s: uid %d mode %o, want root's, 755", h.Name, h.Uid, h.Mode&0o777)
					}
				}
			}
			want := []string{"tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/" + p}
			if p == "partition-dns" {
				want = want[1:]
			}
			slices.Sort(names)
			if !slices.Equal(names, want) {
				t.Errorf("last layer holds %q, want %q", names, want)
			}
		})
	}
}

// TestVersion: every image's program prints the version make stamped.
func TestVersion(t *testing.T) {
	needImages(t)
	for _, p := range programs {
		t.Run(p, func(t *testing.T) {
			out := runImage(t, p, nil, "--version")
			if want := p + " " + version + " (commit "; !strings.HasPrefix(out, want) {
				t.Errorf("--version: %q, want it to start with %q", out, want)
			}
		})
	}
}

// startFakeTP runs fake-tp's image on loopback with n TPs (seeded from
// examples/tps when seed is set) and returns the directory of its
// kubeconfigs, once its /readyz answers.
func startFakeTP(t *testing.T, n string, seed bool) string {
	t.Helper()
	kc := sharedDir(t)
	admin := testbin.FreePort(t)
	opts := []string{"--volume", kc + ":" + kc}
	args := []string{"--partitions", n, "--listen", "127.0.0.1:0", "--kubeconfig-dir", kc, "--admin-listen", admin}
	if seed {
		dir := filepath.Join(root, "examples", "tps")
		opts = append(opts, "--volume", dir+":/seed:ro")
		args = append(args, "--seed", "/seed")
	}
	p := startImage(t, "fake-tp", opts, args...)
	eventually(t, p, "fake-tp's /readyz", func() bool {
		code, _ := testbin.Get("http://" + admin + "/readyz")
		return code == 200
	})
	return kc
}

// TestFakeTP: fake-tp's image, as user 65532 from scratch, serves its TP on
// loopback and writes the kubeconfig; kubectl lists through it.
func TestFakeTP(t *testing.T) {
	needImages(t)
	kc := startFakeTP(t, "1", false)
	kubeconfig := filepath.Join(kc, "tp1.kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed (not on PATH); the list through it needs the real binary")
	}
	out, err := exec.Command("kubectl", "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(t.TempDir(), "cache"),
		"--request-timeout", "30s", "get", "namespaces", "-o", "name").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "namespace/kube-system") {
		t.Fatalf("kubectl get namespaces: %v\n%s", err, out)
	}
}

// TestPartitionDNS: partition-dns's image, run as deploy/partition-dns runs
// it (user 65532, read-only root, every capability dropped), reads three TPs
// of fake-tp's image, serves /ready and answers a cluster name over UDP and
// TCP, all on loopback.
func TestPartitionDNS(t *testing.T) {
	needImages(t)
	kc := startFakeTP(t, "3", true)
	var kubeconfigs []string
	for _, tp := range []string{"tp1", "tp2", "tp3"} {
		kubeconfigs = append(kubeconfigs, filepath.Join(kc, tp+".kubeconfig"))
	}
	addr, health, ready := testbin.FreePort(t), testbin.FreePort(t), testbin.FreePort(t)
	p := startImage(t, "partition-dns",
		[]string{"--user", "65532:65532", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--volume", kc + ":" + kc + ":ro"},
		"--tenant-server-kubeconfig", strings.Join(kubeconfigs, ","), "--zone", "cluster.local", "--zone", "in-addr.arpa",
		"--listen", addr, "--health-listen", health, "--ready-listen", ready, "--metrics-listen", "")
	eventually(t, p, "partition-dns's /ready", func() bool {
		code, _ := testbin.Get("http://" + ready + "/ready")
		return code == 200
	})
	if code, body := testbin.Get("http://" + health + "/readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, body)
	}
	// examples/tps/tp1: acme's web/frontend.
	const name, want = "frontend.web.acme.svc.cluster.local.", "10.96.10.1"
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network, Timeout: 5 * time.Second}
		m := new(dns.Msg).SetQuestion(name, dns.TypeA)
		r, _, err := c.Exchange(m, addr)
		if err != nil {
			t.Fatalf("%s %s: %v", network, name, err)
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("%s %s: %s", network, name, r)
		}
		if a, ok := r.Answer[0].(*dns.A); !ok || !a.A.Equal(net.ParseIP(want)) {
			t.Errorf("%s %s: %s, want A %s", network, name, r.Answer[0], want)
		}
	}
}

// TestNodeCacheTools: the node-cache modes in partition-dns's image find
// iptables (both backends) and ip, and node-cache, as root with the
// DaemonSet's NET_ADMIN, puts its addresses and NOTRACK rules in place and
// removes the rules on SIGTERM: in a network namespace of its own
// (--net=none), never the host's. One container: each of partition-dns's
// costs a copy of its root filesystem.
func TestNodeCacheTools(t *testing.T) {
	needImages(t)
	const script = `set -e
iptables --version; iptables-legacy --version; iptables-nft --version; ip -V
partition-dns node-cache --local-ip 169.254.20.10,10.0.0.10 --upstream-svc-ip 10.0.0.50 \
  --upstream-servers 127.0.0.1:53 --health-port 0 --metrics-listen-address 127.0.0.1:9253 --drain-duration 0s &
pid=$!
i=0
# All 12 raw rules: 2 addresses x udp, tcp x 3 (it adds them one by one).
until [ "$(iptables -t raw -S | grep -c NOTRACK)" -ge 12 ] || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done
echo "== addresses"; ip -o -4 addr show
echo "== rules"; iptables -t raw -S
kill -TERM $pid; rc=0; wait $pid || rc=$?; echo "== exit $rc"
echo "== rules left"; iptables -t raw -S | grep -c NOTRACK || true
`
	// --user 0:0: the DaemonSet's runAsUser (the image's user is 65532).
	out := runImage(t, "partition-dns", []string{"--net=none", "--user", "0:0", "--cap-add", "NET_ADMIN,NET_RAW", "--entrypoint", "/bin/sh"}, "-c", script)
	for _, want := range []string{
		"iptables v1.", "(legacy)", "(nf_tables)", "ip utility, iproute2",
		"inet 169.254.20.10/32", "inet 10.0.0.10/32",
		"-A PREROUTING -d 169.254.20.10/32 -p udp -m udp --dport 53",
		"-A OUTPUT -s 10.0.0.10/32 -p tcp -m tcp --sport 53",
		"== exit 0", "== rules left\n0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("node-cache in the image: no %q in:\n%s", want, out)
		}
	}
}
