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

// Package corelog is the one logger shape of tpkit's cores (pkg/tporigin,
// pkg/kubeletdns, pkg/kubeproxy): a small levelled interface, a discard
// default, and Funcs, the adapter for any printf-style logger.
//
// The cores are vendored into Arktos, which logs with klog v1, while tpkit's
// own code has klog/v2; neither may be a dependency of a core. Both klogs
// fit Funcs without a line of glue:
//
//	corelog.Funcs{Debug: klog.V(4).Infof, Info: klog.Infof,
//		Warning: klog.Warningf, Error: klog.Errorf}
//
// and a test passes t.Logf. A core takes a Logger in its Options (nil means
// Discard, as bbolt's Options.Logger does), so its call sites never check
// for nil.
//
// It is a core itself (test/vendorable): standard library only, language and
// library of Go 1.13, no state and no goroutines.
package corelog
