package tenancy

import (
	"strings"
	"testing"
)

func TestKeyRoundTrip(t *testing.T) {
	cases := []struct {
		key  Key
		want string
	}{
		{Key{Partition: "tp1", Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}, "system_tp1/kube-system/kube-dns"},
		{Key{Partition: "tp2", Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}, "system_tp2/kube-system/kube-dns"},
		{Key{Partition: "admin@tp_3", Tenant: "t1", Namespace: "default", Name: "web.v1"}, "t1_admin@tp_3/default/web.v1"},
		{Key{Partition: "tp1", Tenant: "t1", Name: "ns1"}, "t1_tp1/ns1"},
	}
	for _, tc := range cases {
		if got := tc.key.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.key, got, tc.want)
		}
		back, err := ParseKey(tc.want)
		if err != nil {
			t.Errorf("ParseKey(%q): %v", tc.want, err)
			continue
		}
		if back != tc.key {
			t.Errorf("ParseKey(%q) = %+v, want %+v", tc.want, back, tc.key)
		}
	}
}

func TestParseKeyRejectsMalformed(t *testing.T) {
	cases := []struct {
		in, wantErr string
	}{
		{"", "want <tenant>_<tp>"},
		{"system_tp1", "want <tenant>_<tp>"},
		{"system_tp1/a/b/c", "want <tenant>_<tp>"},
		{"systemtp1/ns/name", "lacks '_'"},
		{"_tp1/ns/name", "tenant name must not be empty"},
		{"system_/ns/name", "partition name must not be empty"},
		{"system_tp\x011/ns/name", "must be printable"},
		{"system_tp\xff/ns/name", "not valid UTF-8"},
		{"Sys_tp1/ns/name", "DNS-1123"},
		{"all_tp1/ns/name", "reserved"},
		{"system_tp1//name", "empty namespace"},
		{"system_tp1/ns/", "name must be non-empty"},
	}
	for _, tc := range cases {
		_, err := ParseKey(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseKey(%q) = %v, want error containing %q", tc.in, err, tc.wantErr)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"system_tp1/kube-system/kube-dns", "t1_tp/ns", "a_b/c/d/e", "_/", "x_y//z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		if got := k.String(); got != s {
			t.Fatalf("ParseKey(%q).String() = %q; keys must round-trip", s, got)
		}
	})
}

func BenchmarkKeyString(b *testing.B) {
	k := Key{Partition: "tp1", Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.String()
	}
}
