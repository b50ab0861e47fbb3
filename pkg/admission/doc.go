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

// Package admission is the shape tpkit's admission plugins share with an
// Arktos (k8s.io/apiserver based) API server, in plain values: an
// Operation, a Request (group, resource, kind, tenant, namespace and names
// as strings, whether the stored object is being deleted, and the user), the
// ValidationInterface plugins implement, and the Error they refuse with. It
// imports only the standard library, so an Arktos tree vendors it (and the
// plugins in its sub-packages daemonset and tenantname) without tpkit's
// Kubernetes libraries.
//
// Who builds a Request:
//   - pkg/admission/k8s, the adapter, from runtime.Object values, for
//     fake-tp's admission chain and pkg/admission/webhook (cmd/tp-admission-webhook);
//     it also turns an *Error into the apimachinery StatusError of the same
//     code, reason and message;
//   - an Arktos API server, from its admission.Attributes, in a few lines of
//     glue (daemonset's example test shows them; docs/vendoring.md).
//
// Invariants: an *Error's text is exactly the message of the Kubernetes
// status it stands for, so a client sees the same words from fake-tp, the
// webhook and Arktos; an unknown user tenant is never the system tenant
// (UserTenant fails closed).
package admission
