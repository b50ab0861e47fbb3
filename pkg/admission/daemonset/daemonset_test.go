package daemonset

import (
	"context"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/admission"
)

// arktosUser has Arktos's user.Info GetTenant method.
type arktosUser struct {
	admission.User
	tenant string
}

func (u *arktosUser) GetTenant() string { return u.tenant }

var (
	noUser      admission.UserInfo
	master      = &admission.User{Name: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}
	opsGroup    = &admission.User{Name: "olga", Groups: []string{"ops"}}
	sysExtra    = &admission.User{Name: "sam", Extra: map[string][]string{"tenant": {"system"}}}
	sysArktos   = &arktosUser{User: admission.User{Name: "arkadmin"}, tenant: "system"}
	t1Extra     = &admission.User{Name: "alice", Groups: []string{"system:authenticated"}, Extra: map[string][]string{"tenant": {"t1"}}}
	t1Arktos    = &arktosUser{User: admission.User{Name: "bob"}, tenant: "t1"}
	noTenant    = &admission.User{Name: "carol"}
	twoTenants  = &admission.User{Name: "dave", Extra: map[string][]string{"tenant": {"system", "t1"}}}
	emptyArktos = &arktosUser{User: admission.User{Name: "erin"}}
)

func record(op admission.Operation, tenant string, u admission.UserInfo) admission.Request {
	return admission.Request{Operation: op, Group: "apps", Resource: "daemonsets", Kind: "DaemonSet",
		Tenant: tenant, Namespace: "kube-system", Name: "ds1", ObjectName: "ds1", User: u}
}

type want int

const (
	allow want = iota
	denyTenant
	denyUser
)

