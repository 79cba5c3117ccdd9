package bench

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/hollow"
	"github.com/flotilla-io/flotilla/internal/dashboard"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// TestLiveChangesShowOnPages: the benchmark recognises each of its changes on the page the dashboard
// renders, and does not see one that has not happened, so that a change of the pages' markup cannot turn
// the live figures into timeouts or into the time of the first refresh.
func TestLiveChangesShowOnPages(t *testing.T) {
	render := func(taints []corev1.Taint, replicas int32) (fleet, workloads string) {
		cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: liveCluster}, Spec: clusterv1alpha1.ClusterSpec{Taints: taints}}
		binding := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: workv1alpha1.BindingName(schema.GroupKind{Group: "apps", Kind: "Deployment"}, templateName(0))},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment",
				Namespace: benchNamespace, Name: templateName(0)}, Replicas: replicas,
				Clusters: []workv1alpha1.TargetCluster{{Name: liveCluster, Replicas: replicas}, {Name: hollow.ClusterName(1), Replicas: replicas}}}}
		c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(cluster, binding).Build()
		s, err := dashboard.New(dashboard.Direct{Reader: c}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		get := func(path string) string {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Header.Set("X-Dashboard-Partial", "1")
			s.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", path, w.Code, w.Body)
			}
			return w.Body.String()
		}
		fleet, workloads = get(pages["fleet"].path), get(pages["workloads"].path)
		if strings.Count(fleet, pages["fleet"].row) != 1 || strings.Count(workloads, pages["workloads"].row) != 1 {
			t.Fatalf("one cluster and one workload counted as\n%s\n%s", fleet, workloads)
		}
		return fleet, workloads
	}
	liveTaintAt := func(k string) []corev1.Taint {
		return []corev1.Taint{{Key: liveTaint, Value: k, Effect: corev1.TaintEffectNoSchedule}}
	}
	tests := []struct {
		name     string
		change   int
		taints   []corev1.Taint
		replicas int32
		want     bool
	}{
		{"taint shown", 0, liveTaintAt("0"), 1, true},
		{"taint not yet", 0, nil, 1, false},
		{"an earlier taint is not this one", 4, liveTaintAt("0"), 1, false},
		{"scale to 2 shown", 1, nil, 2, true},
		{"scale to 2 not yet", 1, nil, 1, false},
		{"scale to 3 shown", 3, nil, 3, true},
		{"untaint shown", 2, nil, 1, true},
		{"untaint not yet", 2, liveTaintAt("0"), 1, false},
		{"untaint shown beside another taint", 2, []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fleet, workloads := render(tt.taints, tt.replicas)
			change := changeAt(tt.change)
			page := fleet
			if change.page == pages["workloads"].path {
				page = workloads
			}
			if got := change.shown(page); got != tt.want {
				t.Fatalf("change %d (%s) shown = %v, want %v, on\n%s", tt.change, change.kind, got, tt.want, page)
			}
		})
	}
}
