package tenantname

import (
	"context"
	"fmt"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// PluginName is the name of the plugin in admission chains and logs.
const PluginName = "TenantName"

// Arktos's tenant: cluster-scoped, in the core group ("").
const (
	// Resource is Arktos's tenant resource, named by Forbidden errors.
	Resource = "tenants"
	// Kind is Arktos's tenant kind, named by Invalid errors.
	Kind = "Tenant"
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

// Validate admits or rejects r; requests for anything but a tenant are
// admitted. See the package documentation for the rules.
func (*Plugin) Validate(_ context.Context, r admission.Request) error {
	if !IsTenant(r) || r.Subresource != "" {
		return nil
	}
	name := r.Name
	if name == "" {
		name = r.ObjectName
	}
	switch r.Operation {
	case admission.Create:
		if name == tenancy.SystemTenant {
			return admission.NewForbidden("", Resource, name, fmt.Sprintf("tenant %q exists in every tenant partition and cannot be created", name))
		}
		if err := tenancy.ValidateTenantName(name); err != nil {
			return admission.NewInvalid("", Kind, name, "metadata.name", name, err.Error())
		}
	case admission.Delete:
		if name == tenancy.SystemTenant {
			return admission.NewForbidden("", Resource, name, "the system tenant cannot be deleted")
		}
	}
	return nil
}

// IsTenant reports whether r is about tenants: the resource tenants in the
// core group, or, when the resource is not set, the kind Tenant.
func IsTenant(r admission.Request) bool {
	if r.Group != "" {
		return false
	}
	if r.Resource != "" {
		return r.Resource == Resource
	}
	return r.Kind == Kind
}
