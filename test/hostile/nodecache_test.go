//go:build linux

package hostile

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeCacheRefusesBadAddresses: node-cache would add --local-ip to a
// dummy interface of the node; broadcast, multicast and unspecified
// addresses are refused with exit status 2 before anything is changed.
func TestNodeCacheRefusesBadAddresses(t *testing.T) {
	for _, ip := range []string{"255.255.255.255", "224.0.0.1", "ff02::1", "0.0.0.0", "::"} {
		out, err := exec.Command(filepath.Join(binDir, "partition-dns"), "node-cache", "--local-ip", ip).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("--local-ip %s: %v, want exit status 2\n%s", ip, err, out)
			continue
		}
		if !strings.Contains(string(out), "--local-ip") || !strings.Contains(string(out), ip) {
			t.Errorf("--local-ip %s: the error does not name the flag and the address:\n%s", ip, out)
		}
	}
}
