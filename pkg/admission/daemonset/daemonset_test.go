package daemonset

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tpkit-dev/tpkit/pkg/admission"
)

var (
	dsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
	dsKind     = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
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

func ds(tenant string, deleting bool) *appsv1.DaemonSet {
	d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds1", Namespace: "kube-system"}}
	if deleting {
		now := metav1.Now()
		d.DeletionTimestamp = &now
	}
	return d
}

func record(op admission.Operation, tenant string, u admission.UserInfo) *admission.Record {
	r := &admission.Record{Operation: op, Kind: dsKind, Resource: dsResource, Tenant: tenant, Namespace: "kube-system", Name: "ds1", User: u}
	switch op {
	case admission.Create:
		r.Object = ds(tenant, false)
	case admission.Update:
		r.Object, r.OldObject = ds(tenant, false), ds(tenant, false)
	case admission.Delete:
		r.OldObject = ds(tenant, false)
	}
	return r
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
		rec  *admission.Record
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
		{"update t1 being deleted", arktosOnly, func() *admission.Record {
			r := record(admission.Update, "t1", noUser)
			r.OldObject = ds("t1", true)
			return r
		}(), allow},
		{"update t1 new object being deleted, old not", arktosOnly, func() *admission.Record {
			r := record(admission.Update, "t1", noUser)
			r.Object = ds("t1", true)
			return r
		}(), denyTenant},
		{"update t1 typed nil old object", arktosOnly, func() *admission.Record {
			r := record(admission.Update, "t1", noUser)
			r.OldObject = (*appsv1.DaemonSet)(nil)
			return r
		}(), denyTenant},
		{"update t1 unstructured old object being deleted", arktosOnly, func() *admission.Record {
			r := record(admission.Update, "t1", noUser)
			u := &unstructured.Unstructured{}
			u.SetName("ds1")
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
			r.OldObject = u
			return r
		}(), allow},
		{"status subresource t1", arktosOnly, func() *admission.Record {
			r := record(admission.Update, "t1", noUser)
			r.Subresource = "status"
			return r
		}(), allow},
		{"extensions group t1", arktosOnly, func() *admission.Record {
			r := record(admission.Create, "t1", noUser)
			r.Resource.Group, r.Kind.Group = "extensions", "extensions"
			return r
		}(), denyTenant},
		{"kind only, no resource, t1", arktosOnly, func() *admission.Record {
			r := record(admission.Create, "t1", noUser)
			r.Resource = schema.GroupVersionResource{}
			return r
		}(), denyTenant},
		{"other resource t1", arktosOnly, func() *admission.Record {
			r := record(admission.Create, "t1", noUser)
			r.Resource, r.Kind = schema.GroupVersionResource{Version: "v1", Resource: "pods"}, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
			r.Object = &corev1.Pod{}
			return r
		}(), allow},
		{"daemonsets in another group t1", arktosOnly, func() *admission.Record {
			r := record(admission.Create, "t1", noUser)
			r.Resource.Group, r.Kind.Group = "example.com", "example.com"
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
		{"admin-only status subresource by non-admin", adminOnly, func() *admission.Record {
			r := record(admission.Update, "system", t1Extra)
			r.Subresource = "status"
			return r
		}(), allow},
		{"admin-only other resource by non-admin", adminOnly, func() *admission.Record {
			r := record(admission.Create, "system", t1Extra)
			r.Resource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
			r.Kind.Kind = "Deployment"
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
				if !apierrors.IsForbidden(err) {
					t.Fatalf("want Forbidden, got %v", err)
				}
			}
			msg := err.Error()
			if !strings.Contains(msg, `daemonsets.apps "ds1" is forbidden`) {
				t.Errorf("message %q does not name the DaemonSet", msg)
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

func TestForbiddenIsStatus(t *testing.T) {
	err := New(Config{}).Validate(context.Background(), record(admission.Create, "t1", nil))
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Fatalf("%T is not an APIStatus", err)
	}
	s := st.Status()
	if s.Code != 403 || s.Reason != metav1.StatusReasonForbidden || s.Details == nil || s.Details.Name != "ds1" || s.Details.Group != "apps" || s.Details.Kind != "daemonsets" {
		t.Fatalf("status = %+v", s)
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
					case !apierrors.IsForbidden(err):
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
