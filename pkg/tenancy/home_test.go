package tenancy

import (
	"fmt"
	"testing"
)

func TestTenantHome(t *testing.T) {
	for _, tc := range []struct {
		held     []int
		static   int
		home     int
		conflict bool
	}{
		{nil, -1, -1, false},       // unknown tenant
		{[]int{2}, -1, 2, false},   // one TP holds it
		{[]int{2, 0}, -1, 0, true}, // two TPs: the first in flag order, a conflict
		{[]int{1, 2, 0}, -1, 0, true},
		{nil, 1, 1, false},        // static, nothing seen yet
		{[]int{1}, 1, 1, false},   // static and held there
		{[]int{0}, 1, 1, true},    // static wins over where it is seen
		{[]int{1, 0}, 1, 1, true}, // static wins, and it is in two TPs
	} {
		home, conflict := TenantHome(tc.held, tc.static)
		if home != tc.home || conflict != tc.conflict {
			t.Errorf("TenantHome(%v, %d) = %d, %v; want %d, %v", tc.held, tc.static, home, conflict, tc.home, tc.conflict)
		}
	}
	// The order of held does not matter.
	a, ca := TenantHome([]int{3, 1, 2}, -1)
	b, cb := TenantHome([]int{2, 3, 1}, -1)
	if fmt.Sprint(a, ca) != fmt.Sprint(b, cb) {
		t.Errorf("order changed the answer: %d %v vs %d %v", a, ca, b, cb)
	}
}
