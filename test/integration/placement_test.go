package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// decisionsByGroup reads a Placement's PlacementDecisions: for each, its group index and name labels and its
// clusters, keyed by object name.
type decisionObject struct {
	index, group string
	clusters     []string
	rv           string
}

func readDecisions(t *testing.T, namespace, placement string) map[string]decisionObject {
	t.Helper()
	list := &clusterv1alpha1.PlacementDecisionList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1alpha1.LabelPlacement: placement}); err != nil {
		t.Fatal(err)
	}
	out := map[string]decisionObject{}
	for _, d := range list.Items {
		o := decisionObject{index: d.Labels[clusterv1alpha1.LabelDecisionGroupIndex], group: d.Labels[clusterv1alpha1.LabelDecisionGroupName], rv: d.ResourceVersion}
		for _, c := range d.Status.Decisions {
			o.clusters = append(o.clusters, c.ClusterName)
		}
		out[d.Name] = o
	}
	return out
}

// waitDecisions waits until the Placement's PlacementDecisions are exactly want (name → group index, group
// name, clusters), and returns them.
func waitDecisions(t *testing.T, namespace, placement string, want map[string]decisionObject) map[string]decisionObject {
	t.Helper()
	var got map[string]decisionObject
	testenv.Eventually(t, time.Minute, fmt.Sprintf("PlacementDecisions of %s/%s: %v", namespace, placement, want), func() error {
		got = readDecisions(t, namespace, placement)
		if len(got) != len(want) {
			return fmt.Errorf("got %v%s", got, placementState(namespace, placement))
		}
		for name, w := range want {
			g, ok := got[name]
			if !ok || g.index != w.index || g.group != w.group || !slices.Equal(g.clusters, w.clusters) {
				return fmt.Errorf("got %v%s", got, placementState(namespace, placement))
			}
		}
		return nil
	})
	return got
}

// placementState is what a Placement's status, its namespace's events and the controller's reconcile counts
// say, for a failure message.
func placementState(namespace, name string) string {
	p := &clusterv1alpha1.Placement{}
	_ = env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, p)
	events, _ := env.Kube.EventsV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	var said []string
	for _, e := range events.Items {
		said = append(said, e.Reason+": "+e.Note)
	}
	gathered, _ := ctrlmetrics.Registry.Gather()
	families := map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		families[f.GetName()] = f
	}
	errs, _ := sample(families, "controller_runtime_reconcile_errors_total", map[string]string{"controller": "placement"})
	total, _ := sample(families, "controller_runtime_reconcile_total", map[string]string{"controller": "placement"})
	return fmt.Sprintf("; placement status %+v; events %v; %v reconciles, %v failed", p.Status, said, total, errs)
}

// withCPU gives a placeable Cluster an allocatable CPU.
func withCPU(t *testing.T, name, cpu string) {
	t.Helper()
	updateClusterStatus(t, name, func(s *clusterv1alpha1.ClusterStatus) {
		s.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	})
}

