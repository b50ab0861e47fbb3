package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// RunWith is a TestMain body for a suite of programs: it builds pkgs (see
// Build) once for the whole run, sets *dir to the directory holding them,
// runs m, removes the directory and returns m's exit code.
func RunWith(m *testing.M, dir *string, pkgs ...string) int {
	d, err := Build(pkgs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(d)
	*dir = d
	return m.Run()
}

// Build compiles the module's main packages pkgs, given relative to the
// module root ("./cmd/fake-tp"), into a new temporary directory, where each
// program is named after its package directory: static binaries
// (CGO_ENABLED=0, -trimpath), as in the images. The caller removes the
// directory. Call it once per test binary (from TestMain or a sync.Once):
// a build takes seconds.
func Build(pkgs ...string) (dir string, err error) {
	if len(pkgs) == 0 {
		return "", errors.New("testbin: no packages to build")
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir, err = os.MkdirTemp("", "tpkit-testbin-")
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	// Test binaries run in parallel (go test -p): one build at a time, so
	// that the second finds the first one's packages in the build cache
	// instead of compiling the same programs beside it.
	unlock, err := lockFile(filepath.Join(os.TempDir(), "tpkit-testbin-build.lock"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	defer unlock()
	// Static and -trimpath, as hack/images.sh builds the images' programs:
	// the packages compiled for one serve the other from the build cache,
	// so that test/images links the images' programs without compiling.
	build := exec.Command("go", append([]string{"build", "-trimpath", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("testbin: building %s in %s: %v\n%s", strings.Join(pkgs, " "), root, err, out)
	}
	return dir, nil
}

// ModuleRoot is the directory of the module's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("testbin: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("testbin: go env GOMOD: not inside the module")
	}
	return filepath.Dir(gomod), nil
}

// lockFile takes an exclusive flock on path, waiting for it, and returns
// the function that releases it.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testbin: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("testbin: locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
