package admission

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	eventratelimitv1alpha1 "k8s.io/kubernetes/plugin/pkg/admission/eventratelimit/apis/eventratelimit/v1alpha1"

	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// Events are rate-limited per namespace by kube-apiserver's EventRateLimit admission plugin. An agent may
// write events only in its cluster's namespace, so this bounds what one agent (or one busy namespace) can
// put into etcd; beyond it the API server answers 429 and event recorders drop the event, which nothing
// depends on.
const (
	eventQPS   = 20
	eventBurst = 500
)

// EventRateLimit enables kube-apiserver's EventRateLimit plugin with the limit per namespace. It needs an
// API server the hub configures: the embedded hub's, and the local member clusters'.
func EventRateLimit() controlplane.AdmissionPlugin {
	return controlplane.AdmissionPlugin{
		Name: "EventRateLimit",
		Configuration: &eventratelimitv1alpha1.Configuration{
			TypeMeta: metav1.TypeMeta{APIVersion: eventratelimitv1alpha1.SchemeGroupVersion.String(), Kind: "Configuration"},
			Limits:   []eventratelimitv1alpha1.Limit{{Type: eventratelimitv1alpha1.NamespaceLimitType, QPS: eventQPS, Burst: eventBurst, CacheSize: 4096}},
		},
	}
}
