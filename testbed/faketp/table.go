package faketp

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// Server-side printing: kubectl get asks for a meta.k8s.io Table (Accept
// "application/json;as=Table;v=v1;g=meta.k8s.io"); fake-tp answers with the
// columns kube-apiserver prints for its resources, plus the tenant in wide
// output. Any other client gets plain objects.

// tableFormat is how a request wants its objects: as a Table or not, and
// what each row carries (includeObject).
type tableFormat struct {
	on      bool
	include string // "Object", "Metadata" (the default) or "None"
	version string // of meta.k8s.io, as asked: v1 or v1beta1
}

func tableRequest(r *http.Request) tableFormat {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/json" {
			continue
		}
		if params["as"] == "Table" && params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
			inc := r.URL.Query().Get("includeObject")
			if inc == "" {
				inc = "Metadata"
			}
			return tableFormat{on: true, include: inc, version: params["v"]}
		}
		if params["as"] == "" {
			return tableFormat{} // plain JSON comes first
		}
	}
	return tableFormat{}
}

type column struct {
	def  metav1.TableColumnDefinition
	cell func(o obj, now time.Time) any
}

func col(name, typ string, priority int32, cell func(o obj, now time.Time) any) column {
	c := column{def: metav1.TableColumnDefinition{Name: name, Type: typ, Priority: priority}, cell: cell}
	if name == "Name" {
		c.def.Format = "name"
	}
	return c
}

var (
	nameCol = col("Name", "string", 0, func(o obj, _ time.Time) any { return str(o, "metadata", "name") })
	ageCol  = col("Age", "string", 0, age)
)

func age(o obj, now time.Time) any {
	ts, err := time.Parse(time.RFC3339, str(o, "metadata", "creationTimestamp"))
	if err != nil {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts))
}

func list(o obj, path ...string) []any {
	var cur any = o
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	l, _ := cur.([]any)
	return l
}

