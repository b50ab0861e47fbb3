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
