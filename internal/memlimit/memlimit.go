package memlimit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Share is the most of a cgroup's limit that Resolve gives the Go runtime
// under "auto", and Reserve the least it leaves for what the runtime does
// not count: chiefly the program's own code and read-only data pages
// (about 17 MiB for partition-dns), which the kernel charges to the
// container too.
const (
	Share   = 0.85
	Reserve = 32 << 20
)

// Reader reads the files the cgroup limit is found in (os.ReadFile; tests
// pass their own).
type Reader func(path string) ([]byte, error)

// CgroupLimit returns the memory limit of the process's cgroup in bytes,
// and false when it has none or none can be read. root is where cgroup
// file systems are mounted ("/sys/fs/cgroup").
func CgroupLimit(read Reader, root string) (int64, bool) {
	self, err := read("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for _, cand := range candidates(self, root) {
		raw, err := read(cand)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(raw))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 { // v1 says "no limit" with a huge number
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// candidates lists the limit files of the cgroups /proc/self/cgroup names,
// most specific first: a v2 cgroup's memory.max (in a pure or a hybrid
// mount), a v1 memory cgroup's memory.limit_in_bytes, and each at the
// mount's root too, for a container whose cgroup namespace makes its own
// cgroup the root.
func candidates(self []byte, root string) []string {
	var v2, v1 []string
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		path := filepath.Clean("/" + parts[2])
		switch {
		case parts[0] == "0" && parts[1] == "":
			for _, mount := range []string{root, filepath.Join(root, "unified")} {
				v2 = append(v2, filepath.Join(mount, path, "memory.max"), filepath.Join(mount, "memory.max"))
			}
		case hasController(parts[1], "memory"):
			mount := filepath.Join(root, "memory")
			v1 = append(v1, filepath.Join(mount, path, "memory.limit_in_bytes"), filepath.Join(mount, "memory.limit_in_bytes"))
		}
	}
	return append(v1, v2...) // v1's memory controller, when there is one, is the one that limits
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// Resolve turns a --memory-limit value into the runtime's limit in bytes,
// or 0 for none: "auto" is Share of the cgroup's limit but at least Reserve
// below it (none without a limit, or with one too small to leave Reserve),
// "none" or "0" is none, and anything else a quantity such as "150Mi".
func Resolve(flag string, cgroup func() (int64, bool)) (int64, error) {
	switch flag {
	case "auto":
		if n, ok := cgroup(); ok && n > 2*Reserve {
			return min(int64(float64(n)*Share), n-Reserve), nil
		}
		return 0, nil
	case "none", "0":
		return 0, nil
	}
	q, err := resource.ParseQuantity(flag)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit %q: want auto, none or a quantity such as 150Mi: %w", flag, err)
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 {
		return 0, fmt.Errorf("--memory-limit %q: not a size in bytes", flag)
	}
	return n, nil
}

// System reads the real cgroup files.
func System() (int64, bool) { return CgroupLimit(os.ReadFile, "/sys/fs/cgroup") }
