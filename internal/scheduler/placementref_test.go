package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

func decidedOn(names ...string) PlacementDecisions {
	d := PlacementDecisions{Placement: "web", Decided: map[string]bool{}}
	for _, n := range names {
		d.Decided[n] = true
	}
	return d
}

// TestPlacementDecisionsPlace: a binding that follows a Placement runs on exactly its decided clusters, each
// with the template's replicas, tainted or not (the Placement's tolerations decided); the others say why. A
// decided cluster outside the namespace's grant is refused with the grant's reason.
func TestPlacementDecisionsPlace(t *testing.T) {
	tainted := cluster("m2", "eu", untolerated)
	fleet := []clusterv1alpha1.Cluster{inSet(cluster("m1", "eu"), "prod"), inSet(tainted, "prod"), inSet(cluster("m3", "us"), "dev")}
	res, err := Default().Decided(decidedOn("m1", "m2")).Schedule(deployment(3, &policyv1alpha1.Placement{}), fleet, "")
	if err != nil || result(res.Clusters) != "m1=3,m2=3" {
		t.Fatalf("placed %s, %v; want m1=3,m2=3", result(res.Clusters), err)
	}
	if want := (workv1alpha1.ClusterVerdict{Cluster: "m3", Plugin: PluginPlacementDecisions, Reason: "are not decided by Placement web"}); !slices.Equal(res.Verdicts, []workv1alpha1.ClusterVerdict{want}) {
		t.Errorf("verdicts %v, want [%v]", res.Verdicts, want)
	}
	prod := clusterset.Grant{Namespace: "team-a", Confined: true, Sets: []clusterv1alpha1.ClusterSet{exclusiveSet("prod")}}
	res, err = Default().Confined(prod).Decided(decidedOn("m1", "m3")).Schedule(deployment(2, nil), fleet, "")
	if err != nil || result(res.Clusters) != "m1=2" {
		t.Fatalf("m3 decided outside the grant: placed %s, %v; want m1=2", result(res.Clusters), err)
	}
	if want := (workv1alpha1.ClusterVerdict{Cluster: "m3", Plugin: PluginClusterSetGrant, Reason: "m3 is in no ClusterSet bound to namespace team-a"}); !slices.Contains(res.Verdicts, want) {
		t.Errorf("verdicts %v lack %v", res.Verdicts, want)
	}
	// No taint status or expiry for a binding that follows a Placement: the Placement drops a cluster itself.
	f := Default().Decided(decidedOn("m2"))
	if got := f.Taints.Tainted(deployment(1, nil, workv1alpha1.TargetCluster{Name: "m2", Replicas: 1}), fleet, metav1.Now().Time); got != nil {
		t.Errorf("tainted %v", got)
	}
}

// TestNoDecisionKeepsThePlacement: a missing Placement, or one that decided nothing, places the binding
// nowhere: every cluster says why, and the Scheduled condition gives the reason while the placement stays.
func TestNoDecisionKeepsThePlacement(t *testing.T) {
	fleet := []clusterv1alpha1.Cluster{cluster("m1", "eu"), cluster("m2", "eu")}
	missing := PlacementDecisions{Placement: "web", Reason: ReasonPlacementNotFound, Missing: "Placement web does not exist in namespace team-a"}
	res, err := Default().Decided(missing).Schedule(deployment(1, nil, workv1alpha1.TargetCluster{Name: "m1", Replicas: 1}), fleet, "")
	if err == nil || len(res.Clusters) != 0 {
		t.Fatalf("placed %s, %v", result(res.Clusters), err)
	}
	if v := res.Verdicts; len(v) != 2 || v[0].Reason != "are not decided: Placement web does not exist in namespace team-a" {
		t.Errorf("verdicts %v", v)
	}
	cond, placed := decide([]workv1alpha1.TargetCluster{{Name: "m1", Replicas: 1}}, res, &placementError{reason: missing.Reason, error: errors.New(missing.Missing)})
	if placed || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonPlacementNotFound ||
		cond.Message != "Placement web does not exist in namespace team-a; the current placement stays" {
		t.Errorf("placed %v, condition %+v", placed, cond)
	}
}

