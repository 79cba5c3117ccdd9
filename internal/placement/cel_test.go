package placement

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// cpuAtLeast8 reads the allocatable CPU the Cluster's status reports.
const cpuAtLeast8 = `quantity(cluster.status.resourceSummary.allocatable.cpu).compareTo(quantity("8")) >= 0`

func withExpressions(predicates ...[]string) *clusterv1alpha1.Placement {
	p := &clusterv1alpha1.Placement{}
	for _, e := range predicates {
		p.Spec.Predicates = append(p.Spec.Predicates, clusterv1alpha1.ClusterPredicate{
			RequiredClusterSelector: clusterv1alpha1.ClusterSelector{CelSelector: clusterv1alpha1.CelSelector{CelExpressions: e}}})
	}
	return p
}

// TestDecideByExpressions: expressions of a predicate are ANDed, over labels and over status; predicates are
// ORed; a predicate's label selector must match too.
func TestDecideByExpressions(t *testing.T) {
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("a")}, Clusters: []clusterv1alpha1.Cluster{
		cluster("small-prod", "a", "2", map[string]string{"env": "prod"}),
		cluster("big-prod", "a", "16", map[string]string{"env": "prod"}),
		cluster("big-dev", "a", "16", map[string]string{"env": "dev"}),
		cluster("tiny-edge", "a", "1", map[string]string{"env": "edge"}),
	}}
	for _, tc := range []struct {
		name string
		p    *clusterv1alpha1.Placement
		want []string
	}{
		{"a label", withExpressions([]string{`cluster.metadata.labels["env"] == "prod"`}), []string{"big-prod", "small-prod"}},
		{"status", withExpressions([]string{cpuAtLeast8}), []string{"big-dev", "big-prod"}},
		{"both, ANDed", withExpressions([]string{`cluster.metadata.labels["env"] == "prod"`, cpuAtLeast8}), []string{"big-prod"}},
		{"two predicates, ORed", withExpressions([]string{cpuAtLeast8}, []string{`cluster.metadata.labels.env.startsWith("ed")`}),
			[]string{"big-dev", "big-prod", "tiny-edge"}},
		{"false everywhere", withExpressions([]string{`cluster.metadata.name == "nowhere"`}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Decide(tc.p, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(slices.Values(r.Selected)); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if len(r.Failed) != 0 {
				t.Fatalf("failures %v", r.Failed)
			}
		})
	}
	// A label selector and expressions in one predicate: both must match.
	p := withExpressions([]string{cpuAtLeast8})
	p.Spec.Predicates[0].RequiredClusterSelector.LabelSelector = metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
	if r, _ := Decide(p, in); !slices.Equal(r.Selected, []string{"big-dev"}) {
		t.Fatalf("labels and expressions: got %v, want [big-dev]", r.Selected)
	}
}

// TestExpressionFailureSelectsNothing: an expression that fails on a Cluster (a field it does not have) does
// not select it and says why; a Cluster another predicate selects is selected all the same.
func TestExpressionFailureSelectsNothing(t *testing.T) {
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("a")}, Clusters: []clusterv1alpha1.Cluster{
		cluster("reports", "a", "16", map[string]string{"env": "prod"}),
		cluster("silent", "a", "", map[string]string{"env": "prod"}),
		cluster("silent-dev", "a", "", map[string]string{"env": "dev"}),
	}}
	p := withExpressions([]string{cpuAtLeast8}, []string{`cluster.metadata.labels.env == "dev"`})
	r, err := Decide(p, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(r.Selected)); !slices.Equal(got, []string{"reports", "silent-dev"}) {
		t.Fatalf("got %v, want [reports silent-dev]", got)
	}
	why := r.Failed["silent"]
	if len(r.Failed) != 1 || !strings.Contains(why, "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0] failed") ||
		!strings.Contains(why, "no such key: resourceSummary") {
		t.Fatalf("failures %v", r.Failed)
	}
}

// TestExpressionCostLimit: an expression that costs more than CostLimit on a Cluster stops there and does not
// select it; the same shape within the limit does.
func TestExpressionCostLimit(t *testing.T) {
	ten := "[0,1,2,3,4,5,6,7,8,9]"
	nested := func(depth int) string {
		e := "true"
		for i := depth; i > 0; i-- {
			e = fmt.Sprintf("%s.all(x%d, %s)", ten, i, e)
		}
		return e
	}
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("a")}, Clusters: []clusterv1alpha1.Cluster{cluster("c", "a", "", nil)}}
	if r, err := Decide(withExpressions([]string{nested(2)}), in); err != nil || !slices.Equal(r.Selected, []string{"c"}) {
		t.Fatalf("100 steps: got %v, %v", r.Selected, err)
	}
	r, err := Decide(withExpressions([]string{nested(5)}), in)
	if err != nil || len(r.Selected) != 0 || !strings.Contains(r.Failed["c"], "cost limit exceeded") {
		t.Fatalf("100,000 steps: got %v, failures %v, %v", r.Selected, r.Failed, err)
	}
}

// TestDecideRefusesAnExpressionThatDoesNotCompile: a Placement written before admission checked it is a
// misconfiguration naming the expression.
func TestDecideRefusesAnExpressionThatDoesNotCompile(t *testing.T) {
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("a")}, Clusters: []clusterv1alpha1.Cluster{cluster("c", "a", "", nil)}}
	_, err := Decide(withExpressions([]string{"true"}, []string{"true", "cluster.metadata.name =="}), in)
	if err == nil || !strings.Contains(err.Error(), "spec.predicates[1].requiredClusterSelector.celSelector.celExpressions[1]: ERROR: <input>:1:") {
		t.Fatalf("got %v", err)
	}
}