// TestPlacementDecisions: a Placement of two clusters by ResourceAllocatableCPU picks the two roomiest of the
// sets bound to its namespace (a roomier cluster of an unbound set is not seen), splits them into a named
// decision group and the rest as labelled PlacementDecisions with status to match, rewrites nothing when
// nothing it reads changed, and follows a cluster relabelled out of the set.
func TestPlacementDecisions(t *testing.T) {
	ctx := context.Background()
	const ns = "pl-team"
	createNamespace(t, ns)
	exclusiveSet(t, "pl-bound")
	exclusiveSet(t, "pl-unbound")
	create(t, setBinding(ns, "pl-bound"))
	in := func(set string, extra ...string) map[string]string {
		l := map[string]string{clusterv1alpha1.LabelClusterSet: set}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	placeableCluster(t, "pl-small", in("pl-bound"))
	placeableCluster(t, "pl-mid", in("pl-bound", "env", "canary"))
	placeableCluster(t, "pl-big", in("pl-bound"))
	placeableCluster(t, "pl-huge", in("pl-unbound"))
	withCPU(t, "pl-small", "2")
	withCPU(t, "pl-mid", "8")
	withCPU(t, "pl-big", "16")
	withCPU(t, "pl-huge", "64")

	p := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	p.Spec.NumberOfClusters = ptr.To(int32(2))
	// The test clusters have no agent: the health monitor taints them once their grace period is over.
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	p.Spec.PrioritizerPolicy.Configurations = []clusterv1alpha1.PrioritizerConfig{{
		ScoreCoordinate: clusterv1alpha1.ScoreCoordinate{Type: "BuiltIn", BuiltIn: clusterv1alpha1.ScoreResourceAllocatableCPU}, Weight: 1}}
	p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups = []clusterv1alpha1.DecisionGroup{{GroupName: "canary",
		GroupClusterSelector: clusterv1alpha1.GroupClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "canary"}}}}}
	create(t, p)

	first := waitDecisions(t, ns, "web", map[string]decisionObject{
		"web-decision-1": {index: "0", group: "canary", clusters: []string{"pl-mid"}},
		"web-decision-2": {index: "1", group: "", clusters: []string{"pl-big"}},
	})
	testenv.Eventually(t, time.Minute, "Placement web's status", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		sat := meta.FindStatusCondition(p.Status.Conditions, clusterv1alpha1.PlacementConditionSatisfied)
		groups := p.Status.DecisionGroups
		if p.Status.NumberOfSelectedClusters != 2 || sat == nil || sat.Status != metav1.ConditionTrue || len(groups) != 2 ||
			groups[0].DecisionGroupName != "canary" || !slices.Equal(groups[0].Decisions, []string{"web-decision-1"}) || groups[0].ClusterCount != 1 ||
			groups[1].DecisionGroupIndex != 1 || !slices.Equal(groups[1].Decisions, []string{"web-decision-2"}) {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	})
	var d clusterv1alpha1.PlacementDecision
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-decision-1"}, &d); err != nil || !metav1.IsControlledBy(&d, p) {
		t.Fatalf("web-decision-1 not controlled by its Placement: %v %+v", err, d.OwnerReferences)
	}
	// Each decision says why, without a score: Steady raised it once the cluster was decided.
	if want := "in set pl-bound; one of the 2 best scored"; len(d.Status.Decisions) != 1 || d.Status.Decisions[0].Reason != want {
		t.Errorf("web-decision-1 decisions %+v, want the reason %q", d.Status.Decisions, want)
	}

	// A heartbeat of a decided cluster, then a relabel the controller must see but that changes no decision:
	// once the controller has taken both in, nothing was rewritten.
	since := reconciles(t, "placement")
	updateClusterStatus(t, "pl-big", func(s *clusterv1alpha1.ClusterStatus) { s.AgentVersion = "heartbeat" })
	setClusterLabel(t, "pl-huge", "pl-unrelated", "yes")
	waitReconciled(t, "placement", since, 1)
	placementRV := p.ResourceVersion
	for name, again := range readDecisions(t, ns, "web") {
		if again.rv != first[name].rv {
			t.Errorf("%s rewritten with nothing changed: resourceVersion %s then %s", name, first[name].rv, again.rv)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil || p.ResourceVersion != placementRV {
		t.Errorf("Placement web's status rewritten with nothing changed: %v, resourceVersion %s then %s", err, placementRV, p.ResourceVersion)
	}

	// The canary cluster leaves the bound set: its group empties, and the next roomiest takes its place.
	setClusterLabel(t, "pl-mid", clusterv1alpha1.LabelClusterSet, "pl-unbound")
	waitDecisions(t, ns, "web", map[string]decisionObject{
		"web-decision-1": {index: "0", group: "canary"},
		"web-decision-2": {index: "1", group: "", clusters: []string{"pl-big", "pl-small"}},
	})
}

// TestPlacementDecisionsReadLikeArgoCD: the decisions read the way Argo CD's clusterDecisionResource
// generator reads them: a dynamic list of the resource its ConfigMap names, by the label selector
// cluster.flotilla.io/placement=<name>, taking status.decisions[*].clusterName.
func TestPlacementDecisionsReadLikeArgoCD(t *testing.T) {
	const ns = "pl-argo"
	createNamespace(t, ns)
	exclusiveSet(t, "pl-argo-set")
	create(t, setBinding(ns, "pl-argo-set"))
	placeableCluster(t, "pl-argo-a", map[string]string{clusterv1alpha1.LabelClusterSet: "pl-argo-set"})
	placeableCluster(t, "pl-argo-b", map[string]string{clusterv1alpha1.LabelClusterSet: "pl-argo-set"})
	p := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guestbook"}}
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	create(t, p)

	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The ConfigMap's apiVersion and kind, resolved as the generator does, to a resource.
	gvr := schema.GroupVersionResource{Group: "cluster.flotilla.io", Version: "v1alpha1", Resource: "placementdecisions"}
	testenv.Eventually(t, time.Minute, "decisions listed by label", func() error {
		list, err := dyn.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "cluster.flotilla.io/placement=guestbook"})
		if err != nil {
			return err
		}
		var names []string
		for _, item := range list.Items {
			decisions, _, err := unstructured.NestedSlice(item.Object, "status", "decisions")
			if err != nil {
				return err
			}
			for _, d := range decisions {
				name, _, _ := unstructured.NestedString(d.(map[string]any), "clusterName")
				names = append(names, name)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"pl-argo-a", "pl-argo-b"}) {
			return fmt.Errorf("clusterName values %v", names)
		}
		return nil
	})
}
