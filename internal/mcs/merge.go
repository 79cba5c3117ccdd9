package mcs

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

// Provider is what one cluster exports: the Service as Flotilla placed it there (with that cluster's
// overrides) and since when.
type Provider struct {
	Cluster string
	// Since is when the cluster began to export: the KEP gives the oldest export precedence in a conflict.
	Since   time.Time
	Service *corev1.Service
}

// Conflict is one property the providers disagree on, as the KEP's Conflict condition reports it.
type Conflict struct {
	Reason  mcsv1alpha1.ServiceExportConditionReason
	Message string
}

// Merge builds the spec of the ServiceImport of the providers' Service by KEP-1645's rules: Headless when the
// Service has no cluster IP, ClusterSetIP otherwise; the union of the providers' ports; and where providers
// disagree (a type, a port of one name or number with different properties, session affinity), the oldest
// export wins and the disagreement is returned as a conflict. Endpoints of every provider are imported
// whatever the conflicts: only the imported Service's properties are decided by age.
func Merge(providers []Provider) (mcsv1alpha1.ServiceImportSpec, []Conflict) {
	providers = slices.Clone(providers)
	slices.SortStableFunc(providers, func(a, b Provider) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Cluster, b.Cluster))
	})
	var spec mcsv1alpha1.ServiceImportSpec
	var conflicts []Conflict
	if len(providers) == 0 {
		return spec, nil
	}
	oldest := providers[0]
	spec.Type = importType(oldest.Service)
	spec.SessionAffinity = oldest.Service.Spec.SessionAffinity
	spec.SessionAffinityConfig = oldest.Service.Spec.SessionAffinityConfig.DeepCopy()
	portFrom := map[int]string{} // cluster each accepted port came from
	for _, p := range providers {
		if t := importType(p.Service); t != spec.Type {
			conflicts = append(conflicts, Conflict{mcsv1alpha1.ServiceExportReasonTypeConflict,
				fmt.Sprintf("cluster %s exports a %s Service, %s (older) a %s one", p.Cluster, t, oldest.Cluster, spec.Type)})
		}
		if p.Service.Spec.SessionAffinity != spec.SessionAffinity {
			conflicts = append(conflicts, Conflict{mcsv1alpha1.ServiceExportReasonSessionAffinityConflict,
				fmt.Sprintf("cluster %s has session affinity %q, %s (older) %q", p.Cluster, p.Service.Spec.SessionAffinity, oldest.Cluster, spec.SessionAffinity)})
		}
		for _, sp := range p.Service.Spec.Ports {
			port := importPort(sp)
			i := slices.IndexFunc(spec.Ports, func(q mcsv1alpha1.ServicePort) bool {
				return q.Name == port.Name || (q.Port == port.Port && q.Protocol == port.Protocol)
			})
			switch {
			case i < 0:
				portFrom[len(spec.Ports)] = p.Cluster
				spec.Ports = append(spec.Ports, port)
			case !equality.Semantic.DeepEqual(spec.Ports[i], port):
				conflicts = append(conflicts, Conflict{mcsv1alpha1.ServiceExportReasonPortConflict,
					fmt.Sprintf("cluster %s exports port %s, %s (older) %s", p.Cluster, describePort(port), portFrom[i], describePort(spec.Ports[i]))})
			}
		}
	}
	return spec, conflicts
}

func importType(svc *corev1.Service) mcsv1alpha1.ServiceImportType {
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return mcsv1alpha1.Headless
	}
	return mcsv1alpha1.ClusterSetIP
}

// importPort is a Service port as the ServiceImport has it: the protocol defaulted to TCP, as the API server
// does for the Service.
func importPort(p corev1.ServicePort) mcsv1alpha1.ServicePort {
	return mcsv1alpha1.ServicePort{Name: p.Name, Protocol: cmp.Or(p.Protocol, corev1.ProtocolTCP), AppProtocol: p.AppProtocol, Port: p.Port}
}

func describePort(p mcsv1alpha1.ServicePort) string {
	s := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
	if p.Name != "" {
		s = p.Name + " " + s
	}
	if p.AppProtocol != nil {
		s += " (" + *p.AppProtocol + ")"
	}
	return s
}
