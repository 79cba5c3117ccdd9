package placement

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func cluster(name, set, cpu string, extra map[string]string, taints ...corev1.Taint) clusterv1alpha1.Cluster {
	l := map[string]string{clusterv1alpha1.LabelClusterSet: set}
	for k, v := range extra {
		l[k] = v
	}
	c := clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	c.Spec.Taints = taints
	if cpu != "" {
		c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	return c
}

func set(name string) clusterv1alpha1.ClusterSet {
	return clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func byCPU(n int32) *clusterv1alpha1.Placement {
	p := &clusterv1alpha1.Placement{}
	p.Spec.NumberOfClusters = ptr.To(n)
	p.Spec.PrioritizerPolicy.Configurations = []clusterv1alpha1.PrioritizerConfig{{
		ScoreCoordinate: clusterv1alpha1.ScoreCoordinate{Type: "BuiltIn", BuiltIn: clusterv1alpha1.ScoreResourceAllocatableCPU}, Weight: 1}}
	return p
}

// TestDecidePicksRoomiestOfBoundSets: numberOfClusters 2 with ResourceAllocatableCPU takes the two Clusters
// with the most CPU, among those of the bound sets only; spec.clusterSets narrows further.
func TestDecidePicksRoomiestOfBoundSets(t *testing.T) {
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("a"), set("b")}, Clusters: []clusterv1alpha1.Cluster{
		cluster("small", "a", "2", nil), cluster("big", "a", "16", nil), cluster("mid", "b", "8", nil),
		cluster("huge-unbound", "c", "64", nil),
	}}
	r, err := Decide(byCPU(2), in)
	if err != nil || !slices.Equal(r.Selected, []string{"big", "mid"}) {
		t.Fatalf("got %v, %v; want [big mid]", r.Selected, err)
	}
	p := byCPU(2)
	p.Spec.ClusterSets = []string{"a", "c"}
	if r, _ := Decide(p, in); !slices.Equal(r.Selected, []string{"big", "small"}) {
		t.Fatalf("clusterSets [a c] with a and b bound: got %v, want [big small]", r.Selected)
	}
}

// TestDecideFiltersPredicatesAndTaints: a predicate keeps only the Clusters it selects; an untolerated
// NoSchedule taint excludes a Cluster, a tolerated one or a PreferNoSchedule one does not.
func TestDecideFiltersPredicatesAndTaints(t *testing.T) {
	gpu := corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}
	soft := corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("a")}, Clusters: []clusterv1alpha1.Cluster{
		cluster("eu1", "a", "", map[string]string{"region": "eu"}),
		cluster("eu2", "a", "", map[string]string{"region": "eu"}, gpu),
		cluster("eu3", "a", "", map[string]string{"region": "eu"}, soft),
		cluster("us1", "a", "", map[string]string{"region": "us"}),
	}}
	p := &clusterv1alpha1.Placement{}
	p.Spec.Predicates = []clusterv1alpha1.ClusterPredicate{{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{
		LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}}}
	if r, _ := Decide(p, in); !slices.Equal(r.Selected, []string{"eu1", "eu3"}) {
		t.Fatalf("got %v, want [eu1 eu3]", r.Selected)
	}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	if r, _ := Decide(p, in); !slices.Equal(r.Selected, []string{"eu1", "eu2", "eu3"}) {
		t.Fatalf("tolerating gpu: got %v, want [eu1 eu2 eu3]", r.Selected)
	}
}

// TestSteadyKeepsDecisions: in Additive mode a Cluster decided before keeps its place when another
// Cluster becomes a little roomier, and loses it when the other is far roomier.
func TestSteadyKeepsDecisions(t *testing.T) {
	sets := []clusterv1alpha1.ClusterSet{set("a")}
	decided := map[string]bool{"one": true}
	p := byCPU(1)
	p.Spec.PrioritizerPolicy.Configurations[0].Weight = 1
	// Three clusters so that normalisation spreads: one (decided) 10, two 11, three 1.
	in := Input{Sets: sets, Decided: decided, Clusters: []clusterv1alpha1.Cluster{
		cluster("one", "a", "10", nil), cluster("two", "a", "11", nil), cluster("three", "a", "1", nil)}}
	if r, _ := Decide(p, in); !slices.Equal(r.Selected, []string{"one"}) {
		t.Fatalf("a slightly roomier cluster moved the decision: got %v", r.Selected)
	}
	p.Spec.PrioritizerPolicy.Mode = clusterv1alpha1.PrioritizerPolicyExact
	if r, _ := Decide(p, in); !slices.Equal(r.Selected, []string{"two"}) {
		t.Fatalf("Exact without Steady: got %v, want [two]", r.Selected)
	}
}

