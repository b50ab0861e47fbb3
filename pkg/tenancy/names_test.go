package tenancy

import (
	"strings"
	"testing"
)

func TestValidateTenantName(t *testing.T) {
	cases := []struct {
		name    string
		wantErr string // substring naming the broken rule; "" means valid
	}{
		{"system", ""},
		{"t1", ""},
		{"a", ""},
		{"0abc", ""},
		{"tenant-with-dashes", ""},
		{strings.Repeat("a", 63), ""},
		{strings.Repeat("a", 64), "at most 63"},
		{"", "must not be empty"},
		{"Upper", "DNS-1123 label"},
		{"-lead", "DNS-1123 label"},
		{"trail-", "DNS-1123 label"},
		{"under_score", "DNS-1123 label"},
		{"dot.ted", "DNS-1123 label"},
		{"new\nline", "DNS-1123 label"},
		{"all", "reserved"},
	}
	for _, tc := range cases {
		err := ValidateTenantName(tc.name)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("ValidateTenantName(%q) = %v, want nil", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ValidateTenantName(%q) = %v, want error containing %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestValidateLabelAllowsAll(t *testing.T) {
	// "all" is reserved only for tenants; a namespace may be called "all".
	if err := ValidateLabel("namespace", "all"); err != nil {
		t.Fatalf("ValidateLabel(namespace, all) = %v", err)
	}
	if err := ValidateLabel("namespace", "Bad"); err == nil || !strings.Contains(err.Error(), "namespace name") {
		t.Fatalf("ValidateLabel(namespace, Bad) = %v, want error naming the namespace", err)
	}
}
