package tenantname

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// PluginName is the name of the plugin in admission chains and logs.
const PluginName = "TenantName"

var (
	// Resource is Arktos's tenant resource: cluster-scoped, core group.
	Resource = schema.GroupResource{Resource: "tenants"}
	// Kind is Arktos's tenant kind.
	Kind = schema.GroupKind{Kind: "Tenant"}
)

// Plugin is the tenant-name admission plugin. It implements
// admission.ValidationInterface.
type Plugin struct{}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New returns a Plugin.
func New() *Plugin { return &Plugin{} }

// Handles reports true for CREATE and DELETE: a tenant's name cannot change.
func (*Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Delete
}

// Validate admits or rejects a; requests for anything but a tenant are
// admitted. See the package documentation for the rules.
func (*Plugin) Validate(_ context.Context, a admission.Attributes) error {
	if !IsTenant(a) || a.GetSubresource() != "" {
		return nil
	}
	switch a.GetOperation() {
	case admission.Create:
		name := a.GetName()
		if name == "" {
			name = nameOf(a.GetObject())
		}
		if name == tenancy.SystemTenant {
			return apierrors.NewForbidden(Resource, name, fmt.Errorf("tenant %q exists in every tenant partition and cannot be created", name))
		}
		if err := tenancy.ValidateTenantName(name); err != nil {
			return apierrors.NewInvalid(Kind, name, field.ErrorList{
				field.Invalid(field.NewPath("metadata", "name"), name, err.Error()),
			})
		}
	case admission.Delete:
		name := a.GetName()
		if name == "" {
			name = nameOf(a.GetOldObject())
		}
		if name == tenancy.SystemTenant {
			return apierrors.NewForbidden(Resource, name, errors.New("the system tenant cannot be deleted"))
		}
	}
	return nil
}

// IsTenant reports whether a is about tenants: the resource tenants in the
// core group, or, when the resource is not set, the kind Tenant.
func IsTenant(a admission.Attributes) bool {
	if r := a.GetResource(); r.Resource != "" {
		return r.Group == "" && r.Resource == "tenants"
	}
	k := a.GetKind()
	return k.Group == "" && k.Kind == "Tenant"
}

// nameOf returns obj's metadata.name, or "" when obj has none.
func nameOf(obj runtime.Object) string {
	if obj == nil {
		return ""
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}
