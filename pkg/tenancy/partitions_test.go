package tenancy

import (
	"reflect"
	"strings"
	"testing"
)

func TestPartitionNames(t *testing.T) {
	arktos := []PartitionSource{ // hack/arktos-worker-up.sh's files
		{Path: "/var/run/kubernetes/tenant-server-kubelet0.kubeconfig", Context: "local-up-cluster"},
		{Path: "/var/run/kubernetes/tenant-server-kubelet1.kubeconfig", Context: "local-up-cluster"},
	}
	for _, tc := range []struct {
		name     string
		files    []PartitionSource
		explicit []string
		want     []string
		err      string
	}{
		{name: "distinct contexts", files: []PartitionSource{{"/a/x.kubeconfig", "tp1"}, {"/a/y.kubeconfig", "tp2"}}, want: []string{"tp1", "tp2"}},
		{name: "arktos scripts: one context for all", files: arktos, want: []string{"tenant-server-kubelet0", "tenant-server-kubelet1"}},
		{name: "one file without context names all by file", files: []PartitionSource{{"/a/x.yaml", "tp1"}, {"/b/y.yaml", ""}}, want: []string{"x", "y"}},
		{name: "single TP keeps its context", files: []PartitionSource{{"/a/kc", "local-up-cluster"}}, want: []string{"local-up-cluster"}},
		{name: "explicit wins", files: arktos, explicit: []string{"west", "east"}, want: []string{"west", "east"}},
		{name: "explicit count", files: arktos, explicit: []string{"west"}, err: "has 1 names but --tenant-server-kubeconfig has 2 files"},
		{name: "explicit duplicate", files: arktos, explicit: []string{"a", "a"}, err: `both named "a" by --tenant-partition-names`},
		{name: "explicit invalid", files: arktos, explicit: []string{"a/b", "c"}, err: "tenant partition 0, named by --tenant-partition-names"},
		{name: "same file names", files: []PartitionSource{{"/a/kc.yaml", "x"}, {"/b/kc.yaml", "x"}}, err: `both named "kc" by the kubeconfig files' names`},
		{name: "context with a slash falls to validation", files: []PartitionSource{{"/a/x", "admin/tp1"}}, err: "named by the kubeconfigs' current contexts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PartitionNames(tc.files, tc.explicit)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("PartitionNames = %v, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PartitionNames = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