func TestValidate(t *testing.T) {
	arktosOnly := Config{}
	adminOnly := Config{AdminOnly: true}
	opsAdmins := Config{AdminOnly: true, AdminGroups: []string{"ops"}}

	cases := []struct {
		name string
		cfg  Config
		rec  admission.Request
		want want
	}{
		// Tenant rule, every operation and tenant, Arktos mode (any user).
		{"create system", arktosOnly, record(admission.Create, "system", t1Extra), allow},
		{"create empty tenant is system", arktosOnly, record(admission.Create, "", noTenant), allow},
		{"create t1", arktosOnly, record(admission.Create, "t1", master), denyTenant},
		{"update system", arktosOnly, record(admission.Update, "system", noUser), allow},
		{"update t1", arktosOnly, record(admission.Update, "t1", master), denyTenant},
		{"delete system", arktosOnly, record(admission.Delete, "system", t1Extra), allow},
		{"delete t1 is cleanup", arktosOnly, record(admission.Delete, "t1", t1Extra), allow},
		{"connect t1 not handled", arktosOnly, record(admission.Connect, "t1", noUser), allow},
		{"create tenant named like system but different", arktosOnly, record(admission.Create, "system2", master), denyTenant},

		// Tenant rule edge cases.
		{"update t1 being deleted", arktosOnly, func() admission.Request {
			r := record(admission.Update, "t1", noUser)
			r.BeingDeleted = true
			return r
		}(), allow},
		{"create t1 marked being deleted is still refused", arktosOnly, func() admission.Request {
			r := record(admission.Create, "t1", noUser)
			r.BeingDeleted = true
			return r
		}(), denyTenant},
		{"status subresource t1", arktosOnly, func() admission.Request {
			r := record(admission.Update, "t1", noUser)
			r.Subresource = "status"
			return r
		}(), allow},
		{"extensions group t1", arktosOnly, func() admission.Request {
			r := record(admission.Create, "t1", noUser)
			r.Group = "extensions"
			return r
		}(), denyTenant},
		{"kind only, no resource, t1", arktosOnly, func() admission.Request {
			r := record(admission.Create, "t1", noUser)
			r.Resource = ""
			return r
		}(), denyTenant},
		{"other resource t1", arktosOnly, func() admission.Request {
			r := record(admission.Create, "t1", noUser)
			r.Group, r.Resource, r.Kind = "", "pods", "Pod"
			return r
		}(), allow},
		{"daemonsets in another group t1", arktosOnly, func() admission.Request {
			r := record(admission.Create, "t1", noUser)
			r.Group = "example.com"
			return r
		}(), allow},

		// Admin rule: every operation and user kind.
		{"admin-only create system master", adminOnly, record(admission.Create, "system", master), allow},
		{"admin-only update system master", adminOnly, record(admission.Update, "system", master), allow},
		{"admin-only delete system master", adminOnly, record(admission.Delete, "system", master), allow},
		{"admin-only create system-tenant user (extra)", adminOnly, record(admission.Create, "system", sysExtra), allow},
		{"admin-only update system-tenant user (GetTenant)", adminOnly, record(admission.Update, "system", sysArktos), allow},
		{"admin-only delete system-tenant user (extra)", adminOnly, record(admission.Delete, "system", sysExtra), allow},
		{"admin-only create t1 user", adminOnly, record(admission.Create, "system", t1Extra), denyUser},
		{"admin-only update t1 user (GetTenant)", adminOnly, record(admission.Update, "system", t1Arktos), denyUser},
		{"admin-only delete t1 user", adminOnly, record(admission.Delete, "system", t1Extra), denyUser},
		{"admin-only delete t1 ds by t1 user", adminOnly, record(admission.Delete, "t1", t1Extra), denyUser},
		{"admin-only delete t1 ds by master", adminOnly, record(admission.Delete, "t1", master), allow},
		{"admin-only unknown tenant fails closed", adminOnly, record(admission.Create, "system", noTenant), denyUser},
		{"admin-only empty GetTenant fails closed", adminOnly, record(admission.Create, "system", emptyArktos), denyUser},
		{"admin-only ambiguous tenant extra fails closed", adminOnly, record(admission.Create, "system", twoTenants), denyUser},
		{"admin-only no user", adminOnly, record(admission.Create, "system", noUser), denyUser},
		{"admin-only tenant rule first", adminOnly, record(admission.Create, "t1", t1Extra), denyTenant},
		{"admin-only status subresource by non-admin", adminOnly, func() admission.Request {
			r := record(admission.Update, "system", t1Extra)
			r.Subresource = "status"
			return r
		}(), allow},
		{"admin-only other resource by non-admin", adminOnly, func() admission.Request {
			r := record(admission.Create, "system", t1Extra)
			r.Resource, r.Kind = "deployments", "Deployment"
			return r
		}(), allow},

		// Configured groups replace the default.
		{"ops groups: ops member", opsAdmins, record(admission.Create, "system", opsGroup), allow},
		{"ops groups: master no longer admin", opsAdmins, record(admission.Create, "system", master), denyUser},
		{"ops groups: system-tenant user still admin", opsAdmins, record(admission.Delete, "system", sysExtra), allow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.cfg)
			var err error
			if p.Handles(tc.rec.Operation) {
				err = p.Validate(context.Background(), tc.rec)
			}
			// The chain must agree with calling the plugin directly.
			if chainErr := (admission.Chain{p}).Validate(context.Background(), tc.rec); (chainErr == nil) != (err == nil) {
				t.Fatalf("chain says %v, plugin says %v", chainErr, err)
			}
			switch tc.want {
			case allow:
				if err != nil {
					t.Fatalf("want allowed, got %v", err)
				}
				return
			case denyTenant, denyUser:
				if e, ok := admission.AsError(err); !ok || e.Reason != admission.ReasonForbidden || e.Code() != 403 ||
					e.Group != tc.rec.Group || e.Resource != "daemonsets" || e.Name != "ds1" {
					t.Fatalf("want a Forbidden *admission.Error naming daemonsets.%s ds1, got %#v", tc.rec.Group, err)
				}
			}
			msg := err.Error()
			if prefix := "daemonsets." + tc.rec.Group + ` "ds1" is forbidden: `; !strings.HasPrefix(msg, prefix) {
				t.Errorf("message %q does not start %q", msg, prefix)
			}
			if got := strings.Contains(msg, Message); got != (tc.want == denyTenant) {
				t.Errorf("message %q: contains Arktos message = %v, want %v", msg, got, tc.want == denyTenant)
			}
			if tc.want == denyUser {
				name := "<nil>"
				if tc.rec.User != nil {
					name = tc.rec.User.GetName()
				}
				if tc.rec.User != nil && !strings.Contains(msg, `user "`+name+`"`) {
					t.Errorf("message %q does not name user %q", msg, name)
				}
				if !strings.Contains(msg, "may not "+verb(tc.rec.Operation)) {
					t.Errorf("message %q does not say the operation", msg)
				}
			}
		})
	}
}

