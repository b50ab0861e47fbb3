package source

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// readPage decodes a list page into its type and list metadata and its
// items as R: with scan, the reflection-free reader of one item, when it
// takes the page (see scanner), else with sigs.k8s.io/json, whose answer
// or error it then is. scan may be nil.
func readPage[R any](b []byte, scan func(*scanner, *R)) (metav1.TypeMeta, metav1.ListMeta, []R, error) {
	if scan != nil {
		if tm, lm, items, ok := scanPage(b, scan); ok {
			return tm, lm, items, nil
		}
	}
	return decodePage[R](b)
}

// decodePage is readPage through sigs.k8s.io/json.
func decodePage[R any](b []byte) (metav1.TypeMeta, metav1.ListMeta, []R, error) {
	var raw struct {
		metav1.TypeMeta `json:",inline"`
		ListMeta        metav1.ListMeta `json:"metadata"`
		Items           []R             `json:"items"`
	}
	// Case-sensitive, as Kubernetes decodes: "podIP" is not "podIp".
	err := kjson.UnmarshalCaseSensitivePreserveInts(b, &raw)
	return raw.TypeMeta, raw.ListMeta, raw.Items, err
}

// scanPage is readPage's reader without reflection; ok is false when it
// does not take the page.
func scanPage[R any](b []byte, scan func(*scanner, *R)) (tm metav1.TypeMeta, lm metav1.ListMeta, items []R, ok bool) {
	s := newScanner(b)
	if s.open('{') {
		var seen uint32
		for first := true; s.more('}', &first); {
			switch string(s.key()) {
			case "kind":
				s.once(&seen, 1)
				s.str(&tm.Kind, false)
			case "apiVersion":
				s.once(&seen, 2)
				s.str(&tm.APIVersion, false)
			case "metadata":
				// A few fields once a page: sigs.k8s.io/json reads them.
				s.once(&seen, 4)
				start := s.i
				s.skip()
				if !s.bad && kjson.UnmarshalCaseSensitivePreserveInts(b[start:s.i], &lm) != nil {
					s.fail()
				}
			case "items":
				s.once(&seen, 8)
				items = array(s, func(it *R) { scan(s, it) })
			default:
				s.skip()
			}
		}
	}
	if !s.end() {
		return metav1.TypeMeta{}, metav1.ListMeta{}, nil, false
	}
	return tm, lm, items, true
}

// object reads an object's members, each by field (its key's), skipping
// those field does not read (false); null leaves the value as it was.
// Fields given twice fail (scanner.once), as field numbers them by the bit
// it returns.
func (s *scanner) object(field func(key []byte) (bit uint32)) {
	if !s.open('{') {
		return
	}
	var seen uint32
	for first := true; s.more('}', &first); {
		if bit := field(s.key()); bit != 0 {
			s.once(&seen, bit)
		}
	}
}

// meta reads what slimMeta holds of an object's metadata.
func (s *scanner) meta(m *slimMeta) {
	s.object(func(k []byte) uint32 {
		switch string(k) {
		case "name":
			s.str(&m.Name, false)
			return 1
		case "namespace":
			s.str(&m.Namespace, true)
			return 2
		case "tenant":
			s.str(&m.Tenant, true)
			return 4
		case "annotations":
			s.object(func(k []byte) uint32 {
				if string(k) == "tpkit.dev/tenant" { // tenancy.TenantAnnotation
					s.str(&m.Annotations.Tenant, true)
					return 1
				}
				s.skip()
				return 0
			})
			return 8
		case "labels":
			s.object(func(k []byte) uint32 {
				if string(k) == "kubernetes.io/service-name" { // discoveryv1.LabelServiceName
					s.str(&m.Labels.Service, false)
					return 1
				}
				s.skip()
				return 0
			})
			return 16
		}
		s.skip()
		return 0
	})
}

// scanPod reads a pod of a list page as slimPod.
func scanPod(s *scanner, p *slimPod) {
	s.object(func(k []byte) uint32 {
		switch string(k) {
		case "metadata":
			s.meta(&p.Metadata)
			return 1
		case "spec":
			s.object(func(k []byte) uint32 {
				if string(k) == "hostNetwork" {
					s.boolean(&p.Spec.HostNetwork)
					return 1
				}
				s.skip()
				return 0
			})
			return 2
		case "status":
			s.podStatus(p)
			return 4
		}
		s.skip()
		return 0
	})
}

