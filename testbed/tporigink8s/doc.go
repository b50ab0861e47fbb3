// Package tporigink8s feeds a pkg/tporigin Tracker from client-go in
// process, for tpkit's harnesses (test/multi-tp, test/bench/scale/node):
// Wire reads every TP of a partition.Set through pkg/informer, the node's
// pods (spec.nodeName), services and endpoints of every tenant, observed on
// add and update, forgotten on delete, and pruned after every full list.
//
// No program and no Arktos patch uses it: an Arktos kubelet vendors the core
// only, records origins at its own pod sources (tporigin.ClientChooser.Record)
// and publishes the tracker's figures on its /metrics itself (arktos/patches).
//
// Moved from pkg/tporigin/k8s (github.com/tpkit-dev/tpkit/pkg/tporigin/k8s,
// package k8s) with the test bed; AddFlags and Collector, which nothing called,
// went then.
package tporigink8s
