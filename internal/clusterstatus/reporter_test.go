package clusterstatus

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// TestFactsKeepWhatDiscoveryMissed: an incomplete API list keeps the last known entries of the groups it
// lacks; a complete one replaces the list; the health monitor's Ready condition is never part of what the
// reporter applies (it is the monitor's), nor written back by it.
func TestFactsKeepWhatDiscoveryMissed(t *testing.T) {
	gvs := func(names ...string) []clusterv1alpha1.APIEnablement {
		out := make([]clusterv1alpha1.APIEnablement, len(names))
		for i, n := range names {
			out[i] = clusterv1alpha1.APIEnablement{GroupVersion: n}
		}
		return out
	}
	apis := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionAPIsComplete, Status: s, Reason: "R"}}
	}
	ready := []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady}}
	tests := []struct {
		name              string
		current, observed clusterv1alpha1.ClusterStatus
		want              string
		wantComplete      metav1.ConditionStatus
	}{
		{"a failed group keeps its last entry",
			clusterv1alpha1.ClusterStatus{Conditions: ready, APIEnablements: gvs("apps/v1", "metrics.k8s.io/v1beta1", "v1")},
			clusterv1alpha1.ClusterStatus{Conditions: apis(metav1.ConditionFalse), APIEnablements: gvs("apps/v1", "v1")},
			"apps/v1,metrics.k8s.io/v1beta1,v1", metav1.ConditionFalse},
		{"nothing discovered keeps the whole list",
			clusterv1alpha1.ClusterStatus{Conditions: ready, APIEnablements: gvs("apps/v1", "v1")},
			clusterv1alpha1.ClusterStatus{Conditions: apis(metav1.ConditionFalse)},
			"apps/v1,v1", metav1.ConditionFalse},
		{"a complete list replaces the last one",
			clusterv1alpha1.ClusterStatus{Conditions: ready, APIEnablements: gvs("apps/v1", "metrics.k8s.io/v1beta1", "v1")},
			clusterv1alpha1.ClusterStatus{Conditions: apis(metav1.ConditionTrue), APIEnablements: gvs("apps/v1", "example.com/v1")},
			"apps/v1,example.com/v1", metav1.ConditionTrue},
		{"first report, incomplete",
			clusterv1alpha1.ClusterStatus{},
			clusterv1alpha1.ClusterStatus{Conditions: apis(metav1.ConditionFalse), APIEnablements: gvs("v1")},
			"v1", metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := facts(&tt.current, &tt.observed)
			var names []string
			for _, e := range got.APIEnablements {
				names = append(names, e.GroupVersion)
			}
			if strings.Join(names, ",") != tt.want {
				t.Fatalf("apiEnablements %v, want %s", names, tt.want)
			}
			if c := meta.FindStatusCondition(got.Conditions, clusterv1alpha1.ClusterConditionAPIsComplete); c == nil || c.Status != tt.wantComplete {
				t.Fatalf("APIsComplete %+v, want %s", c, tt.wantComplete)
			}
			if c := meta.FindStatusCondition(got.Conditions, clusterv1alpha1.ClusterConditionReady); c != nil {
				t.Fatalf("the reporter would write the health monitor's Ready condition: %+v", got.Conditions)
			}
		})
	}
}

// TestFactsOfAnUnchangedMemberAreNoChange: what the reporter would apply for a member that did not change
// equals what it owns of the current status, whatever the other writers own, so it writes nothing; a changed
// fact or condition is a change. The APIsComplete condition keeps its transition time while its status stays.
func TestFactsOfAnUnchangedMemberAreNoChange(t *testing.T) {
	long := metav1.NewTime(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	complete := metav1.Condition{Type: clusterv1alpha1.ClusterConditionAPIsComplete, Status: metav1.ConditionTrue, Reason: ReasonDiscoveryComplete, Message: "m"}
	current := clusterv1alpha1.ClusterStatus{
		KubernetesVersion: "v1.37.2", Health: &clusterv1alpha1.HealthEndpoints{Livez: "ok", Readyz: "ok"},
		APIEnablements: []clusterv1alpha1.APIEnablement{{GroupVersion: "v1"}},
		Conditions: []metav1.Condition{
			{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, LastTransitionTime: long},
			withTime(complete, long),
			{Type: clusterv1alpha1.ClusterConditionCredentialsValid, Status: metav1.ConditionTrue, Reason: ReasonCredentialsValid, LastTransitionTime: long},
		},
	}
	observed := func(edit func(*clusterv1alpha1.ClusterStatus)) *clusterv1alpha1.ClusterStatus {
		s := &clusterv1alpha1.ClusterStatus{KubernetesVersion: "v1.37.2", Health: &clusterv1alpha1.HealthEndpoints{Livez: "ok", Readyz: "ok"},
			APIEnablements: []clusterv1alpha1.APIEnablement{{GroupVersion: "v1"}}, Conditions: []metav1.Condition{withTime(complete, metav1.Now())}}
		edit(s)
		return s
	}
	tests := []struct {
		name     string
		observed *clusterv1alpha1.ClusterStatus
		change   bool
	}{
		{"nothing changed", observed(func(*clusterv1alpha1.ClusterStatus) {}), false},
		{"readyz fails", observed(func(s *clusterv1alpha1.ClusterStatus) { s.Health.Readyz = "[-]etcd failed" }), true},
		{"new version", observed(func(s *clusterv1alpha1.ClusterStatus) { s.KubernetesVersion = "v1.37.3" }), true},
		{"discovery partial", observed(func(s *clusterv1alpha1.ClusterStatus) {
			s.Conditions[0].Status, s.Conditions[0].Reason = metav1.ConditionFalse, ReasonDiscoveryPartial
		}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := facts(&current, tt.observed)
			if change := !equality.Semantic.DeepEqual(reportedFacts(&current), want); change != tt.change {
				t.Fatalf("change %v, want %v:\nowned %+v\nwant  %+v", change, tt.change, reportedFacts(&current), want)
			}
			for _, c := range want.Conditions {
				if c.Type != clusterv1alpha1.ClusterConditionAPIsComplete {
					t.Fatalf("the reporter would apply another writer's condition %s", c.Type)
				}
				if c.Status == metav1.ConditionTrue && !c.LastTransitionTime.Equal(&long) {
					t.Fatalf("APIsComplete moved its transition time although its status stayed: %s", c.LastTransitionTime)
				}
			}
		})
	}
}

func withTime(c metav1.Condition, at metav1.Time) metav1.Condition {
	c.LastTransitionTime = at
	return c
}
