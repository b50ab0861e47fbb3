package admission

// UserTenantExtraKey is the key of user.Info's extra that names the user's
// Arktos tenant when the UserInfo has no GetTenant method. Authenticators and
// impersonation ("Impersonate-Extra-tenant: t1") set it; the API server passes
// it to webhooks in AdmissionReview's userInfo.extra (Arktos's webhook
// request builder does not copy user.Info's tenant, so this is how a webhook
// learns it).
const UserTenantExtraKey = "tenant"

// UserTenant returns the Arktos tenant of u, or "" when it is unknown:
//   - a UserInfo with a GetTenant() string method (Arktos's user.Info, in
//     k8s.io/apiserver/pkg/authentication/user) answers for itself, even
//     with "": the API server's own answer is not overridden by extra;
//   - otherwise the single value of the extra UserTenantExtraKey is used.
//
// Unlike an object's tenant, an unknown user tenant is NOT the system tenant:
// admission decisions that trust system-tenant users must fail closed, so ""
// never means "system" here. Several values for the key are ambiguous and
// also yield "".
func UserTenant(u UserInfo) string {
	if u == nil {
		return ""
	}
	if t, ok := u.(interface{ GetTenant() string }); ok {
		return t.GetTenant()
	}
	if v := u.GetExtra()[UserTenantExtraKey]; len(v) == 1 {
		return v[0]
	}
	return ""
}