// TestControllerReadsDecisions: the controller reads the clusters of the PlacementDecisions the Placement
// controls (not another's with the same label), says PlacementNotFound or NoDecisions when there is nothing,
// and fails the pass on a read error.
func TestControllerReadsDecisions(t *testing.T) {
	ctx := context.Background()
	p := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "p-uid"}}
	decision := func(name string, owner *clusterv1alpha1.Placement, clusters ...string) *clusterv1alpha1.PlacementDecision {
		d := &clusterv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name,
			Labels: map[string]string{clusterv1alpha1.LabelPlacement: "web"}}}
		if owner != nil {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Placement", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
		}
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, clusterv1alpha1.ClusterDecision{ClusterName: c})
		}
		return d
	}
	follower := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{PlacementRef: &policyv1alpha1.PlacementRef{Name: "web"}}}
	read := func(c client.Client) (PlacementDecisions, error) {
		r := &Controller[*workv1alpha1.ResourceBinding]{Client: c, Framework: Default()}
		return r.placementDecisions(ctx, follower)
	}
	build := func(objs ...client.Object) client.Client {
		return fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).WithStatusSubresource(&clusterv1alpha1.PlacementDecision{}).Build()
	}

	d, err := read(build(p, decision("web-decision-1", p, "m1"), decision("web-decision-2", p, "m2"), decision("forged", nil, "m3")))
	if err != nil || d.Missing != "" || len(d.Decided) != 2 || !d.Decided["m1"] || !d.Decided["m2"] {
		t.Errorf("decided %v, missing %q, %v; want m1 and m2", d.Decided, d.Missing, err)
	}
	if d, err = read(build(decision("web-decision-1", p, "m1"))); err != nil || d.Reason != ReasonPlacementNotFound ||
		d.Missing != "Placement web does not exist in namespace team-a" {
		t.Errorf("no Placement: %+v, %v", d, err)
	}
	if d, err = read(build(p, decision("web-decision-1", p))); err != nil || d.Reason != ReasonNoDecisions || d.Missing != "Placement web has decided no cluster" {
		t.Errorf("nothing decided: %+v, %v", d, err)
	}
	failing := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(p).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return errors.New("the cache is not synced")
		}}).Build()
	if _, err := read(failing); err == nil {
		t.Error("a failed read of the decisions was read as no decision")
	}
}

// TestPlacementEvents: a PlacementDecision that decides other clusters, or a Placement created or deleted,
// places again the bindings of its namespace that follow it, and only those; a decision's reason alone, or
// the first listing, none.
func TestPlacementEvents(t *testing.T) {
	ctx := context.Background()
	rb := func(ns, name, placement string) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if placement != "" {
			b.Spec.PlacementRef = &policyv1alpha1.PlacementRef{Name: placement}
		}
		return b
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(rb("team-a", "web", "web"), rb("team-a", "db", "db"),
		rb("team-a", "inline", ""), rb("team-b", "web", "web")).Build()
	queued := func(run func(q queue)) string {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		run(q)
		var out []string
		for q.Len() > 0 {
			req, _ := q.Get()
			out = append(out, req.String())
			q.Done(req)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	p := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	d := &clusterv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-decision-1",
		Labels: map[string]string{clusterv1alpha1.LabelPlacement: "web"}}}
	d.Status.Decisions = []clusterv1alpha1.ClusterDecision{{ClusterName: "m1", Reason: "in set prod"}}
	moved := d.DeepCopy()
	moved.Status.Decisions[0].ClusterName = "m2"
	reworded := d.DeepCopy()
	reworded.Status.Decisions[0].Reason = "in set prod; matches predicates[0]"
	decisions, placements := placementEvents(c, decisionPlacement), placementEvents(c, placementName)
	for _, tc := range []struct {
		name string
		run  func(q queue)
		want string
	}{
		{"decision moved", func(q queue) { decisions.Update(ctx, event.UpdateEvent{ObjectOld: d, ObjectNew: moved}, q) }, "team-a/web"},
		{"decision reworded", func(q queue) { decisions.Update(ctx, event.UpdateEvent{ObjectOld: d, ObjectNew: reworded}, q) }, ""},
		{"decision created", func(q queue) { decisions.Create(ctx, event.CreateEvent{Object: d}, q) }, "team-a/web"},
		{"decision listed at start", func(q queue) { decisions.Create(ctx, event.CreateEvent{Object: d, IsInInitialList: true}, q) }, ""},
		{"decision deleted", func(q queue) { decisions.Delete(ctx, event.DeleteEvent{Object: d}, q) }, "team-a/web"},
		{"placement deleted", func(q queue) { placements.Delete(ctx, event.DeleteEvent{Object: p}, q) }, "team-a/web"},
		{"placement created", func(q queue) { placements.Create(ctx, event.CreateEvent{Object: p}, q) }, "team-a/web"},
		{"placement updated", func(q queue) { placements.Update(ctx, event.UpdateEvent{ObjectOld: p, ObjectNew: p.DeepCopy()}, q) }, ""},
	} {
		if got := queued(tc.run); got != tc.want {
			t.Errorf("%s: queued %q, want %q", tc.name, got, tc.want)
		}
	}
}
