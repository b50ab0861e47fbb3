//go:build tools

// This file pins the module's chosen dependencies before every one of them is
// imported by real code, so that go.mod and go.sum stay complete for parallel work.
// It is never compiled.
package tools

import (
	_ "github.com/coreos/go-iptables/iptables"
	_ "github.com/miekg/dns"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "go.etcd.io/bbolt"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/klog/v2"
	_ "sigs.k8s.io/yaml"
)
