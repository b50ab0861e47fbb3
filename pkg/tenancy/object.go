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

// TenantAnnotation carries an object's Arktos metadata.tenant on upstream
// k8s.io/api types, which have no field for it. The adapter's transport
// (pkg/tenancy/k8s) writes it when decoding responses and removes it again
// when encoding requests, so it never reaches a TP. It is tpkit's only
// annotation.
const TenantAnnotation = "tpkit.dev/tenant"

// Object is what TenantOf reads: an object's annotations. Every API object
// (metav1.Object, upstream or Arktos) is one.
type Object interface {
	GetAnnotations() map[string]string
}

// Tenanted is an object that knows its tenant: Arktos's ObjectMeta has
// GetTenant, and so do the objects Arktos's own clients decode.
type Tenanted interface {
	GetTenant() string
}

// TenantOf returns the tenant of obj: its own GetTenant when it has one (an
// Arktos object), else the value the adapter's transport lifted into
// TenantAnnotation, else SystemTenant (Arktos's rule for objects created
// through the short, tenant-less paths).
func TenantOf(obj Object) string {
	if t, ok := obj.(Tenanted); ok {
		if tenant := t.GetTenant(); tenant != "" {
			return tenant
		}
		return SystemTenant
	}
	if t := obj.GetAnnotations()[TenantAnnotation]; t != "" {
		return t
	}
	return SystemTenant
}

// Annotated is what SetTenant writes to: an object's annotations.
type Annotated interface {
	Object
	SetAnnotations(map[string]string)
}

// SetTenant records tenant on obj: with its own SetTenant when it has one
// (an Arktos object), else in TenantAnnotation, the way the adapter's
// transport does, so objects built in code look like objects decoded from a
// TP.
func SetTenant(obj Annotated, tenant string) {
	if t, ok := obj.(interface{ SetTenant(string) }); ok {
		t.SetTenant(tenant)
		return
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = make(map[string]string, 1)
	}
	a[TenantAnnotation] = tenant
	obj.SetAnnotations(a)
}

// IsSystem reports whether tenant is the system tenant. The empty tenant
// counts as system, as it does in Arktos.
func IsSystem(tenant string) bool {
	return tenant == "" || tenant == SystemTenant
}

// NormalTenant is tenant with "" (an object without one) written as
// SystemTenant, so that keys and maps file both forms under one name.
func NormalTenant(tenant string) string {
	if tenant == "" {
		return SystemTenant
	}
	return tenant
}
