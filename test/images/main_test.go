//go:build linux

package images

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// programs are the images make images builds, each named after its program.
var programs = []string{"partition-dns", "tp-admission-webhook", "fake-tp"}

var (
	// skip says why the tests skip, when they do.
	skip string
	// root is the module root.
	root string
	// version is the version stamped into the programs (hack/version.sh),
	// tag the images' tag (hack/version.sh --tag).
	version, tag string
	// archives holds PROGRAM.oci.tar for each of programs.
	archives string
	// pm is podman with the storage root the images are loaded into.
	pm *podman
)

// TestMain builds the images with hack/images.sh and loads them into a
// podman storage of its own, once for every test; it removes both at the end.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := exec.LookPath("podman"); err != nil {
		skip = "podman is not installed: the image tests run the images with it (hack/ensure-tools.sh podman, which .ci/run calls, installs it)"
		return m.Run()
	}
	if os.Geteuid() != 0 {
		skip = "not root: the image tests run buildah and podman as root, in storage of their own"
		return m.Run()
	}
	var err error
	if root, err = testbin.ModuleRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	work, err := os.MkdirTemp("", "tpkit-images-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)

	// The version once, so that a tree changing meanwhile changes nothing.
	if version, err = hack("", "version.sh"); err == nil {
		tag, err = hack(version, "version.sh", "--tag")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	archives = filepath.Join(work, "archives")
	start := time.Now()
	out, err := hackOutput(version, "images.sh", archives)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hack/images.sh %s: %v\n%s", archives, err, out)
		return 1
	}
	if testing.Verbose() {
		fmt.Printf("hack/images.sh (%v):\n%s", time.Since(start).Round(time.Second/10), out)
	}

	pm, err = newPodman(filepath.Join(work, "podman"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pm.removeAll()
	for _, p := range programs {
		if out, err := pm.output("load", "--quiet", "--input", archive(p)); err != nil {
			fmt.Fprintf(os.Stderr, "podman load %s: %v\n%s", archive(p), err, out)
			return 1
		}
	}
	return m.Run()
}

// hack runs hack/SCRIPT ARGS, with VERSION=version when version is set, and
// returns its output, trimmed.
func hack(version, script string, args ...string) (string, error) {
	out, err := hackOutput(version, script, args...)
	if err != nil {
		return "", fmt.Errorf("hack/%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out), nil
}

func hackOutput(version, script string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(root, "hack", script), args...)
	cmd.Env = os.Environ()
	if version != "" {
		cmd.Env = append(cmd.Env, "VERSION="+version)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// archive is the OCI archive of program's image.
func archive(program string) string { return filepath.Join(archives, program+".oci.tar") }

// image is the name program's image is loaded as.
func image(program string) string { return "tpkit/" + program + ":" + tag }

// needImages skips t when the images could not be built here.
func needImages(t *testing.T) {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
}

// podman runs podman on a storage root, run root and temporary directory of
// its own (vfs, nothing mounted), with runc, without systemd or an event log,
// so that it never touches the machine's container storage.
type podman struct {
	global []string
}

func newPodman(dir string) (*podman, error) {
	conf := filepath.Join(dir, "storage.conf")
	for _, d := range []string{"storage", "run", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	// A configuration file of its own too, so that no option of the
	// machine's storage.conf (another store, say) applies; every podman
	// the tests run inherits it.
	storage := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "storage"), filepath.Join(dir, "run"))
	if err := os.WriteFile(conf, []byte(storage), 0o600); err != nil {
		return nil, err
	}
	if err := os.Setenv("CONTAINERS_STORAGE_CONF", conf); err != nil {
		return nil, err
	}
	return &podman{
		global: []string{
			"--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run"), "--storage-driver", "vfs",
			"--tmpdir", filepath.Join(dir, "tmp"), "--cgroup-manager", "cgroupfs", "--events-backend", "none",
			// crun refuses this machine's hybrid cgroup hierarchy.
			"--runtime", "runc",
		},
	}, nil
}

// command is podman ARGS.
func (p *podman) command(args ...string) *exec.Cmd {
	return exec.Command("podman", append(append([]string(nil), p.global...), args...)...)
}

// output runs podman ARGS and returns its stdout and stderr.
func (p *podman) output(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := p.command(args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// removeAll removes every container and image: the storage goes with the
// temporary directory.
func (p *podman) removeAll() {
	_, _ = p.output("rm", "--all", "--force", "--time", "0")
	_, _ = p.output("rmi", "--all", "--force")
}

// runArgs are the options of every podman run: no pulling, runc and limits
// within what root may set without CAP_SYS_RESOURCE.
var runArgs = []string{"--rm", "--pull=never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}

// runImage runs program's image to the end with podman run OPTS IMAGE ARGS
// on the host network (unless OPTS name another) and returns its output; it
// fails t when the container fails.
func runImage(t *testing.T, program string, opts []string, args ...string) string {
	t.Helper()
	all := append([]string{"run"}, runArgs...)
	if !slices.ContainsFunc(opts, func(o string) bool { return strings.HasPrefix(o, "--net") }) {
		all = append(all, "--net=host")
	}
	all = append(append(append(all, opts...), image(program)), args...)
	out, err := pm.output(all...)
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(all, " "), err, out)
	}
	return out
}

// startImage runs program's image in the background like runImage, as the
// container NAME (named after t), until t ends; the returned Proc is the
// podman run process, whose output is the container's.
func startImage(t *testing.T, program string, opts []string, args ...string) *testbin.Proc {
	t.Helper()
	name := fmt.Sprintf("tpkit-test-%s-%d", program, time.Now().UnixNano())
	all := append(append(append(append([]string(nil), pm.global...), "run"), runArgs...), "--net=host", "--name", name)
	all = append(append(append(all, opts...), image(program)), args...)
	path, err := exec.LookPath("podman")
	if err != nil {
		t.Fatal(err)
	}
	p := testbin.Start(t, t, program+" (image)", path, all...)
	// Registered after Start's, so it runs first: the container stops
	// (podman run then exits) before Start's cleanup looks at podman.
	t.Cleanup(func() {
		if out, err := pm.output("rm", "--force", "--time", "2", "--ignore", name); err != nil {
			t.Errorf("podman rm %s: %v\n%s", name, err, out)
		}
		for end := time.Now().Add(testbin.Deadline); !p.Exited() && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
	})
	return p
}

// eventually is testbin.Eventually that gives up at once when p exits
// first.
func eventually(t *testing.T, p *testbin.Proc, what string, cond func() bool) {
	t.Helper()
	testbin.Eventually(t, what, func() bool {
		if p.Exited() {
			t.Fatalf("%s exited (%v) before %s", p.Label, p.Err(), what)
		}
		return cond()
	})
}

// sharedDir is a new directory that the containers' users (65532 and root)
// may write, mounted into them at the same path.
func sharedDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	return d
}
