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

// Package daemonset is the admission decision for DaemonSets in Arktos
// scale-out: DaemonSets live only in the system tenant, and optionally only
// cluster admins may manage them.
//
// Rules, in the order they are checked:
//  1. Tenant rule (Arktos): a DaemonSet CREATE or UPDATE in any tenant other
//     than system is Forbidden with Message. The empty tenant is system. DELETE
//     is exempt so that DaemonSets created before the rule was enabled can
//     still be removed, and so is an UPDATE of a DaemonSet that is already
//     being deleted (the garbage collector removes finalizers that way).
//  2. Admin rule (beyond Arktos, on when Config.AdminOnly): CREATE, UPDATE and
//     DELETE are allowed only for cluster admins: members of Config.AdminGroups
//     (default system:masters) and users of the system tenant (see
//     admission.UserTenant). Anyone else is Forbidden with a message naming
//     the user.
//
// Both rules look only at the DaemonSet itself, never at its subresources:
// status is written by the DaemonSet controller, and no subresource can move
// a DaemonSet to another tenant.
//
// In Arktos, the plugin replaces Arktos's own SystemDaemonSet check
// (plugin/pkg/admission/systemdaemonset) under that name (ArktosPluginName),
// with the same 403 and message; ParseConfig reads the admin rule from the
// plugin's admission configuration. The example test shows the glue an
// Arktos tree adds, and docs/vendoring.md the exact change.
//
// Invariants: the Plugin holds only its immutable configuration, so one value
// serves any number of goroutines; Validate reads only the admission.Request
// it is given, and every rejection is an *admission.Error with reason
// Forbidden, whose text is Arktos's: `daemonsets.apps "<name>" is forbidden:
// only system tenant is allowed to have DaemonSet`.
package daemonset
