package mirror

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	ocmworkv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/work/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

func manifest(raw string) workv1alpha1.Manifest {
	return workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(raw)}}
}

func TestSameManifests(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []workv1alpha1.Manifest
		want bool
	}{
		{"key order and spacing", []workv1alpha1.Manifest{manifest(`{"kind":"ConfigMap","data":{"a":"1"}}`)},
			[]workv1alpha1.Manifest{manifest(`{ "data": {"a": "1"}, "kind": "ConfigMap" }`)}, true},
		{"a value differs", []workv1alpha1.Manifest{manifest(`{"data":{"a":"1"}}`)}, []workv1alpha1.Manifest{manifest(`{"data":{"a":"2"}}`)}, false},
		{"one more", []workv1alpha1.Manifest{manifest(`{}`)}, []workv1alpha1.Manifest{manifest(`{}`), manifest(`{}`)}, false},
		{"not JSON", []workv1alpha1.Manifest{manifest(`{`)}, []workv1alpha1.Manifest{manifest(`{`)}, false},
	} {
		if got := sameManifests(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func manifestWork(conditions ...string) *ocmworkv1.ManifestWork {
	mw := &ocmworkv1.ManifestWork{}
	for _, c := range conditions {
		meta.SetStatusCondition(&mw.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "R"})
	}
	return mw
}

func TestSummarize(t *testing.T) {
	got := summarize([]*ocmworkv1.ManifestWork{
		manifestWork("Applied", "Available"),
		manifestWork("Applied"),
		manifestWork("Applied", "Degraded"),
		manifestWork(),
	})
	want := ocmworkv1alpha1.ManifestWorkReplicaSetSummary{Total: 4, Applied: 3, Available: 1, Degraded: 1, Progressing: 1}
	if got != want {
		t.Errorf("summary %+v, want %+v", got, want)
	}
}

// TestReplicaSetConditions: what each condition says of placements that are missing, empty, rolling or done,
// and of ManifestWorks partly applied.
func TestReplicaSetConditions(t *testing.T) {
	settled := func(clusters ...string) *replicaPlacement {
		return &replicaPlacement{ref: ocmworkv1alpha1.LocalPlacementReference{Name: "p"}, clusters: clusters,
			Placed: &rollout.Placed{Settled: true, Groups: []rollout.Group{{Name: "0", Clusters: clusters}}}}
	}
	for _, tc := range []struct {
		name       string
		placement  *replicaPlacement
		works      map[string]*ocmworkv1.ManifestWork
		complete   bool
		want       map[string]string // condition type -> reason
		wantStatus map[string]metav1.ConditionStatus
	}{
		{name: "missing placement", placement: &replicaPlacement{ref: ocmworkv1alpha1.LocalPlacementReference{Name: "p"},
			Placed: &rollout.Placed{Why: "Placement ns/p does not exist"}}, complete: true,
			want: map[string]string{ocmworkv1alpha1.ConditionPlacementVerified: "PlacementDecisionNotFound", ocmworkv1alpha1.ConditionManifestworkApplied: "NotAsExpected"}},
		{name: "empty decision", placement: settled(), complete: true,
			want: map[string]string{ocmworkv1alpha1.ConditionPlacementVerified: "PlacementDecisionEmpty"}},
		{name: "rolling, half applied", placement: settled("a", "b"),
			works: map[string]*ocmworkv1.ManifestWork{"a": manifestWork("Applied"), "b": manifestWork()},
			want: map[string]string{ocmworkv1alpha1.ConditionPlacementVerified: "AsExpected", ocmworkv1alpha1.ConditionPlacementRolledOut: "Progressing",
				ocmworkv1alpha1.ConditionManifestworkApplied: "Processing"}},
		{name: "done", placement: settled("a", "b"), complete: true,
			works: map[string]*ocmworkv1.ManifestWork{"a": manifestWork("Applied", "Available"), "b": manifestWork("Applied", "Available")},
			want: map[string]string{ocmworkv1alpha1.ConditionPlacementVerified: "AsExpected", ocmworkv1alpha1.ConditionPlacementRolledOut: "Complete",
				ocmworkv1alpha1.ConditionManifestworkApplied: "AsExpected"},
			wantStatus: map[string]metav1.ConditionStatus{ocmworkv1alpha1.ConditionPlacementVerified: metav1.ConditionTrue,
				ocmworkv1alpha1.ConditionPlacementRolledOut: metav1.ConditionTrue, ocmworkv1alpha1.ConditionManifestworkApplied: metav1.ConditionTrue}},
	} {
		rs := &ocmworkv1alpha1.ManifestWorkReplicaSet{}
		d := replicaDecision{complete: map[string]bool{"p": tc.complete}}
		st := replicaSetStatus(rs, []*replicaPlacement{tc.placement}, tc.works, d, "")
		for typ, reason := range tc.want {
			c := meta.FindStatusCondition(st.Conditions, typ)
			if c == nil || c.Reason != reason {
				t.Errorf("%s: condition %s %+v, want reason %s", tc.name, typ, c, reason)
				continue
			}
			if want, ok := tc.wantStatus[typ]; ok && c.Status != want {
				t.Errorf("%s: condition %s is %s, want %s", tc.name, typ, c.Status, want)
			}
		}
		if len(st.PlacementsSummary) != 1 || st.PlacementsSummary[0].Summary.Total != len(tc.works) {
			t.Errorf("%s: placement summary %+v", tc.name, st.PlacementsSummary)
		}
	}
}