func count(o obj, k string) any {
	m, _ := o[k].(map[string]any)
	return int64(len(m))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func num(o obj, path ...string) any {
	n, _ := strconv.ParseInt(str(o, path...), 10, 64)
	return n
}

func joinMap(m map[string]any) string {
	var kv []string
	for k, v := range m {
		kv = append(kv, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(kv)
	return orNone(strings.Join(kv, ","))
}

// columns are each resource's table columns, as Arktos's kube-apiserver
// prints them: pods with Arktos's HashKey (sample 74), namespaces with their
// tenant (91-kubectl-stock.txt), tenants with their storage cluster.
var columns = map[string][]column{
	"tenants": {nameCol,
		col("StorageID", "string", 0, func(o obj, _ time.Time) any { return str(o, "spec", "storageClusterId") }),
		col("Status", "string", 0, func(o obj, _ time.Time) any { return str(o, "status", "phase") }),
		ageCol},
	"namespaces": {nameCol,
		col("Status", "string", 0, func(o obj, _ time.Time) any { return str(o, "status", "phase") }),
		ageCol,
		col("Tenant", "string", 0, func(o obj, _ time.Time) any { return str(o, "metadata", "tenant") })},
	"pods": {nameCol,
		col("HashKey", "integer", 0, func(o obj, _ time.Time) any { return num(o, "metadata", "hashKey") }),
		col("Ready", "string", 0, func(o obj, _ time.Time) any {
			ready := 0
			for _, cs := range list(o, "status", "containerStatuses") {
				if m, ok := cs.(map[string]any); ok && m["ready"] == true {
					ready++
				}
			}
			return fmt.Sprintf("%d/%d", ready, len(list(o, "spec", "containers")))
		}),
		col("Status", "string", 0, func(o obj, _ time.Time) any {
			if str(o, "metadata", "deletionTimestamp") != "" {
				return "Terminating"
			}
			return str(o, "status", "phase")
		}),
		col("Restarts", "integer", 0, func(o obj, _ time.Time) any {
			var n int64
			for _, cs := range list(o, "status", "containerStatuses") {
				if m, ok := cs.(map[string]any); ok {
					v, _ := strconv.ParseInt(str(m, "restartCount"), 10, 64)
					n += v
				}
			}
			return n
		}),
		ageCol,
		col("IP", "string", 1, func(o obj, _ time.Time) any { return orNone(str(o, "status", "podIP")) }),
		col("Node", "string", 1, func(o obj, _ time.Time) any { return orNone(str(o, "spec", "nodeName")) }),
		col("Nominated Node", "string", 1, func(o obj, _ time.Time) any { return orNone(str(o, "status", "nominatedNodeName")) }),
		col("Readiness Gates", "string", 1, func(o obj, _ time.Time) any {
			gates := list(o, "spec", "readinessGates")
			if len(gates) == 0 {
				return "<none>"
			}
			ready := 0
			for _, g := range gates {
				gm, _ := g.(map[string]any)
				for _, c := range list(o, "status", "conditions") {
					if cm, ok := c.(map[string]any); ok && str(cm, "type") == str(gm, "conditionType") && str(cm, "status") == "True" {
						ready++
					}
				}
			}
			return fmt.Sprintf("%d/%d", ready, len(gates))
		})},
	"services": {nameCol,
		col("Type", "string", 0, func(o obj, _ time.Time) any { return str(o, "spec", "type") }),
		col("Cluster-IP", "string", 0, func(o obj, _ time.Time) any { return orNone(str(o, "spec", "clusterIP")) }),
		col("External-IP", "string", 0, func(o obj, _ time.Time) any {
			var ips []string
			for _, ip := range list(o, "spec", "externalIPs") {
				if s, ok := ip.(string); ok {
					ips = append(ips, s)
				}
			}
			return orNone(strings.Join(ips, ","))
		}),
		col("Port(s)", "string", 0, func(o obj, _ time.Time) any {
			var ports []string
			for _, p := range list(o, "spec", "ports") {
				if m, ok := p.(map[string]any); ok {
					proto := str(m, "protocol")
					if proto == "" {
						proto = "TCP"
					}
					ports = append(ports, str(m, "port")+"/"+proto)
				}
			}
			return orNone(strings.Join(ports, ","))
		}),
		ageCol,
		col("Selector", "string", 1, func(o obj, _ time.Time) any { return joinMap(child(child(o, "spec"), "selector")) })},
	"endpoints": {nameCol,
		col("Endpoints", "string", 0, func(o obj, _ time.Time) any {
			var eps []string
			for _, s := range list(o, "subsets") {
				m, _ := s.(map[string]any)
				for _, a := range list(m, "addresses") {
					if am, ok := a.(map[string]any); ok {
						eps = append(eps, str(am, "ip"))
					}
				}
			}
			return orNone(strings.Join(eps, ","))
		}),
		ageCol},
	"configmaps": {nameCol,
		col("Data", "integer", 0, func(o obj, _ time.Time) any { return count(o, "data").(int64) + count(o, "binaryData").(int64) }),
		ageCol},
	"secrets": {nameCol,
		col("Type", "string", 0, func(o obj, _ time.Time) any { return str(o, "type") }),
		col("Data", "integer", 0, func(o obj, _ time.Time) any { return count(o, "data") }),
		ageCol},
	"daemonsets": {nameCol,
		col("Desired", "integer", 0, func(o obj, _ time.Time) any { return num(o, "status", "desiredNumberScheduled") }),
		col("Current", "integer", 0, func(o obj, _ time.Time) any { return num(o, "status", "currentNumberScheduled") }),
		col("Ready", "integer", 0, func(o obj, _ time.Time) any { return num(o, "status", "numberReady") }),
		col("Up-to-date", "integer", 0, func(o obj, _ time.Time) any { return num(o, "status", "updatedNumberScheduled") }),
		col("Available", "integer", 0, func(o obj, _ time.Time) any { return num(o, "status", "numberAvailable") }),
		col("Node Selector", "string", 0, func(o obj, _ time.Time) any {
			return joinMap(child(child(child(child(o, "spec"), "template"), "spec"), "nodeSelector"))
		}),
		ageCol},
	"endpointslices": {nameCol,
		col("AddressType", "string", 0, func(o obj, _ time.Time) any { return str(o, "addressType") }),
		col("Ports", "string", 0, func(o obj, _ time.Time) any {
			var ports []string
			for _, p := range list(o, "ports") {
				if m, ok := p.(map[string]any); ok {
					ports = append(ports, str(m, "port"))
				}
			}
			return orNone(strings.Join(ports, ","))
		}),
		col("Endpoints", "string", 0, func(o obj, _ time.Time) any {
			var eps []string
			for _, e := range list(o, "endpoints") {
				m, _ := e.(map[string]any)
				for _, a := range list(m, "addresses") {
					if s, ok := a.(string); ok {
						eps = append(eps, s)
					}
				}
			}
			return orNone(strings.Join(eps, ","))
		}),
		ageCol},
}

// table renders objects as a Table; listMeta carries the list's version
// and continue token.
func (f tableFormat) render(r *resource, objs []*store.Object, listMeta metav1.ListMeta, withColumns bool) ([]byte, error) {
	cols := columns[r.gvr.Resource]
	t := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/" + f.version}, ListMeta: listMeta, Rows: []metav1.TableRow{}}
	if withColumns {
		for _, c := range cols {
			t.ColumnDefinitions = append(t.ColumnDefinitions, c.def)
		}
	}
	now := time.Now()
	for _, so := range objs {
		o, err := decodeObject(so.Data)
		if err != nil {
			return nil, err
		}
		row := metav1.TableRow{}
		for _, c := range cols {
			row.Cells = append(row.Cells, c.cell(o, now))
		}
		switch f.include {
		case "Object":
			row.Object = runtime.RawExtension{Raw: r.objectJSON(so.Data)}
		case "None":
		default:
			b, err := json.Marshal(obj{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]})
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: b}
		}
		t.Rows = append(t.Rows, row)
	}
	return json.Marshal(&t)
}
