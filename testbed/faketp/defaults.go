package faketp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Server defaults, hand-written from what Arktos's API server returns
// (samples 30, 36, 40, 71, 73): the API defaults of the kinds fake-tp
// serves, and what the admission plugins an Arktos TP runs add to pods
// (DefaultTolerationSeconds, Priority). Not ServiceAccount admission:
// fake-tp has no service accounts, so pods get no token volume.

// applyDefaults fills in the defaults of every write (create, update,
// patch, seed) of o, an object of r, as kube-apiserver's decoder does.
func applyDefaults(r *resource, o obj) {
	switch r.gvr.Resource {
	case "pods":
		defaultPodSpec(ensureChild(o, "spec"), true)
		// Conditions carry both times, null when unset, as a typed
		// round trip writes them (sample 96).
		for _, c := range list(o, "status", "conditions") {
			if m, ok := c.(map[string]any); ok {
				setDefault(m, "lastProbeTime", nil)
				setDefault(m, "lastTransitionTime", nil)
			}
		}
	case "services":
		defaultServiceSpec(ensureChild(o, "spec"))
	case "endpoints":
		for _, s := range list(o, "subsets") {
			if m, ok := s.(map[string]any); ok {
				defaultProtocols(m, "ports")
			}
		}
	case "secrets":
		defaultSecret(o)
	case "daemonsets":
		defaultDaemonSetSpec(ensureChild(o, "spec"))
	}
}

// dropNewerFields removes what clients of newer Kubernetes write but
// Arktos's types (Kubernetes 1.18, before dual-stack) do not have, as its
// decoder drops them (sample 96 loses status.podIPs). Seeds keep them.
func dropNewerFields(r *resource, o obj) {
	switch r.gvr.Resource {
	case "pods":
		if st := child(o, "status"); st != nil {
			delete(st, "podIPs")
			delete(st, "hostIPs")
		}
	case "services":
		if spec := child(o, "spec"); spec != nil {
			for _, f := range []string{"clusterIPs", "ipFamilies", "ipFamilyPolicy"} {
				delete(spec, f)
			}
		}
	}
}

// defaultOnCreate applies what Arktos does only when an object is created
// through the API: status is the server's (pods start Pending with their
// QoS class, services with an empty load balancer, DaemonSets with zero
// counts), a pod gets the tolerations and priority of the admission
// plugins, a DaemonSet its template generation. Cluster IPs are
// clusterIPOnCreate's.
func (tp *TP) defaultOnCreate(r *resource, o obj) {
	switch r.gvr.Resource {
	case "pods":
		spec := ensureChild(o, "spec")
		defaultTolerations(spec)
		if _, ok := spec["priority"]; !ok {
			spec["priority"] = json.Number("0")
		}
		o["status"] = obj{"phase": "Pending", "qosClass": qosClass(spec)}
	case "services":
		o["status"] = obj{"loadBalancer": obj{}}
	case "daemonsets":
		md := ensureChild(o, "metadata")
		ann := ensureChild(md, "annotations")
		ann["deprecated.daemonset.template.generation"] = "1"
		o["status"] = obj{
			"currentNumberScheduled": json.Number("0"), "numberMisscheduled": json.Number("0"),
			"desiredNumberScheduled": json.Number("0"), "numberReady": json.Number("0"),
		}
	}
}

// clusterIPOnCreate gives a new service (not an ExternalName one) without
// a cluster IP one from the TP's range, and marks one it asks for as taken
// ("None", headless, is not an address). A dry run allocates nothing, as
// in Arktos. Only spec.clusterIP: Arktos's API server (Kubernetes 1.18)
// predates spec.clusterIPs, ipFamilies and ipFamilyPolicy (sample 30 has
// none), and dropNewerFields removes them from clients' writes.
func (tp *TP) clusterIPOnCreate(spec obj, dryRun bool) error {
	if str(spec, "type") == "ExternalName" || dryRun {
		return nil
	}
	if ip := str(spec, "clusterIP"); ip != "" {
		tp.serviceIPs.reserve(ip, tp.clusterIPsInUse)
		return nil
	}
	ip, err := tp.serviceIPs.allocate(tp.clusterIPsInUse)
	if err != nil {
		// kube-apiserver's answer when its range is full.
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
	}
	spec["clusterIP"] = ip
	return nil
}

