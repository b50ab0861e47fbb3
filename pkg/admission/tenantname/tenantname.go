/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
