/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package tenancy

import (
	"fmt"
	"path/filepath"
	"strings"
)

// PartitionSource is what a program knows of one --tenant-server-kubeconfig
// file when it names the TPs: the file's path and its current context ("" when
// the file sets none).
type PartitionSource struct {
	Path    string
	Context string
}

// PartitionNames names a node's TPs, one per --tenant-server-kubeconfig file,
// in flag order. It is the one rule of every tpkit program and patched Arktos
// binary, because the names are what the kubelet's origin file and
// kube-proxy's saved views store, so they must not change across restarts:
//
//   - explicit names (--tenant-partition-names), when given, one per file;
//   - else each file's current context, when every file has one and no two
//     are equal;
//   - else each file's base name without its extension. Arktos's own scripts
//     (hack/arktos-worker-up.sh) write every TP's kubeconfig with the same
//     context, "local-up-cluster", into tenant-server-kubelet<N>.kubeconfig,
//     so such a node's TPs are named tenant-server-kubelet0, ...1, and so on.
//
// The names must be valid (ValidatePartitionName) and unique; the error says
// which file and how to fix it.
func PartitionNames(files []PartitionSource, explicit []string) ([]string, error) {
	if len(explicit) != 0 {
		if len(explicit) != len(files) {
			return nil, fmt.Errorf("--tenant-partition-names has %d names but --tenant-server-kubeconfig has %d files", len(explicit), len(files))
		}
		return validNames(explicit, "--tenant-partition-names")
	}
	contexts := make([]string, len(files))
	distinct := true
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		contexts[i] = f.Context
		if f.Context == "" || seen[f.Context] {
			distinct = false
		}
		seen[f.Context] = true
	}
	if distinct {
		return validNames(contexts, "the kubeconfigs' current contexts")
	}
	names := make([]string, len(files))
	for i, f := range files {
		base := filepath.Base(f.Path)
		names[i] = strings.TrimSuffix(base, filepath.Ext(base))
	}
	return validNames(names, "the kubeconfig files' names (their current contexts are missing or repeated)")
}

// validNames checks that every name is a valid TP name and none is given twice;
// from says where the names came from.
func validNames(names []string, from string) ([]string, error) {
	at := make(map[string]int, len(names))
	for i, n := range names {
		if err := ValidatePartitionName(n); err != nil {
			return nil, fmt.Errorf("tenant partition %d, named by %s: %v", i, from, err)
		}
		if j, dup := at[n]; dup {
			return nil, fmt.Errorf("tenant partitions %d and %d are both named %q by %s; set --tenant-partition-names", j, i, n, from)
		}
		at[n] = i
	}
	return names, nil
}