// TestBalancePrefersLessDecided: with Balance alone the Cluster fewer other Placements decided wins, ties by
// name.
func TestBalancePrefersLessDecided(t *testing.T) {
	p := &clusterv1alpha1.Placement{}
	p.Spec.NumberOfClusters = ptr.To(int32(1))
	p.Spec.PrioritizerPolicy = clusterv1alpha1.PrioritizerPolicy{Mode: clusterv1alpha1.PrioritizerPolicyExact,
		Configurations: []clusterv1alpha1.PrioritizerConfig{{ScoreCoordinate: clusterv1alpha1.ScoreCoordinate{BuiltIn: clusterv1alpha1.ScoreBalance}, Weight: 1}}}
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("a")}, Decisions: map[string]int{"a1": 3, "a2": 1},
		Clusters: []clusterv1alpha1.Cluster{cluster("a1", "a", "", nil), cluster("a2", "a", "", nil), cluster("a3", "a", "", nil)}}
	if r, _ := Decide(p, in); !slices.Equal(r.Selected, []string{"a3"}) {
		t.Fatalf("got %v, want [a3]", r.Selected)
	}
}

// TestGroups: named groups take their Clusters first, in order; the rest fall into groups of
// clustersPerDecisionGroup; nothing picked still gives one empty group.
func TestGroups(t *testing.T) {
	var picked []*clusterv1alpha1.Cluster
	for _, n := range []string{"c1", "c2", "c3", "c4", "c5"} {
		env := "prod"
		if n == "c2" || n == "c4" {
			env = "canary"
		}
		c := cluster(n, "a", "", map[string]string{"env": env})
		picked = append(picked, &c)
	}
	gs := clusterv1alpha1.GroupStrategy{
		DecisionGroups: []clusterv1alpha1.DecisionGroup{{GroupName: "canary", GroupClusterSelector: clusterv1alpha1.GroupClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "canary"}}}}},
		ClustersPerDecisionGroup: ptr.To(intstr.FromString("40%")),
	}
	groups, err := Groups(gs, picked)
	want := []Group{{Name: "canary", Clusters: []string{"c2", "c4"}}, {Clusters: []string{"c1", "c3"}}, {Clusters: []string{"c5"}}}
	if err != nil || !slices.EqualFunc(groups, want, func(a, b Group) bool { return a.Name == b.Name && slices.Equal(a.Clusters, b.Clusters) }) {
		t.Fatalf("got %v, %v; want %v", groups, err, want)
	}
	if groups, _ := Groups(clusterv1alpha1.GroupStrategy{}, nil); len(groups) != 1 || len(groups[0].Clusters) != 0 {
		t.Fatalf("nothing picked: got %v, want one empty group", groups)
	}
}

// TestObjectsSplitAt100: a group of 250 Clusters is held by three PlacementDecisions, named from 1, labelled
// with the placement and group.
func TestObjectsSplitAt100(t *testing.T) {
	p := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"}}
	g := Group{Name: "all"}
	for i := range 250 {
		g.Clusters = append(g.Clusters, "c"+strings.Repeat("x", i%3)+string(rune('a'+i%26)))
	}
	objects, status := Objects(p, Result{Groups: []Group{g}})
	if len(objects) != 3 || len(objects[2].Status.Decisions) != 50 || objects[2].Name != "web-decision-3" ||
		objects[0].Labels[clusterv1alpha1.LabelPlacement] != "web" || objects[0].Labels[clusterv1alpha1.LabelDecisionGroupName] != "all" {
		t.Fatalf("got %d objects, last %s with %d", len(objects), objects[len(objects)-1].Name, len(objects[len(objects)-1].Status.Decisions))
	}
	if status[0].ClusterCount != 250 || !slices.Equal(status[0].Decisions, []string{"web-decision-1", "web-decision-2", "web-decision-3"}) {
		t.Fatalf("group status %+v", status[0])
	}
}

