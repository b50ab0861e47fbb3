package daemonset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// PluginName is the name of the plugin in admission chains and logs.
const PluginName = "DaemonSetSystemTenant"

// Message is Arktos's reason for rejecting a DaemonSet outside the system
// tenant. Clients and tests match on it, so it never changes.
const Message = "only system tenant is allowed to have DaemonSet"

// DefaultAdminGroup is the group whose members are cluster admins when
// Config.AdminGroups is empty.
const DefaultAdminGroup = "system:masters"

// Resource is the DaemonSet resource, as named in Forbidden errors.
var Resource = schema.GroupResource{Group: "apps", Resource: "daemonsets"}

// Config configures a Plugin. The zero value enforces the tenant rule only,
// as Arktos does.
type Config struct {
	// AdminOnly also lets only cluster admins create, update or delete
	// DaemonSets.
	AdminOnly bool
	// AdminGroups are the groups whose members are cluster admins;
	// [DefaultAdminGroup] when empty. Users of the system tenant are cluster
	// admins whatever their groups.
	AdminGroups []string
}

// Plugin is the DaemonSet admission plugin. It implements
// admission.ValidationInterface. Build it with New.
type Plugin struct {
	adminOnly   bool
	adminGroups []string
}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New returns a Plugin for c. c is copied; later changes to it have no effect.
func New(c Config) *Plugin {
	groups := append([]string(nil), c.AdminGroups...)
	if len(groups) == 0 {
		groups = []string{DefaultAdminGroup}
	}
	return &Plugin{adminOnly: c.AdminOnly, adminGroups: groups}
}

// Handles reports true for CREATE, UPDATE and DELETE.
func (p *Plugin) Handles(op admission.Operation) bool {
	switch op {
	case admission.Create, admission.Update, admission.Delete:
		return true
	}
	return false
}

// Validate admits or rejects a; requests for anything but a DaemonSet itself
// are admitted. See the package documentation for the rules.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes) error {
	if !IsDaemonSet(a) || a.GetSubresource() != "" {
		return nil
	}
	op := a.GetOperation()
	if !p.Handles(op) {
		return nil
	}
	if op != admission.Delete && !tenancy.IsSystem(a.GetTenant()) && !beingDeleted(op, a.GetOldObject()) {
		return apierrors.NewForbidden(Resource, a.GetName(), errors.New(Message))
	}
	if p.adminOnly && !p.IsAdmin(a.GetUserInfo()) {
		return apierrors.NewForbidden(Resource, a.GetName(), p.notAdmin(op, a.GetUserInfo()))
	}
	return nil
}

// IsAdmin reports whether u is a cluster admin: a member of one of the admin
// groups, or a user of the system tenant (admission.UserTenant). A nil user
// is not an admin.
func (p *Plugin) IsAdmin(u admission.UserInfo) bool {
	if u == nil {
		return false
	}
	for _, g := range u.GetGroups() {
		for _, admin := range p.adminGroups {
			if g == admin {
				return true
			}
		}
	}
	return admission.UserTenant(u) == tenancy.SystemTenant
}

// notAdmin says who was refused and what would have been allowed.
func (p *Plugin) notAdmin(op admission.Operation, u admission.UserInfo) error {
	name, tenant := "", ""
	if u != nil {
		name, tenant = u.GetName(), admission.UserTenant(u)
	}
	if tenant == "" {
		tenant = "unknown"
	}
	return fmt.Errorf("user %q (tenant %s) may not %s DaemonSets: only cluster admins may (members of %s, or users of the %s tenant)",
		name, tenant, verb(op), strings.Join(p.adminGroups, ", "), tenancy.SystemTenant)
}

func verb(op admission.Operation) string {
	switch op {
	case admission.Create:
		return "create"
	case admission.Update:
		return "update"
	case admission.Delete:
		return "delete"
	}
	return strings.ToLower(string(op))
}

// IsDaemonSet reports whether a is about DaemonSets: the resource daemonsets
// in group apps (or the old extensions group), or, when the resource is not
// set, the kind DaemonSet in those groups.
func IsDaemonSet(a admission.Attributes) bool {
	r := a.GetResource()
	if r.Resource != "" {
		return r.Resource == "daemonsets" && isDaemonSetGroup(r.Group)
	}
	k := a.GetKind()
	return k.Kind == "DaemonSet" && isDaemonSetGroup(k.Group)
}

func isDaemonSetGroup(g string) bool { return g == "apps" || g == "extensions" }

// beingDeleted reports whether an UPDATE touches an object that already has a
// deletionTimestamp: finishing a deletion must never be blocked.
func beingDeleted(op admission.Operation, old runtime.Object) bool {
	if op != admission.Update || isNil(old) {
		return false
	}
	m, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	return m.GetDeletionTimestamp() != nil
}

// isNil catches typed nil pointers too: their accessors would panic.
func isNil(o runtime.Object) bool {
	if o == nil {
		return true
	}
	v := reflect.ValueOf(o)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
