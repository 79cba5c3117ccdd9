package mirror

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestWorkSpec: a ManifestWork as the spec of its Work: the manifests; each manifest config's update strategy
// (OCM's default Update when the type is left out, server-side apply's force and field manager as Flotilla's)
// and feedback rules; the deleteOption (Foreground is Flotilla's default Delete); adoption of what exists, as
// OCM's agent does. A field manager OCM would refuse is refused.
func TestWorkSpec(t *testing.T) {
	doc := `apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: app, namespace: cluster1}
spec:
  workload:
    manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns}}]
  deleteOption:
    propagationPolicy: SelectivelyOrphan
    selectivelyOrphans: {orphaningRules: [{group: "", resource: configmaps, namespace: ns, name: a}]}
  manifestConfigs:
    - resourceIdentifier: {resource: configmaps, namespace: ns, name: a}
      updateStrategy: {}
    - resourceIdentifier: {group: apps, resource: deployments, namespace: ns, name: web}
      updateStrategy: {type: ServerSideApply, serverSideApply: {force: false, fieldManager: work-agent-ocm}}
      feedbackRules: [{type: WellKnownStatus}, {type: JSONPaths, jsonPaths: [{name: desired, path: .spec.replicas}]}]
    - resourceIdentifier: {resource: configmaps, namespace: ns, name: b}
      updateStrategy: {type: ServerSideApply, serverSideApply: {force: true, fieldManager: work-agent}}
`
	got, err := ManifestWork.Spec(context.Background(), nil, peerObject(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	want := `conflictResolution: Overwrite
workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns}}]}
deleteOption: {propagationPolicy: SelectivelyOrphan, orphaningRules: [{resource: configmaps, namespace: ns, name: a}]}
manifestConfigs:
  - resourceIdentifier: {resource: configmaps, namespace: ns, name: a}
    updateStrategy: {type: Update}
  - resourceIdentifier: {group: apps, resource: deployments, namespace: ns, name: web}
    updateStrategy: {type: ServerSideApply, serverSideApply: {force: false, fieldManager: flotilla-ocm}}
    feedbackRules: [{type: WellKnownStatus}, {type: JSONPaths, jsonPaths: [{name: desired, path: .spec.replicas}]}]
  - resourceIdentifier: {resource: configmaps, namespace: ns, name: b}
    updateStrategy: {type: ServerSideApply, serverSideApply: {force: true}}
`
	var w map[string]any
	if err := yaml.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, w) {
		g, _ := yaml.Marshal(got)
		t.Errorf("got\n%s\nwant\n%s", g, want)
	}

	for policy, want := range map[string]*workv1alpha1.DeleteOption{
		"Foreground": nil, "Orphan": {PropagationPolicy: workv1alpha1.DeletePropagationOrphan},
	} {
		spec, err := workSpec(context.Background(), nil, &ocmworkv1.ManifestWork{Spec: ocmworkv1.ManifestWorkSpec{
			DeleteOption: &ocmworkv1.DeleteOption{PropagationPolicy: ocmworkv1.DeletePropagationPolicyType(policy)}}})
		if err != nil || !equality.Semantic.DeepEqual(spec.DeleteOption, want) {
			t.Errorf("%s: got %+v (%v), want %+v", policy, spec.DeleteOption, err, want)
		}
	}

	_, err = workSpec(context.Background(), nil, &ocmworkv1.ManifestWork{Spec: ocmworkv1.ManifestWorkSpec{ManifestConfigs: []ocmworkv1.ManifestConfigOption{{
		UpdateStrategy: &ocmworkv1.UpdateStrategy{Type: "ServerSideApply", ServerSideApply: &ocmworkv1.ServerSideApplyConfig{FieldManager: "kubectl"}}}}}})
	if err == nil || !strings.Contains(err.Error(), "does not start with work-agent") {
		t.Errorf("a field manager OCM refuses: %v", err)
	}
}

func peerObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestManifestWorkStatus: a Work's status in OCM's words: Applied and Available copied without the Work's
// generation, Degraded from the objects' health, and per manifest its object, feedback and conditions.
func TestManifestWorkStatus(t *testing.T) {
	applied := metav1.Condition{Type: "Applied", Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: 4}
	available := metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "NotHealthy", ObservedGeneration: 4}
	synced := metav1.Condition{Type: workv1alpha1.ManifestConditionFeedbackSynced, Status: metav1.ConditionTrue, Reason: "Synced"}
	feedback := []workv1alpha1.FeedbackValue{{Name: "ReadyReplicas", Value: workv1alpha1.FieldValue{Type: workv1alpha1.FeedbackInteger, Integer: ptr.To[int64](1)}}}
	in := &workv1alpha1.WorkStatus{Conditions: []metav1.Condition{applied, available}, ManifestStatuses: []workv1alpha1.ManifestStatus{
		{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 0, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "ns", Name: "a"},
			Applied: true, Health: workv1alpha1.ResourceHealthy, Conditions: []metav1.Condition{{Type: "Applied", Status: metav1.ConditionTrue, Reason: "Applied"}}},
		{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 1, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "ns", Name: "web"},
			Applied: true, Health: workv1alpha1.ResourceUnhealthy, Feedback: feedback,
			Conditions: []metav1.Condition{{Type: "Applied", Status: metav1.ConditionTrue, Reason: "Applied"}, synced}},
	}}
	appliedOut, availableOut := applied, available
	appliedOut.ObservedGeneration, availableOut.ObservedGeneration = 0, 0
	want := &ocmworkv1.ManifestWorkStatus{
		Conditions: []metav1.Condition{appliedOut, availableOut,
			{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "Unhealthy", Message: "unhealthy: Deployment web"}},
		ResourceStatus: ocmworkv1.ManifestResourceStatus{Manifests: []ocmworkv1.ManifestCondition{
			{ResourceMeta: ocmworkv1.ManifestResourceMeta{Ordinal: 0, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "ns", Name: "a"},
				Conditions: []metav1.Condition{{Type: "Applied", Status: metav1.ConditionTrue, Reason: "Applied"},
					{Type: "Available", Status: metav1.ConditionTrue, Reason: "Healthy", Message: "the object's health in the cluster"}}},
			{ResourceMeta: ocmworkv1.ManifestResourceMeta{Ordinal: 1, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "ns", Name: "web"},
				StatusFeedbacks: ocmworkv1.StatusFeedbackResult{Values: feedback},
				Conditions: []metav1.Condition{{Type: "Applied", Status: metav1.ConditionTrue, Reason: "Applied"},
					{Type: "Available", Status: metav1.ConditionFalse, Reason: "Unhealthy", Message: "the object's health in the cluster"}, synced}},
		}},
	}
	if got := manifestWorkStatus(in); !equality.Semantic.DeepEqual(got, want) {
		g, _ := yaml.Marshal(got)
		w, _ := yaml.Marshal(want)
		t.Errorf("got\n%s\nwant\n%s", g, w)
	}
}

// TestManifestWorksOwner: the work sweeper finds a ManifestWork's Work by its namespace label, and the
// ManifestWork claims only the Work marked as its twin.
func TestManifestWorksOwner(t *testing.T) {
	owner := ManifestWorks{}.New()
	owner.SetNamespace("cluster1")
	owner.SetName("app")
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-cluster-cluster1", Name: "app",
		Labels:      ManifestWorks{}.Labels(owner),
		Annotations: map[string]string{AnnotationPeer: "work.open-cluster-management.io/ManifestWork/cluster1/app"}}}
	if key, ok := (ManifestWorks{}).Of(w); !ok || key.Namespace != "cluster1" || key.Name != "app" {
		t.Errorf("Of: %v %v", key, ok)
	}
	if !(ManifestWorks{}).Owns(owner, w) {
		t.Error("the ManifestWork does not claim its twin")
	}
	w.Annotations[AnnotationPeer] = "work.open-cluster-management.io/ManifestWork/cluster2/app"
	if (ManifestWorks{}).Owns(owner, w) {
		t.Error("the ManifestWork claims another's twin")
	}
}
