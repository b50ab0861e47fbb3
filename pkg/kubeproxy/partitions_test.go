package kubeproxy

import (
	"slices"
	"testing"
)

type fixedTenants map[string]string

func (f fixedTenants) PartitionOfTenant(t string) (string, bool) { p, ok := f[t]; return p, ok }

// TestPartitions: TP names by position, and an oracle by name turned into
// one by id; a name outside the list is no answer.
func TestPartitions(t *testing.T) {
	names := Partitions{"tp1", "tp2"}
	if got := names.IDs(); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("IDs %v", got)
	}
	if id, ok := names.ID("tp2"); !ok || id != 1 {
		t.Errorf("ID(tp2) = %d %v", id, ok)
	}
	if _, ok := names.ID("tp3"); ok {
		t.Error("ID(tp3) found")
	}
	if names.Name(1) != "tp2" || names.Name(7) != "#7" || names.Name(-1) != "#-1" {
		t.Errorf("names %q %q %q", names.Name(1), names.Name(7), names.Name(-1))
	}
	ten := names.Tenants(fixedTenants{"a": "tp2", "b": "tp9"})
	if id, ok := ten.PartitionOfTenant("a"); !ok || id != 1 {
		t.Errorf("a: %d %v, want 1", id, ok)
	}
	for _, tenant := range []string{"b", "c"} {
		if id, ok := ten.PartitionOfTenant(tenant); ok {
			t.Errorf("%s: %d, want no answer", tenant, id)
		}
	}
}