// clusterIPOnUpdate is what Arktos's service REST does with the cluster IP
// on an update: it cannot change (or be dropped) while the service has one
// (ValidateServiceUpdate; Kubernetes 1.20 later kept it instead), and a
// service that stops being ExternalName gets one.
func (tp *TP) clusterIPOnUpdate(r *resource, name string, spec, oldSpec obj, dryRun bool) error {
	typ, oldType := str(spec, "type"), str(oldSpec, "type")
	ip, oldIP := str(spec, "clusterIP"), str(oldSpec, "clusterIP")
	if typ != "ExternalName" && oldType != "ExternalName" && oldIP != "" && ip != oldIP {
		return errInvalid(r, name, "spec.clusterIP", ip, "field is immutable")
	}
	if oldType == "ExternalName" && typ != "ExternalName" {
		return tp.clusterIPOnCreate(spec, dryRun)
	}
	return nil
}

func setDefault(m obj, k string, v any) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// defaultPodSpec is SetDefaults_PodSpec and SetDefaults_Container, plus
// Arktos's workloadInfo (name, image and resources of every container).
// pod says the spec is a pod's rather than a template's.
func defaultPodSpec(spec obj, pod bool) {
	var workloads []any
	for _, k := range []string{"initContainers", "containers"} {
		for _, c := range list(spec, k) {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			defaultContainer(m)
			if k == "containers" {
				workloads = append(workloads, obj{"name": m["name"], "image": m["image"], "resources": m["resources"]})
			}
		}
	}
	if workloads != nil {
		spec["workloadInfo"] = workloads
	}
	for _, v := range list(spec, "volumes") {
		m, _ := v.(map[string]any)
		for _, src := range []string{"secret", "configMap"} {
			if s := child(m, src); s != nil {
				setDefault(s, "defaultMode", json.Number("420"))
			}
		}
	}
	setDefault(spec, "restartPolicy", "Always")
	setDefault(spec, "terminationGracePeriodSeconds", json.Number("30"))
	setDefault(spec, "dnsPolicy", "ClusterFirst")
	setDefault(spec, "securityContext", obj{})
	setDefault(spec, "schedulerName", "default-scheduler")
	if pod {
		setDefault(spec, "enableServiceLinks", true)
	}
}

func defaultContainer(c obj) {
	defaultProtocols(c, "ports")
	setDefault(c, "resources", obj{})
	setDefault(c, "terminationMessagePath", "/dev/termination-log")
	setDefault(c, "terminationMessagePolicy", "File")
	if _, ok := c["imagePullPolicy"]; !ok {
		c["imagePullPolicy"] = pullPolicy(str(c, "image"))
	}
}

