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

package daemonset

import (
	"context"
	"fmt"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// PluginName is the name of the plugin in tpkit's admission chains
// (fake-tp's --disable-admission-plugins) and logs.
const PluginName = "DaemonSetSystemTenant"

// ArktosPluginName is the name Arktos registers its own DaemonSet check
// under (plugin/pkg/admission/systemdaemonset, on by default in
// kube-apiserver). An Arktos build that uses this plugin instead registers
// it under this name, in place of Arktos's: admission.Plugins refuses a name
// registered twice.
const ArktosPluginName = "SystemDaemonSet"

// Message is Arktos's reason for rejecting a DaemonSet outside the system
// tenant. Clients and tests match on it, so it never changes.
const Message = "only system tenant is allowed to have DaemonSet"

// DefaultAdminGroup is the group whose members are cluster admins when
// Config.AdminGroups is empty.
const DefaultAdminGroup = "system:masters"

// Resource is the DaemonSet resource. Forbidden errors name it with the
// request's group, as Arktos's admission.NewForbidden does:
// daemonsets.apps (or daemonsets.extensions for the old group).
const Resource = "daemonsets"

// Config configures a Plugin. The zero value enforces the tenant rule only,
// as Arktos does.
type Config struct {
	// AdminOnly also lets only cluster admins create, update or delete
	// DaemonSets.
	AdminOnly bool `json:"adminOnly,omitempty"`
	// AdminGroups are the groups whose members are cluster admins;
	// [DefaultAdminGroup] when empty. Users of the system tenant are cluster
	// admins whatever their groups.
	AdminGroups []string `json:"adminGroups,omitempty"`
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

// Validate admits or rejects r; requests for anything but a DaemonSet itself
// are admitted. Every rejection is an *admission.Error with reason
// Forbidden. See the package documentation for the rules.
func (p *Plugin) Validate(_ context.Context, r admission.Request) error {
	if !IsDaemonSet(r) || r.Subresource != "" {
		return nil
	}
	op := r.Operation
	if !p.Handles(op) {
		return nil
	}
	if op != admission.Delete && !tenancy.IsSystem(r.Tenant) && !(op == admission.Update && r.BeingDeleted) {
		return admission.NewForbidden(r.Group, Resource, r.ErrorName(), Message)
	}
	if p.adminOnly && !p.IsAdmin(r.User) {
		return admission.NewForbidden(r.Group, Resource, r.ErrorName(), p.notAdmin(op, r.User))
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
func (p *Plugin) notAdmin(op admission.Operation, u admission.UserInfo) string {
	name, tenant := "", ""
	if u != nil {
		name, tenant = u.GetName(), admission.UserTenant(u)
	}
	if tenant == "" {
		tenant = "unknown"
	}
	return fmt.Sprintf("user %q (tenant %s) may not %s DaemonSets: only cluster admins may (members of %s, or users of the %s tenant)",
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

// IsDaemonSet reports whether r is about DaemonSets: the resource daemonsets
// in group apps (or the old extensions group), or, when the resource is not
// set, the kind DaemonSet in those groups.
func IsDaemonSet(r admission.Request) bool {
	if r.Resource != "" {
		return r.Resource == Resource && isDaemonSetGroup(r.Group)
	}
	return r.Kind == "DaemonSet" && isDaemonSetGroup(r.Group)
}

func isDaemonSetGroup(g string) bool { return g == "apps" || g == "extensions" }