func TestHandles(t *testing.T) {
	p := New(Config{})
	for op, want := range map[admission.Operation]bool{
		admission.Create: true, admission.Update: true, admission.Delete: true, admission.Connect: false, "PATCH": false,
	} {
		if got := p.Handles(op); got != want {
			t.Errorf("Handles(%s) = %v, want %v", op, got, want)
		}
	}
}

// TestArktosMessage: the refusal's text is, to the byte, what Arktos
// answered in the recording (responses/72-daemonset-create-acme.json).
func TestArktosMessage(t *testing.T) {
	r := record(admission.Create, "acme", nil)
	r.Name, r.ObjectName = "ds", "ds"
	err := New(Config{}).Validate(context.Background(), r)
	const want = `daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// TestErrorName: the error names the object as Arktos's
// admission.NewForbidden does when the request has no name.
func TestErrorName(t *testing.T) {
	for _, tc := range []struct{ name, objectName, want string }{
		{"ds1", "other", `daemonsets.apps "ds1" is forbidden`},
		{"", "from-object", `daemonsets.apps "from-object" is forbidden`},
		{"", "", `daemonsets.apps "Unknown" is forbidden`},
	} {
		r := record(admission.Create, "t1", nil)
		r.Name, r.ObjectName = tc.name, tc.objectName
		err := New(Config{}).Validate(context.Background(), r)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("name %q, object %q: got %v, want %s...", tc.name, tc.objectName, err, tc.want)
		}
	}
}

func TestConfigIsCopied(t *testing.T) {
	groups := []string{"ops"}
	p := New(Config{AdminOnly: true, AdminGroups: groups})
	groups[0] = "system:masters"
	if p.IsAdmin(master) {
		t.Fatal("changing the caller's slice changed the plugin")
	}
	if !p.IsAdmin(opsGroup) {
		t.Fatal("ops member is not an admin")
	}
}

func BenchmarkValidate(b *testing.B) {
	ctx := context.Background()
	p := New(Config{AdminOnly: true})
	allowed := record(admission.Update, "system", master)
	denied := record(admission.Create, "t1", t1Extra)
	b.ReportAllocs()
	for b.Loop() {
		if p.Validate(ctx, allowed) != nil {
			b.Fatal("denied")
		}
		if p.Validate(ctx, denied) == nil {
			b.Fatal("allowed")
		}
	}
}

// TestEveryCombination crosses every operation, tenant, user and mode, with
// the expected outcome stated per axis rather than computed by the plugin.
func TestEveryCombination(t *testing.T) {
	ops := []admission.Operation{admission.Create, admission.Update, admission.Delete, admission.Connect}
	tenants := []struct {
		name     string
		isSystem bool
	}{{"", true}, {"system", true}, {"t1", false}, {"all", false}}
	users := []struct {
		name    string
		u       admission.UserInfo
		isAdmin bool
	}{
		{"none", noUser, false},
		{"system:masters", master, true},
		{"system tenant via extra", sysExtra, true},
		{"system tenant via GetTenant", sysArktos, true},
		{"t1 via extra", t1Extra, false},
		{"t1 via GetTenant", t1Arktos, false},
		{"no tenant", noTenant, false},
		{"ambiguous tenant", twoTenants, false},
		{"ops group", opsGroup, false},
	}
	for _, adminOnly := range []bool{false, true} {
		p := New(Config{AdminOnly: adminOnly})
		for _, op := range ops {
			for _, tn := range tenants {
				for _, u := range users {
					expected := allow
					switch {
					case op == admission.Connect:
					case (op == admission.Create || op == admission.Update) && !tn.isSystem:
						expected = denyTenant
					case adminOnly && !u.isAdmin:
						expected = denyUser
					}
					err := admission.Chain{p}.Validate(context.Background(), record(op, tn.name, u.u))
					var got want
					switch {
					case err == nil:
						got = allow
					case !isForbidden(err):
						t.Errorf("adminOnly=%v %s tenant=%q user=%s: not Forbidden: %v", adminOnly, op, tn.name, u.name, err)
						continue
					case strings.Contains(err.Error(), Message):
						got = denyTenant
					default:
						got = denyUser
					}
					if got != expected {
						t.Errorf("adminOnly=%v %s tenant=%q user=%s: got %v (%v), want %v", adminOnly, op, tn.name, u.name, got, err, expected)
					}
				}
			}
		}
	}
}

func isForbidden(err error) bool {
	e, ok := admission.AsError(err)
	return ok && e.Reason == admission.ReasonForbidden
}
