package vendorable

// The cores: the packages an Arktos tree vendors (docs/vendoring.md), and
// what each may import besides the standard library and the other cores.
// Everything else (client-go, k8s.io/api, apimachinery, klog, Prometheus)
// belongs in the core's adapter package, which tpkit's programs use and an
// Arktos build does not. This file is the one list; every entry says why.
var cores = []core{
	{Path: "pkg/tenancy"},
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

// bboltArktos is the bbolt Arktos 6685f14 pins (a replace in its go.mod);
// the toolchain check builds tporigin against it.
const bboltArktos = "v1.3.3"
