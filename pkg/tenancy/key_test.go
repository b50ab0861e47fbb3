package tenancy

import (
	"strings"
	"testing"
)

// TestKeyString: Arktos's form, with the tenant before the first '_' (a
// tenant is a DNS label, so the TP name may hold '_').
func TestKeyString(t *testing.T) {
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
		if err := tc.key.Validate(); err != nil {
			t.Errorf("%+v.Validate() = %v", tc.key, err)
		}
	}
}

// TestKeyValidate: the parts that cannot appear in a key string are
// refused, each with its reason.
func TestKeyValidate(t *testing.T) {
	key := func(tenant, tp, ns, name string) Key {
		return Key{Tenant: tenant, Partition: tp, Namespace: ns, Name: name}
	}
	cases := []struct {
		key     Key
		wantErr string
	}{
		{key("", "tp1", "ns", "name"), "tenant name must not be empty"},
		{key("system", "", "ns", "name"), "partition name must not be empty"},
		{key("system", "tp\x011", "ns", "name"), "must be printable"},
		{key("system", "tp\xff", "ns", "name"), "not valid UTF-8"},
		{key("system", "tp/1", "ns", "name"), "must not contain '/'"},
		{key("Sys", "tp1", "ns", "name"), "DNS-1123"},
		{key("all", "tp1", "ns", "name"), "reserved"},
		{key("system", "tp1", "a/b", "name"), "namespace must not contain '/'"},
		{key("system", "tp1", "ns", ""), "name must be non-empty"},
		{key("system", "tp1", "ns", "a/b"), "name must be non-empty"},
	}
	for _, tc := range cases {
		err := tc.key.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%+v.Validate() = %v, want error containing %q", tc.key, err, tc.wantErr)
		}
	}
}

func BenchmarkKeyString(b *testing.B) {
	k := Key{Partition: "tp1", Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.String()
	}
}