// TestValidateSpec: each bad input is refused with its field named.
func TestValidateSpec(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*clusterv1alpha1.PlacementSpec)
		field string
	}{
		{"percent without digits", func(s *clusterv1alpha1.PlacementSpec) {
			s.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = ptr.To(intstr.FromString("abc"))
		}, "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"},
		{"zero as a string", func(s *clusterv1alpha1.PlacementSpec) {
			s.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = ptr.To(intstr.FromString("0"))
		}, "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"},
		{"zero percent", func(s *clusterv1alpha1.PlacementSpec) {
			s.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = ptr.To(intstr.FromString("0%"))
		}, "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"},
		{"zero count", func(s *clusterv1alpha1.PlacementSpec) {
			s.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = ptr.To(intstr.FromInt32(0))
		}, "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"},
		{"negative count", func(s *clusterv1alpha1.PlacementSpec) { s.NumberOfClusters = ptr.To(int32(-1)) }, "spec.numberOfClusters"},
		{"unknown score", func(s *clusterv1alpha1.PlacementSpec) {
			s.PrioritizerPolicy.Configurations = []clusterv1alpha1.PrioritizerConfig{{ScoreCoordinate: clusterv1alpha1.ScoreCoordinate{BuiltIn: "Cheapest"}}}
		}, "spec.prioritizerPolicy.configurations"},
		{"duplicate group", func(s *clusterv1alpha1.PlacementSpec) {
			s.DecisionStrategy.GroupStrategy.DecisionGroups = []clusterv1alpha1.DecisionGroup{{GroupName: "a"}, {GroupName: "a"}}
		}, "spec.decisionStrategy.groupStrategy.decisionGroups[1].groupName"},
		{"expression that does not parse", func(s *clusterv1alpha1.PlacementSpec) {
			s.Predicates = []clusterv1alpha1.ClusterPredicate{{}, {RequiredClusterSelector: clusterv1alpha1.ClusterSelector{
				CelSelector: clusterv1alpha1.CelSelector{CelExpressions: []string{"true", "cluster.metadata.name =="}}}}}
		}, "spec.predicates[1].requiredClusterSelector.celSelector.celExpressions[1]"},
		{"expression of an unknown variable", func(s *clusterv1alpha1.PlacementSpec) {
			s.Predicates = []clusterv1alpha1.ClusterPredicate{{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{
				CelSelector: clusterv1alpha1.CelSelector{CelExpressions: []string{"object.metadata.name == 'a'"}}}}}
		}, "undeclared reference to 'object'"},
		{"expression that is not a bool", func(s *clusterv1alpha1.PlacementSpec) {
			s.Predicates = []clusterv1alpha1.ClusterPredicate{{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{
				CelSelector: clusterv1alpha1.CelSelector{CelExpressions: []string{"size(cluster.metadata.name)"}}}}}
		}, "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]: Invalid value: \"size(cluster.metadata.name)\": the expression returns int; a predicate must return bool"},
		{"negative tolerationSeconds", func(s *clusterv1alpha1.PlacementSpec) {
			s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To(int64(-1))}}
		}, "spec.tolerations[0].tolerationSeconds"},
		{"bad group selector", func(s *clusterv1alpha1.PlacementSpec) {
			s.DecisionStrategy.GroupStrategy.DecisionGroups = []clusterv1alpha1.DecisionGroup{{GroupName: "a", GroupClusterSelector: clusterv1alpha1.GroupClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}}}}
		}, "spec.decisionStrategy.groupStrategy.decisionGroups[0].groupClusterSelector.labelSelector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := clusterv1alpha1.PlacementSpec{}
			tc.edit(&spec)
			errs := ValidateSpec(&spec)
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.field) {
				t.Fatalf("got %v, want an error naming %s", errs, tc.field)
			}
		})
	}
	good := clusterv1alpha1.PlacementSpec{}
	good.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = ptr.To(intstr.FromString("25%"))
	good.Predicates = []clusterv1alpha1.ClusterPredicate{{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{
		CelSelector: clusterv1alpha1.CelSelector{CelExpressions: []string{cpuAtLeast8, `cluster.metadata.labels["env"] == "prod"`,
			// docs/placement.md's examples
			`quantity(cluster.status.resourceSummary.allocatable.cpu).compareTo(quantity("16")) >= 0`,
			`cluster.status.apiEnablements.exists(e, e.groupVersion == "batch/v1")`,
			`cluster.spec.region in ["eu-west-1", "eu-central-1"]`}}}}}
	if errs := ValidateSpec(&good); len(errs) != 0 {
		t.Fatalf("25%%: %v", errs)
	}
}

