package admission

import "testing"

type tenantUser struct {
	User
	tenant string
}

func (u *tenantUser) GetTenant() string { return u.tenant }

func TestUserTenant(t *testing.T) {
	cases := []struct {
		name string
		u    UserInfo
		want string
	}{
		{"nil", nil, ""},
		{"no extra", &User{Name: "a"}, ""},
		{"extra", &User{Extra: map[string][]string{"tenant": {"t1"}}}, "t1"},
		{"extra system", &User{Extra: map[string][]string{"tenant": {"system"}}}, "system"},
		{"extra empty list", &User{Extra: map[string][]string{"tenant": {}}}, ""},
		{"extra ambiguous", &User{Extra: map[string][]string{"tenant": {"system", "t1"}}}, ""},
		{"other extra key", &User{Extra: map[string][]string{"scopes": {"system"}}}, ""},
		{"GetTenant wins over extra", &tenantUser{User: User{Extra: map[string][]string{"tenant": {"system"}}}, tenant: "t1"}, "t1"},
		{"GetTenant empty", &tenantUser{}, ""},
	}
	for _, tc := range cases {
		if got := UserTenant(tc.u); got != tc.want {
			t.Errorf("%s: UserTenant = %q, want %q", tc.name, got, tc.want)
		}
	}
}
