package faketp_test

import (
	"fmt"
	"testing"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

func TestGeneratePlan(t *testing.T) {
	for _, tc := range []struct {
		tps     []string
		n, reg  int
		want    map[string]string // TP -> "tenant:pods ..." in plan order
		comment string
	}{
		{[]string{"tp1", "tp2"}, 1000, 0, map[string]string{"tp1": "system:1000", "tp2": "system:1000"}, "no regular tenants: as --generate alone"},
		{[]string{"tp1", "tp2"}, 1000, 3, map[string]string{"tp1": "system:334 gen-tenant-0:333 gen-tenant-2:333", "tp2": "system:500 gen-tenant-1:500"}, "round-robin homes, remainder to system"},
		{[]string{"a", "b", "c"}, 90, 1, map[string]string{"a": "system:45 gen-tenant-0:45", "b": "system:90", "c": "system:90"}, "fewer tenants than TPs"},
	} {
		plan := faketp.GeneratePlan(tc.tps, tc.n, tc.reg)
		for _, tp := range tc.tps {
			got, total := "", 0
			for i, o := range plan[tp] {
				tenant := o.Tenant
				if tenant == "" {
					tenant = "system"
				}
				if i > 0 {
					got += " "
				}
				got += fmt.Sprintf("%s:%d", tenant, o.Pods)
				total += o.Pods
				if o.Services != o.Pods/10 {
					t.Errorf("%s: %s %s has %d services for %d pods, want a tenth", tc.comment, tp, tenant, o.Services, o.Pods)
				}
			}
			if got != tc.want[tp] || total != tc.n {
				t.Errorf("%s: %s = %q (%d pods), want %q (%d)", tc.comment, tp, got, total, tc.want[tp], tc.n)
			}
		}
	}
}
