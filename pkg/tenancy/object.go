package tenancy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantAnnotation carries an object's Arktos metadata.tenant on upstream
// k8s.io/api types, which have no field for it. Transport writes it when
// decoding responses and removes it again when encoding requests, so it never
// reaches a TP. It is tpkit's only annotation.
const TenantAnnotation = "tpkit.dev/tenant"

// TenantOf returns the tenant of obj: the value lifted from metadata.tenant by
// Transport, or SystemTenant when the object has none (Arktos's rule for
// objects created through the short, tenant-less paths).
func TenantOf(obj metav1.Object) string {
	if t := obj.GetAnnotations()[TenantAnnotation]; t != "" {
		return t
	}
	return SystemTenant
}

// SetTenant records tenant on obj the way Transport does, so objects built in
// code look like objects decoded from a TP.
func SetTenant(obj metav1.Object, tenant string) {
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
