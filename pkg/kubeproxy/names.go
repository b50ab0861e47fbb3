package kubeproxy

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// ServicePortName identifies one port of one service in one TP. It is
// upstream kube-proxy's ServicePortName with the TP and tenant added.
type ServicePortName struct {
	// Service is {TP, tenant, namespace, name}.
	Service tenancy.Key
	// Port is the port's name, "" for an unnamed port.
	Port     string
	Protocol corev1.Protocol
}

// String renders Arktos's form "<tenant>_<tp>/<namespace>/<name>:<port>".
// As upstream, an unnamed port adds nothing after the service key; the
// protocol is not part of the string.
func (n ServicePortName) String() string {
	var b strings.Builder
	k := n.Service
	b.Grow(len(k.Tenant) + len(k.Partition) + len(k.Namespace) + len(k.Name) + len(n.Port) + 4)
	b.WriteString(k.String())
	if n.Port != "" {
		b.WriteByte(':')
		b.WriteString(n.Port)
	}
	return b.String()
}

// keyIn is obj's key as seen in TP tp.
func keyIn(tp string, obj metav1.Object) tenancy.Key {
	return tenancy.Key{Partition: tp, Tenant: tenancy.TenantOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
