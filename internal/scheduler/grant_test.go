package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
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

func inSet(c clusterv1alpha1.Cluster, set string) clusterv1alpha1.Cluster {
	c.Labels[clusterv1alpha1.LabelClusterSet] = set
	return c
}

func exclusiveSet(name string) clusterv1alpha1.ClusterSet {
	return clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSetSpec{
		ClusterSelector: clusterv1alpha1.ClusterSetSelector{SelectorType: clusterv1alpha1.ExclusiveClusterSetLabel}}}
}

// TestClusterSetGrant: a confined namespace places only on its sets' clusters, every other cluster says why
// in the words of Grant.Refusal, and a grant that does not confine changes nothing.
func TestClusterSetGrant(t *testing.T) {
	fleet := []clusterv1alpha1.Cluster{inSet(cluster("m1", "eu"), "prod"), inSet(cluster("m2", "eu"), "prod"), inSet(cluster("m3", "us"), "dev")}
	prod := clusterset.Grant{Namespace: "team-a", Confined: true, Sets: []clusterv1alpha1.ClusterSet{exclusiveSet("prod")}}
	res, err := Default().Confined(prod).Schedule(deployment(2, nil), fleet, "")
	if err != nil || result(res.Clusters) != "m1=2,m2=2" {
		t.Fatalf("team-a bound to prod: placed %s, %v", result(res.Clusters), err)
	}
	if want := (workv1alpha1.ClusterVerdict{Cluster: "m3", Plugin: PluginClusterSetGrant, Reason: "m3 is in no ClusterSet bound to namespace team-a"}); !slices.Contains(res.Verdicts, want) {
		t.Errorf("verdicts %v lack %v", res.Verdicts, want)
	}
	// Nothing granted: no cluster fits, and the message says why in one sentence per reason.
	none := clusterset.Grant{Namespace: "team-c", Confined: true}
	_, err = Default().Confined(none).Schedule(deployment(2, nil), fleet, "")
	var noFit *NoFitError
	if !errors.As(err, &noFit) || err.Error() != "0/3 clusters fit: 3 are in no ClusterSet bound to namespace team-c (m1, m2, m3)" {
		t.Errorf("nothing granted: %v", err)
	}
	_, err = Default().Confined(none).Schedule(deployment(2, nil), fleet[:1], "")
	if err == nil || err.Error() != "0/1 clusters fit: m1 is in no ClusterSet bound to namespace team-c" {
		t.Errorf("one cluster, nothing granted: %v", err)
	}
	// The grant comes first among the reasons, and the other filters still give theirs.
	tainted := fleet[2]
	tainted.Spec.Taints = append(tainted.Spec.Taints, untolerated)
	dev := clusterset.Grant{Namespace: "team-b", Confined: true, Sets: []clusterv1alpha1.ClusterSet{exclusiveSet("dev")}}
	_, err = Default().Confined(dev).Schedule(deployment(1, nil), []clusterv1alpha1.Cluster{fleet[0], tainted}, "")
	if err == nil || !strings.Contains(err.Error(), "m1 is in no ClusterSet bound to namespace team-b") || !strings.Contains(err.Error(), "untolerated taint") {
		t.Errorf("team-b on m1 and a tainted m3: %v", err)
	}
	// Unconfined (a ClusterResourceBinding, an unbound namespace on an open hub): the framework as it is.
	f := Default()
	if f.Confined(clusterset.Unconfined) != f || f.Confined(clusterset.Grant{Namespace: "team-d"}) != f {
		t.Error("a grant that does not confine changed the framework")
	}
	// A binding on a cluster no longer granted leaves it (the controller keeps the copy by an eviction task).
	res, err = Default().Confined(dev).Schedule(deployment(1, nil, workv1alpha1.TargetCluster{Name: "m1", Replicas: 1}), fleet, "")
	if err != nil || result(res.Clusters) != "m3=1" {
		t.Errorf("shrunk grant: placed %s, %v", result(res.Clusters), err)
	}
}

var untolerated = corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}

