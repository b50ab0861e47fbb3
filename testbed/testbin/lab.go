package testbin

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LabPIDs reads the pids file of hack/arktos-lab.sh (one pid per line, in
// start order: each TP's etcd, then its API server); nil when the file
// cannot be read, as when the lab's folder is gone.
func LabPIDs(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Cmdline is a running process's argv, from /proc: what a harness needs to
// start a lab's process again the way it was started.
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, fmt.Errorf("testbin: the command line of pid %d: %w", pid, err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}