// TestTolerationSeconds: a toleration with tolerationSeconds tolerates a NoSchedule or NoExecute taint until
// the taint's timeAdded plus those seconds, and the result says when the first runs out; then the Cluster
// is dropped. A taint without timeAdded has nothing to count from and stays tolerated; of two matching
// tolerations the longer counts.
func TestTolerationSeconds(t *testing.T) {
	added := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	taint := func(key string, effect corev1.TaintEffect, at *time.Time) corev1.Taint {
		tt := corev1.Taint{Key: key, Effect: effect}
		if at != nil {
			tt.TimeAdded = &metav1.Time{Time: *at}
		}
		return tt
	}
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("a")}, Clusters: []clusterv1alpha1.Cluster{
		cluster("unreachable", "a", "", nil, taint("unreachable", corev1.TaintEffectNoExecute, &added)),
		cluster("maintenance", "a", "", nil, taint("maintenance", corev1.TaintEffectNoSchedule, &added)),
		cluster("undated", "a", "", nil, taint("unreachable", corev1.TaintEffectNoExecute, nil)),
		cluster("clean", "a", "", nil),
	}}
	p := &clusterv1alpha1.Placement{}
	p.Spec.Tolerations = []corev1.Toleration{
		{Key: "unreachable", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To(int64(60))},
		{Key: "maintenance", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To(int64(30))},
		{Key: "maintenance", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To(int64(120))},
	}
	for _, tc := range []struct {
		after   time.Duration
		want    []string
		expires time.Duration // after added; 0 for none
	}{
		{10 * time.Second, []string{"clean", "maintenance", "undated", "unreachable"}, 60 * time.Second},
		{60 * time.Second, []string{"clean", "maintenance", "undated"}, 120 * time.Second},
		{120 * time.Second, []string{"clean", "undated"}, 0},
	} {
		in.Now = added.Add(tc.after)
		r, err := Decide(p, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(slices.Values(r.Selected)); !slices.Equal(got, tc.want) {
			t.Errorf("%s after the taints: got %v, want %v", tc.after, got, tc.want)
		}
		if want := added.Add(tc.expires); (tc.expires == 0) != r.Expires.IsZero() || (tc.expires != 0 && !r.Expires.Equal(want)) {
			t.Errorf("%s after the taints: expires %v, want %v", tc.after, r.Expires, tc.expires)
		}
	}
}

// TestDecisionReasons: each decision says why, in words without scores or taints, so that a shift of the
// scores (Steady once the cluster is decided, Balance when another Placement changes) or a tolerated taint
// coming or going rewrites nothing.
func TestDecisionReasons(t *testing.T) {
	in := Input{Sets: []clusterv1alpha1.ClusterSet{set("prod"), set("dev")}, Clusters: []clusterv1alpha1.Cluster{
		cluster("big", "prod", "16", map[string]string{"tier": "gold"}, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}),
		cluster("mid", "dev", "8", map[string]string{"tier": "gold"}),
		cluster("small", "prod", "2", map[string]string{"tier": "gold"}),
	}}
	p := byCPU(2)
	p.Spec.Predicates = []clusterv1alpha1.ClusterPredicate{
		{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "silver"}}}},
		{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}},
	}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	first, err := Decide(p, in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"big": "in set prod; matches predicates[1]; one of the 2 best scored",
		"mid": "in set dev; matches predicates[1]; one of the 2 best scored",
	}
	if !maps.Equal(first.Reasons, want) {
		t.Fatalf("reasons %v, want %v", first.Reasons, want)
	}
	in.Decided = map[string]bool{"big": true, "mid": true}
	in.Decisions = map[string]int{"big": 3}
	in.Clusters[1].Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoExecute}}
	again, _ := Decide(p, in)
	if !maps.Equal(again.Reasons, first.Reasons) {
		t.Fatalf("reasons moved with the scores: %v then %v", first.Reasons, again.Reasons)
	}
	objects, _ := Objects(&clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, first)
	if d := objects[0].Status.Decisions; len(d) != 2 || d[0].Reason != want[d[0].ClusterName] {
		t.Fatalf("decisions %+v", d)
	}
}