// TestControllerFramework: the controller confines a ResourceBinding by the recorded mode and its
// namespace's bindings, leaves alone a ClusterResourceBinding and a binding a ClusterPropagationPolicy
// placed, and fails the pass on a read error rather than reading it as no binding.
func TestControllerFramework(t *testing.T) {
	ctx := context.Background()
	prod := exclusiveSet("prod")
	binding := &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod"}, Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: "prod"}}
	rb := func(namespace, clusterPolicy string) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"}}
		if clusterPolicy != "" {
			b.Labels = map[string]string{policyv1alpha1.LabelClusterPropagationPolicy: clusterPolicy}
		}
		return b
	}
	m3 := cluster("m3", "us")
	allows := func(f *Framework) bool { return len(f.filterVerdicts(deployment(1, nil), &m3)) == 0 }
	for _, tc := range []struct {
		mode    clusterset.Mode
		binding *workv1alpha1.ResourceBinding
		allowed bool // m3, in no set
	}{
		{clusterset.RequireBindings, rb("team-a", ""), false},
		{clusterset.RequireBindings, rb("team-b", ""), false},
		{clusterset.Open, rb("team-a", ""), false},
		{clusterset.Open, rb("team-b", ""), true},
		{clusterset.RequireBindings, rb("team-a", "admin"), true},
		{clusterset.RequireBindings, rb("team-b", "admin"), true},
	} {
		c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(clusterset.ModeObject(tc.mode), &prod, binding).Build()
		r := &Controller[*workv1alpha1.ResourceBinding]{Client: c, Framework: Default()}
		f, err := r.framework(ctx, tc.binding)
		if err != nil {
			t.Fatal(err)
		}
		if allows(f) != tc.allowed {
			t.Errorf("%s, %s placed by %q: m3 allowed %v, want %v", tc.mode, tc.binding.Namespace, tc.binding.Labels, allows(f), tc.allowed)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(clusterset.ModeObject(clusterset.RequireBindings)).Build()
	crb := &Controller[*workv1alpha1.ClusterResourceBinding]{Client: c, Framework: Default()}
	if f, err := crb.framework(ctx, &workv1alpha1.ClusterResourceBinding{}); err != nil || !allows(f) {
		t.Errorf("a ClusterResourceBinding was confined (%v)", err)
	}

	failing := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(clusterset.ModeObject(clusterset.Open)).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*clusterv1alpha1.ClusterSetBindingList); ok {
				return errors.New("the cache is not synced")
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	r := &Controller[*workv1alpha1.ResourceBinding]{Client: failing, Framework: Default()}
	if _, err := r.framework(ctx, rb("team-a", "")); err == nil {
		t.Error("a failed read of the namespace's bindings was read as no binding")
	}
	r.Client = fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	if _, err := r.framework(ctx, rb("team-a", "")); err == nil {
		t.Error("a missing mode record was read as a mode")
	}
}

// TestGrantEvents: a ClusterSetBinding's creation or deletion places its namespace's bindings again, a set's
// selector change those of the namespaces bound to it, the mode every namespace's; status writes none.
func TestGrantEvents(t *testing.T) {
	ctx := context.Background()
	rb := func(ns, name string) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	setBinding := &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod", Generation: 1}, Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: "prod"}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(rb("team-a", "web"), rb("team-a", "db"), rb("team-b", "web"), setBinding).Build()
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
		return strings.Join(out, " ") // one string, to compare
	}
	prod := exclusiveSet("prod")
	relabelled := prod.DeepCopy()
	relabelled.Generation = 2
	status := prod.DeepCopy()
	status.Status.ClusterCount = 3
	oldMode, newMode := clusterset.ModeObject(clusterset.Open), clusterset.ModeObject(clusterset.RequireBindings)
	for _, tc := range []struct {
		name string
		run  func(q queue)
		want string
	}{
		{"binding created", func(q queue) { setBindingEvents(c).Create(ctx, event.CreateEvent{Object: setBinding}, q) }, "team-a/db team-a/web"},
		{"binding listed at start", func(q queue) {
			setBindingEvents(c).Create(ctx, event.CreateEvent{Object: setBinding, IsInInitialList: true}, q)
		}, ""},
		{"binding deleted", func(q queue) { setBindingEvents(c).Delete(ctx, event.DeleteEvent{Object: setBinding}, q) }, "team-a/db team-a/web"},
		{"binding status", func(q queue) {
			setBindingEvents(c).Update(ctx, event.UpdateEvent{ObjectOld: setBinding, ObjectNew: setBinding.DeepCopy()}, q)
		}, ""},
		{"set selector changed", func(q queue) { setEvents(c).Update(ctx, event.UpdateEvent{ObjectOld: &prod, ObjectNew: relabelled}, q) }, "team-a/db team-a/web"},
		{"set status", func(q queue) { setEvents(c).Update(ctx, event.UpdateEvent{ObjectOld: &prod, ObjectNew: status}, q) }, ""},
		{"unbound set deleted", func(q queue) {
			dev := exclusiveSet("dev")
			setEvents(c).Delete(ctx, event.DeleteEvent{Object: &dev}, q)
		}, ""},
		{"mode switched", func(q queue) { modeEvents(c).Update(ctx, event.UpdateEvent{ObjectOld: oldMode, ObjectNew: newMode}, q) }, "team-a/db team-a/web team-b/web"},
		{"mode record rewritten the same", func(q queue) {
			modeEvents(c).Update(ctx, event.UpdateEvent{ObjectOld: oldMode, ObjectNew: oldMode.DeepCopy()}, q)
		}, ""},
	} {
		if got := queued(tc.run); got != tc.want {
			t.Errorf("%s: queued %q, want %q", tc.name, got, tc.want)
		}
	}
}