// pullPolicy is Always for images without a tag or tagged latest, else
// IfNotPresent, as kube-apiserver defaults it.
func pullPolicy(image string) string {
	if strings.Contains(image, "@") {
		return "IfNotPresent"
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(name, ":"); i < 0 || name[i+1:] == "latest" {
		return "Always"
	}
	return "IfNotPresent"
}

// defaultProtocols sets protocol TCP on the ports at o[k].
func defaultProtocols(o obj, k string) {
	for _, p := range list(o, k) {
		if m, ok := p.(map[string]any); ok {
			setDefault(m, "protocol", "TCP")
		}
	}
}

// defaultTolerations is DefaultTolerationSeconds: pods tolerate not-ready
// and unreachable nodes for 300 seconds unless they say otherwise.
func defaultTolerations(spec obj) {
	tols := list(spec, "tolerations")
	for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
		covered := false
		for _, t := range tols {
			m, _ := t.(map[string]any)
			e := str(m, "effect")
			k := str(m, "key")
			if (e == "" || e == "NoExecute") && (k == key || k == "" && str(m, "operator") == "Exists") {
				covered = true
			}
		}
		if !covered {
			tols = append(tols, obj{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": json.Number("300")})
		}
	}
	spec["tolerations"] = tols
}

// qosClass is the pod's QoS class from its containers' resources.
func qosClass(spec obj) string {
	some, guaranteed := false, true
	for _, k := range []string{"initContainers", "containers"} {
		for _, c := range list(spec, k) {
			m, _ := c.(map[string]any)
			res := child(m, "resources")
			req, lim := child(res, "requests"), child(res, "limits")
			if len(req) > 0 || len(lim) > 0 {
				some = true
			}
			for _, r := range []string{"cpu", "memory"} {
				l := str(lim, r)
				if l == "" || (str(req, r) != "" && str(req, r) != l) {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !some:
		return "BestEffort"
	case guaranteed:
		return "Guaranteed"
	}
	return "Burstable"
}

// defaultServiceSpec is SetDefaults_Service of Arktos (Kubernetes 1.18):
// type ClusterIP, session affinity None (which has no config; ClientIP
// gets a 10800 s timeout), ports TCP with their own number as target
// (also for a targetPort of 0 or ""), and external traffic policy Cluster
// for NodePort and LoadBalancer services. Samples 30 and 31 show the
// first three; the cluster IP is clusterIPOnCreate's.
func defaultServiceSpec(spec obj) {
	setDefault(spec, "type", "ClusterIP")
	setDefault(spec, "sessionAffinity", "None")
	switch str(spec, "sessionAffinity") {
	case "None":
		delete(spec, "sessionAffinityConfig")
	case "ClientIP":
		if _, ok := child(child(spec, "sessionAffinityConfig"), "clientIP")["timeoutSeconds"]; !ok {
			spec["sessionAffinityConfig"] = obj{"clientIP": obj{"timeoutSeconds": json.Number("10800")}}
		}
	}
	for _, p := range list(spec, "ports") {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		setDefault(m, "protocol", "TCP")
		if unsetPort(m["targetPort"]) && m["port"] != nil {
			m["targetPort"] = m["port"]
		}
	}
	if t := str(spec, "type"); t == "NodePort" || t == "LoadBalancer" {
		setDefault(spec, "externalTrafficPolicy", "Cluster")
	}
}

// unsetPort says whether v, an IntOrString port, is absent, 0 or "".
func unsetPort(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case json.Number:
		n, err := v.Float64()
		return err == nil && n == 0
	}
	return false
}

// defaultSecret moves stringData into data (base64) and types a secret
// Opaque when it has no type.
func defaultSecret(o obj) {
	if sd := child(o, "stringData"); sd != nil {
		data := ensureChild(o, "data")
		for k, v := range sd {
			data[k] = base64.StdEncoding.EncodeToString([]byte(fmt.Sprint(v)))
		}
		delete(o, "stringData")
	}
	if str(o, "type") == "" {
		o["type"] = "Opaque"
	}
}

// defaultDaemonSetSpec is SetDefaults_DaemonSet with the pod template's
// defaults (sample 73).
func defaultDaemonSetSpec(spec obj) {
	setDefault(spec, "updateStrategy", obj{"type": "RollingUpdate"})
	if us := child(spec, "updateStrategy"); str(us, "type") == "RollingUpdate" {
		setDefault(us, "rollingUpdate", obj{})
		setDefault(child(us, "rollingUpdate"), "maxUnavailable", json.Number("1"))
	}
	setDefault(spec, "revisionHistoryLimit", json.Number("10"))
	tmpl := ensureChild(spec, "template")
	setDefault(ensureChild(tmpl, "metadata"), "creationTimestamp", nil)
	defaultPodSpec(ensureChild(tmpl, "spec"), false)
}
