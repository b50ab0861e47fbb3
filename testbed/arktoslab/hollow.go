package arktoslab

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// HollowTemp is where hollow-node makes a new root folder,
// hollow-kubelet.*, at every start: Arktos's test/utils.MakeTempDirOrDie
// puts it in /tmp, whatever TMPDIR says.
const HollowTemp = "/tmp"

// HollowRoots lists the hollow-kubelet.* folders in HollowTemp: taken
// before a lab starts hollow-node, it is what RemoveHollowRoots keeps.
func HollowRoots() map[string]bool {
	m := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(HollowTemp, "hollow-kubelet.*"))
	for _, d := range dirs {
		m[d] = true
	}
	return m
}

// RemoveHollowRoots removes the hollow-kubelet.* folders that are not in
// before, unmounting what is mounted below them first (a hollow kubelet's
// secret and emptyDir volumes).
func RemoveHollowRoots(before map[string]bool) error {
	var errs []string
	for dir := range HollowRoots() {
		if before[dir] {
			continue
		}
		for _, m := range MountsUnder(dir) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing hollow-node's roots: %s", strings.Join(errs, "; "))
	}
	return nil
}

// MountsUnder lists the mount points at or below dir, deepest first.
func MountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
