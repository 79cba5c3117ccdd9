package quota

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestStatus(t *testing.T) {
	q := &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "quota", Generation: 2},
		Spec: policyv1alpha1.FederatedResourceQuotaSpec{Overall: list("cpu", "2"),
			StaticAssignments: []policyv1alpha1.StaticClusterAssignment{{ClusterName: "m1", Hard: list("cpu", "1")}, {ClusterName: "m2", Hard: list("cpu", "1")}}}}
	binding := workv1alpha1.ResourceBinding{Spec: workv1alpha1.ResourceBindingSpec{Replicas: 2,
		ReplicaRequirements: &workv1alpha1.ReplicaRequirements{ResourceRequest: list("cpu", "500m")},
		Clusters:            []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 2}}}}
	applied := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace("m1")},
		Status: workv1alpha1.WorkStatus{ManifestStatuses: []workv1alpha1.ManifestStatus{{Applied: true,
			Status: &runtime.RawExtension{Raw: []byte(`{"hard":{"cpu":"1"},"used":{"cpu":"250m"}}`)}}}}}

	s := Status(q, []workv1alpha1.ResourceBinding{binding}, []workv1alpha1.Work{applied}, nil)
	if used := s.OverallUsed["cpu"]; used.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("overallUsed cpu %s, want 1", used.String())
	}
	if len(s.AggregatedStatus) != 2 || s.AggregatedStatus[0].ClusterName != "m1" {
		t.Fatalf("aggregatedStatus %+v", s.AggregatedStatus)
	}
	if used := s.AggregatedStatus[0].Used["cpu"]; used.Cmp(resource.MustParse("250m")) != 0 {
		t.Errorf("m1 used cpu %s, want 250m", used.String())
	}
	c := meta.FindStatusCondition(s.Conditions, policyv1alpha1.FederatedResourceQuotaConditionEnforced)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonAssignmentsPending || c.Message != "static assignments not in force: m2 (not applied yet)" {
		t.Errorf("Enforced %+v", c)
	}

	second := applied.DeepCopy()
	second.Namespace = clusterv1alpha1.ClusterNamespace("m2")
	s = Status(q, []workv1alpha1.ResourceBinding{binding}, []workv1alpha1.Work{applied, *second}, nil)
	if c := meta.FindStatusCondition(s.Conditions, policyv1alpha1.FederatedResourceQuotaConditionEnforced); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Enforced %+v, want True", c)
	}

	binding.Spec.Clusters = append(binding.Spec.Clusters, workv1alpha1.TargetCluster{Name: "m2", Replicas: 2}, workv1alpha1.TargetCluster{Name: "m3", Replicas: 2})
	s = Status(q, []workv1alpha1.ResourceBinding{binding}, []workv1alpha1.Work{applied, *second}, []string{"m3"})
	c = meta.FindStatusCondition(s.Conditions, policyv1alpha1.FederatedResourceQuotaConditionEnforced)
	if c == nil || c.Reason != ReasonOverallExceeded || c.Message != "placed templates ask more than spec.overall (cpu 3/2); changes that ask for more are refused" {
		t.Errorf("Enforced %+v, want OverallExceeded", c)
	}
}
