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

package kubeproxy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// ServiceName identifies one service in one TP. It is Arktos's
// types.NamespacednameWithTenantSource: the TP is the int tenantPartitionId,
// the service's TP's position in --tenant-server-kubeconfig (from 0), which
// is how Arktos's kube-proxy numbers its clients and informers.
type ServiceName struct {
	TenantPartitionID int
	// Tenant is the service's tenant; records with no tenant are filed
	// under tenancy.SystemTenant, as Arktos's API server fills it.
	Tenant    string
	Namespace string
	Name      string
}

// String renders Arktos's NamespacednameWithTenantSource form
// "<tenant>_<tenantPartitionId>/<namespace>/<name>".
func (n ServiceName) String() string {
	var b strings.Builder
	b.Grow(len(n.Tenant) + len(n.Namespace) + len(n.Name) + 8)
	n.write(&b)
	return b.String()
}

func (n ServiceName) write(b *strings.Builder) {
	b.WriteString(n.Tenant)
	b.WriteByte('_')
	var digits [20]byte
	b.Write(strconv.AppendInt(digits[:0], int64(n.TenantPartitionID), 10))
	b.WriteByte('/')
	b.WriteString(n.Namespace)
	b.WriteByte('/')
	b.WriteString(n.Name)
}

// validate reports why n cannot name a service: the tenant is not a valid
// tenant name, or the namespace or name is empty or holds '/'.
func (n ServiceName) validate() error {
	k := tenancy.Key{Partition: strconv.Itoa(n.TenantPartitionID), Tenant: n.Tenant, Namespace: n.Namespace, Name: n.Name}
	if err := k.Validate(); err != nil {
		return err
	}
	if n.Namespace == "" {
		return fmt.Errorf("key %q: namespace must not be empty", n.String())
	}
	return nil
}

// ServicePortName identifies one port of one service in one TP. Its fields
// and its string form are Arktos's proxy.ServicePortName (pkg/proxy/types.go):
// the ServiceName and the port's name. Port names are unique within a
// service, so the protocol is not part of the name; PortInfo carries it.
type ServicePortName struct {
	ServiceName
	// Port is the port's name, "" for the unnamed port of a one-port
	// service.
	Port string
}

// String renders Arktos's form "%s_%d/%s/%s:%s",
// "<tenant>_<tenantPartitionId>/<namespace>/<name>:<port>", byte for byte:
// an unnamed port leaves a trailing ':', as Arktos's does. Arktos's proxiers
// hash their KUBE-SVC/KUBE-SEP chain names from this string (the test of
// arktos/patches/0008 pins three), so it must not change.
func (n ServicePortName) String() string {
	var b strings.Builder
	b.Grow(len(n.Tenant) + len(n.Namespace) + len(n.Name) + len(n.Port) + 9)
	n.ServiceName.write(&b)
	b.WriteByte(':')
	b.WriteString(n.Port)
	return b.String()
}

// nameOf is the service port name's service part of an object of TP tp;
// an object without a tenant is filed under the system tenant.
func nameOf(tp int, tenant, namespace, name string) ServiceName {
	return ServiceName{TenantPartitionID: tp, Tenant: tenancy.NormalTenant(tenant), Namespace: namespace, Name: name}
}