func (s *scanner) podStatus(p *slimPod) {
	st := &p.Status
	s.object(func(k []byte) uint32 {
		switch string(k) {
		case "phase":
			var phase string
			s.str(&phase, true)
			st.Phase = corev1.PodPhase(phase)
			return 1
		case "podIP":
			s.str(&st.PodIP, false)
			return 2
		case "podIPs":
			st.PodIPs = array(s, func(ip *corev1.PodIP) {
				s.object(func(k []byte) uint32 {
					if string(k) == "ip" {
						s.strLike(&ip.IP, st.PodIP)
						return 1
					}
					s.skip()
					return 0
				})
			})
			return 4
		}
		s.skip()
		return 0
	})
}

// strLike is str, but gives like itself when the string is like's bytes
// (a pod's podIPs repeat its podIP): one string, not two.
func (s *scanner) strLike(dst *string, like string) {
	if s.peek() == '"' && s.i+1+len(like) < len(s.b) && s.b[s.i+1+len(like)] == '"' &&
		string(s.b[s.i+1:s.i+1+len(like)]) == like && plainASCII(like) {
		s.i += len(like) + 2
		*dst = like
		return
	}
	s.str(dst, false)
}

// plainASCII reports whether s needs no unquoting: no quote, backslash,
// control or non-ASCII byte.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// scanService reads a service of a list page as slimService.
func scanService(s *scanner, v *slimService) {
	s.object(func(k []byte) uint32 {
		switch string(k) {
		case "metadata":
			s.meta(&v.Metadata)
			return 1
		case "spec":
			s.serviceSpec(&v.Spec)
			return 2
		}
		s.skip()
		return 0
	})
}

func (s *scanner) serviceSpec(sp *slimServiceSpec) {
	s.object(func(k []byte) uint32 {
		switch string(k) {
		case "type":
			var t string
			s.str(&t, true)
			sp.Type = corev1.ServiceType(t)
			return 1
		case "clusterIP":
			s.str(&sp.ClusterIP, false)
			return 2
		case "clusterIPs":
			sp.ClusterIPs = array(s, func(ip *string) { s.strLike(ip, sp.ClusterIP) })
			return 4
		case "externalName":
			s.str(&sp.ExternalName, false)
			return 8
		case "ports":
			sp.Ports = s.ports()
			return 16
		}
		s.skip()
		return 0
	})
}

// ports reads a list of ports.
func (s *scanner) ports() []slimPort {
	return array(s, func(p *slimPort) {
		s.object(func(k []byte) uint32 {
			switch string(k) {
			case "name":
				s.str(&p.Name, true)
				return 1
			case "protocol":
				var proto string
				s.str(&proto, true)
				p.Protocol = corev1.Protocol(proto)
				return 2
			case "port":
				s.int32(&p.Port)
				return 4
			}
			s.skip()
			return 0
		})
	})
}

// scanEndpoints reads a core/v1 Endpoints of a list page as slimEndpoints.
func scanEndpoints(s *scanner, e *slimEndpoints) {
	s.object(func(k []byte) uint32 {
		switch string(k) {
		case "metadata":
			s.meta(&e.Metadata)
			return 1
		case "subsets":
			e.Subsets = s.subsets()
			return 2
		}
		s.skip()
		return 0
	})
}

func (s *scanner) subsets() []slimSubset {
	return array(s, func(ss *slimSubset) {
		s.object(func(k []byte) uint32 {
			switch string(k) {
			case "addresses":
				ss.Addresses = array(s, func(a *slimAddress) {
					s.object(func(k []byte) uint32 {
						switch string(k) {
						case "ip":
							s.str(&a.IP, false)
							return 1
						case "hostname":
							s.str(&a.Hostname, false)
							return 2
						}
						s.skip()
						return 0
					})
				})
				return 1
			case "ports":
				ss.Ports = s.ports()
				return 2
			}
			s.skip()
			return 0
		})
	})
}

// array reads an array, each element by elem: null is nil (and leaves
// nothing else as it was: a slice field decodes to nil from null), []
// empty but not nil, as encoding/json makes them.
func array[T any](s *scanner, elem func(*T)) []T {
	if !s.open('[') {
		return nil
	}
	out := make([]T, 0, 1)
	for first := true; s.more(']', &first); {
		out = append(out, *new(T))
		elem(&out[len(out)-1])
	}
	return out
}
