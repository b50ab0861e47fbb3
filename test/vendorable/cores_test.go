package vendorable

// The cores: the packages an Arktos tree vendors (docs/vendoring.md), and
// what each may import besides the standard library and the other cores.
// Everything else (client-go, k8s.io/api, apimachinery, klog, Prometheus)
// belongs in the core's adapter package, which tpkit's programs use and an
// Arktos build does not. This file is the one list; every entry says why.
var cores = []core{
	{Path: "pkg/tenancy", Allowed: []allowed{
		{Module: "k8s.io/apimachinery/pkg/util/validation", Why: "the DNS-1123 label rule is Kubernetes's own (validation.IsDNS1123Label), not a copy that could drift. Arktos has the package in its staging tree; MinGo builds against apimachinery " + apimachineryMinGo + "."},
	}},
	{Path: "pkg/ipaddr"},
	{Path: "pkg/corelog"},
	{Path: "pkg/dns/names"},
	{Path: "pkg/admission"},
	{Path: "pkg/admission/daemonset"},
	{Path: "pkg/admission/tenantname"},
	{Path: "pkg/kubeletdns"},
	{Path: "pkg/kubeproxy"},
	{Path: "pkg/tporigin", Allowed: []allowed{
		{Module: "go.etcd.io/bbolt", Why: "the origin file is tporigin's job: a node restart must find every pod's TP before any TP answers. Arktos pins v1.3.3; MinGo builds against that version."},
	}},
}

// apimachineryMinGo is the apimachinery the toolchain check builds
// pkg/tenancy against: the Kubernetes 1.18 line, which Arktos's staging copy
// of apimachinery follows (an Arktos build vendors that copy instead).
const apimachineryMinGo = "v0.18.19"

// bboltArktos is the bbolt Arktos 6685f14 pins (a replace in its go.mod);
// the toolchain check builds tporigin against it.
const bboltArktos = "v1.3.3"
