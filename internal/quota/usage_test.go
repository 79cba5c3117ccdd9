package quota

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func TestDemand(t *testing.T) {
	got := Demand(3, list("cpu", "500m", "memory", "1Gi"))
	for name, want := range list("cpu", "1500m", "memory", "3Gi", "pods", "3") {
		if q := got[name]; q.Cmp(want) != 0 {
			t.Errorf("%s: %s, want %s", name, q.String(), want.String())
		}
	}
	if q := Demand(0, list("cpu", "1"))[corev1.ResourceCPU]; !q.IsZero() {
		t.Errorf("0 replicas ask %s cpu", q.String())
	}
}

func TestBindingDemandCountsEveryCopy(t *testing.T) {
	duplicated := &workv1alpha1.ResourceBindingSpec{Replicas: 2,
		ReplicaRequirements: &workv1alpha1.ReplicaRequirements{ResourceRequest: list("cpu", "1")},
		Clusters:            []workv1alpha1.TargetCluster{{Name: "a", Replicas: 2}, {Name: "b", Replicas: 2}, {Name: "c", Replicas: 2}}}
	divided := duplicated.DeepCopy()
	divided.Placement = &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided}}
	unplaced := duplicated.DeepCopy()
	unplaced.Clusters = nil
	for name, tc := range map[string]struct {
		spec *workv1alpha1.ResourceBindingSpec
		cpu  string
	}{"duplicated on three clusters": {duplicated, "6"}, "divided": {divided, "2"}, "not placed yet": {unplaced, "2"},
		"no requirements": {&workv1alpha1.ResourceBindingSpec{Replicas: 4}, "0"}} {
		if q := BindingDemand(tc.spec)[corev1.ResourceCPU]; q.Cmp(resource.MustParse(tc.cpu)) != 0 {
			t.Errorf("%s: cpu %s, want %s", name, q.String(), tc.cpu)
		}
	}
}

func TestCounted(t *testing.T) {
	demand := list("cpu", "2", "memory", "1Gi", "pods", "2", "nvidia.com/gpu", "1")
	for name, want := range map[string]string{"cpu": "2", "requests.cpu": "2", "requests.memory": "1Gi", "pods": "2",
		"nvidia.com/gpu": "1", "requests.nvidia.com/gpu": "1", "ephemeral-storage": "0"} {
		q, ok := Counted(demand, corev1.ResourceName(name))
		if !ok || q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s: %s %v, want %s", name, q.String(), ok, want)
		}
	}
	for _, name := range []string{"limits.cpu", "count/deployments.apps", "requests.storage", "persistentvolumeclaims", "gold.storageclass.storage.k8s.io/requests.storage"} {
		if _, ok := Counted(demand, corev1.ResourceName(name)); ok {
			t.Errorf("%s is counted", name)
		}
	}
}

func TestExceeds(t *testing.T) {
	overall := list("cpu", "2", "memory", "4Gi", "limits.cpu", "1")
	for name, tc := range map[string]struct {
		others, before, after corev1.ResourceList
		want                  string
	}{
		"a create within the cap":        {list(), list(), Demand(2, list("cpu", "1")), ""},
		"a create over it":               {list(), list(), Demand(3, list("cpu", "1")), "cpu: requested 3, used 0, overall 2 (2 left)"},
		"over with others":               {list("cpu", "1500m"), list(), Demand(1, list("cpu", "1")), "cpu: requested 1, used 1500m, overall 2 (500m left)"},
		"others over the cap already":    {list("cpu", "3"), list(), Demand(1, list("cpu", "1")), "cpu: requested 1, used 3, overall 2 (0 left)"},
		"a scale up over it":             {list(), Demand(2, list("cpu", "1")), Demand(3, list("cpu", "1")), "cpu: requested 3, used 0, overall 2 (2 left)"},
		"a scale down while over":        {list("cpu", "5"), Demand(3, list("cpu", "1")), Demand(2, list("cpu", "1")), ""},
		"an unchanged update while over": {list("cpu", "5"), Demand(2, list("cpu", "1")), Demand(2, list("cpu", "1")), ""},
		"two resources over": {list(), list(), Demand(3, list("cpu", "1", "memory", "2Gi")),
			"cpu: requested 3, used 0, overall 2 (2 left); memory: requested 6Gi, used 0, overall 4Gi (4Gi left)"},
		"limits are not counted": {list(), list(), Demand(1, list("limits.cpu", "5")), ""},
	} {
		var parts []string
		for _, e := range Exceeds(overall, tc.others, tc.before, tc.after) {
			parts = append(parts, e.String())
		}
		if got := strings.Join(parts, "; "); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, tc.want)
		}
	}
}

func TestUsedReadsDemandByTheQuotaNames(t *testing.T) {
	used := Used(list("requests.cpu", "4", "pods", "10", "limits.memory", "1Gi"), Demand(3, list("cpu", "1")))
	if q := used["requests.cpu"]; q.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("requests.cpu %s, want 3", q.String())
	}
	if q := used["pods"]; q.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("pods %s, want 3", q.String())
	}
	if _, ok := used["limits.memory"]; ok {
		t.Error("limits.memory is reported as used")
	}
}

func TestValidateSpec(t *testing.T) {
	for name, tc := range map[string]struct {
		spec policyv1alpha1.FederatedResourceQuotaSpec
		want string
	}{
		"within": {policyv1alpha1.FederatedResourceQuotaSpec{Overall: list("cpu", "2"),
			StaticAssignments: []policyv1alpha1.StaticClusterAssignment{{ClusterName: "m1", Hard: list("cpu", "2", "pods", "9")}}}, ""},
		"hard over overall": {policyv1alpha1.FederatedResourceQuotaSpec{Overall: list("cpu", "2"),
			StaticAssignments: []policyv1alpha1.StaticClusterAssignment{{ClusterName: "m1", Hard: list("cpu", "3")}}},
			`spec.staticAssignments[0].hard[cpu]: Invalid value: "3": cluster m1 may not have more cpu than the overall 2`},
		"negative overall": {policyv1alpha1.FederatedResourceQuotaSpec{Overall: list("cpu", "-1")},
			`spec.overall[cpu]: Invalid value: "-1": a quota is never negative`},
	} {
		got := ValidateSpec(&tc.spec).ToAggregate()
		if (got == nil) != (tc.want == "") || (got != nil && got.Error() != tc.want) {
			t.Errorf("%s: %v, want %q", name, got, tc.want)
		}
	}
}
