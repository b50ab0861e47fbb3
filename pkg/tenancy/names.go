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

package tenancy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// SystemTenant is the tenant that exists in every tenant partition and owns
	// cluster infrastructure (kube-system, DaemonSet pods, cluster DNS).
	SystemTenant = "system"

	// ForbiddenTenantName is reserved by Arktos: "all" would clash with the
	// "--all-tenants" style of listing, so no tenant may carry it.
	ForbiddenTenantName = "all"

	// MaxTenantNameLength is the DNS-1123 label limit. Tenant names become DNS
	// labels in <svc>.<ns>.<tenant>.svc.<zone>.
	MaxTenantNameLength = 63
)

// ValidateTenantName reports why name cannot be a tenant name, or nil.
// A tenant name is a DNS-1123 label of at most 63 characters and is not "all".
func ValidateTenantName(name string) error {
	return validateLabel("tenant", name, true)
}

// ValidateLabel reports why s is not a DNS-1123 label; what names the thing
// being checked ("namespace", "tenant") so the error says which input was bad.
func ValidateLabel(what, s string) error {
	return validateLabel(what, s, false)
}

func validateLabel(what, s string, tenant bool) error {
	switch {
	case s == "":
		return fmt.Errorf("%s name must not be empty", what)
	case len(s) > MaxTenantNameLength:
		return fmt.Errorf("%s name %q is %d characters long; a DNS-1123 label is at most %d", what, truncate(s), len(s), MaxTenantNameLength)
	case len(validation.IsDNS1123Label(s)) != 0:
		return fmt.Errorf("%s name %q is not a DNS-1123 label: use only lowercase letters, digits and '-', and start and end with a letter or digit", what, truncate(s))
	case tenant && s == ForbiddenTenantName:
		return fmt.Errorf("tenant name %q is reserved and cannot be used", s)
	}
	return nil
}

// truncate keeps error messages readable when the input is huge.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
