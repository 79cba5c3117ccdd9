package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// rolledValue reads data.v of the ConfigMap manifest in cluster's Work, and the revision the Work carries.
func rolledValue(t *testing.T, namespace, name, cluster string) (string, string, *workv1alpha1.Work, error) {
	t.Helper()
	w, err := bindingWork(t, namespace, name, cluster)
	if err != nil {
		return "", "", nil, err
	}
	var m struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m); err != nil {
		return "", "", nil, err
	}
	return m.Data["v"], w.Annotations[workv1alpha1.AnnotationRevision], w, nil
}

// waitValue waits until cluster's Work carries data.v = want, and reports it healthy (or not) as its agent
// would.
func waitValue(t *testing.T, namespace, name, cluster, want string, health workv1alpha1.ResourceHealth) time.Time {
	t.Helper()
	var w *workv1alpha1.Work
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%s's Work carrying v=%s", cluster, want), func() error {
		got, _, work, err := rolledValue(t, namespace, name, cluster)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("v=%s", got)
		}
		w = work
		return nil
	})
	reached := time.Now()
	reportManifestStatus(t, w, health, `{}`)
	return reached
}

// rolloutCondition waits for a rollout condition of the ConfigMap's binding to be True.
func rolloutCondition(t *testing.T, namespace, name, condition string) *workv1alpha1.ResourceBinding {
	t.Helper()
	var b *workv1alpha1.ResourceBinding
	testenv.Eventually(t, hangGuard, condition, func() (err error) {
		if b, err = binding(context.Background(), configMapKind, namespace, name); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(b.Status.Conditions, condition) {
			return fmt.Errorf("conditions %+v, rollout %+v", b.Status.Conditions, b.Status.Rollout)
		}
		return nil
	})
	return b
}

func setValue(t *testing.T, cm *corev1.ConfigMap, v string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"data":{"v":%q}}`, v))
	if err := env.Client.Patch(context.Background(), cm, patch); err != nil {
		t.Fatal(err)
	}
}

// TestProgressiveRollout walks changes of a ConfigMap through three clusters one at a time: the next cluster
// gets the change only after the previous was healthy for minSuccessTime; a change not healthy within
// progressDeadline stops the rollout with the other clusters on the previous revision; putting the previous
// content back reaches every cluster; a paused rollout starts no cluster until resumed; the revisions are kept
// as ControllerRevisions; a cluster placed during a rollout gets the last good revision.
func TestProgressiveRollout(t *testing.T) {
	const ns = "rollout"
	ctx := context.Background()
	createNamespace(t, ns)
	selector := map[string]string{"rollout": "yes"}
	a, b, c := "rollout-a", "rollout-b", "rollout-c"
	for _, name := range []string{a, b, c} {
		placeableCluster(t, name, selector)
	}
	cm := configMap(ns, "web", nil)
	cm.Data = map[string]string{"v": "1"}
	create(t, cm)
	p := placedPolicy(ns, selector)
	p.Spec.Rollout = &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive, Progressive: &policyv1alpha1.ProgressiveRollout{
		MaxConcurrency: ptr.To(intstr.FromInt32(1)), MinSuccessTime: metav1.Duration{Duration: 2 * time.Second},
		ProgressDeadline: &metav1.Duration{Duration: 4 * time.Second}}}
	create(t, p)
	waitPlaced(t, ns, "web", a, b, c)
	for _, cluster := range []string{a, b, c} {
		waitValue(t, ns, "web", cluster, "1", workv1alpha1.ResourceHealthy)
	}
	rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutComplete)

	// A good change: a, then b only once a was healthy for 2 s, then c.
	setValue(t, cm, "2")
	healthyA := waitValue(t, ns, "web", a, "2", workv1alpha1.ResourceHealthy)
	if v, _, _, _ := rolledValue(t, ns, "web", c); v != "1" {
		t.Fatalf("c got v=%s while a was not yet succeeded", v)
	}
	reachedB := waitValue(t, ns, "web", b, "2", workv1alpha1.ResourceHealthy)
	if reachedB.Sub(healthyA) < 2*time.Second {
		t.Errorf("b was reached %v after a was healthy, before minSuccessTime (2s)", reachedB.Sub(healthyA))
	}
	waitValue(t, ns, "web", c, "2", workv1alpha1.ResourceHealthy)
	done := rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutComplete)
	if st := done.Status.Rollout; st.StableRevision != 2 || st.TargetRevision != 2 || st.Wave != 3 {
		t.Errorf("rollout status %+v, want revision 2 stable after 3 waves", st)
	}

	// A bad change: a never becomes healthy; the rollout fails after 4 s and b and c keep v=2.
	setValue(t, cm, "3")
	waitValue(t, ns, "web", a, "3", workv1alpha1.ResourceUnhealthy)
	failed := rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutFailed)
	if st := failed.Status.Rollout; st.StableRevision != 2 || st.Clusters[0].State != workv1alpha1.RolloutFailed {
		t.Errorf("rollout status %+v, want a Failed and revision 2 stable", st)
	}
	time.Sleep(time.Second) // what would follow a wrongly started wave: nothing may
	for _, cluster := range []string{b, c} {
		if v, _, _, err := rolledValue(t, ns, "web", cluster); err != nil || v != "2" {
			t.Errorf("%s carries v=%s (%v) after the failed rollout, want 2", cluster, v, err)
		}
	}

	// Putting v=2 back (what `flotilla rollout undo` does) brings a back, and the revision is renumbered.
	setValue(t, cm, "2")
	waitValue(t, ns, "web", a, "2", workv1alpha1.ResourceHealthy)
	back := rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutComplete)
	if back.Status.Rollout.TargetRevision != 4 {
		t.Errorf("the undone revision is number %d, want 4", back.Status.Rollout.TargetRevision)
	}
	revisions := &appsv1.ControllerRevisionList{}
	if err := env.Client.List(ctx, revisions, client.InNamespace(ns), client.MatchingLabels{workv1alpha1.LabelRevisionOf: back.Name}); err != nil {
		t.Fatal(err)
	}
	if len(revisions.Items) != 3 {
		t.Errorf("%d ControllerRevisions, want 3 (v=1, v=2, v=3)", len(revisions.Items))
	}

	// Paused: the next change starts nowhere until resumed.
	pause := func(v string) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, workv1alpha1.AnnotationRolloutPaused, v))
		if err := env.Client.Patch(ctx, back, patch); err != nil {
			t.Fatal(err)
		}
	}
	pause(`"true"`)
	rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutPaused)
	setValue(t, cm, "4")
	rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutProgressing)
	time.Sleep(time.Second)
	if v, _, _, _ := rolledValue(t, ns, "web", a); v != "2" {
		t.Fatalf("a paused rollout reached a: v=%s", v)
	}
	// A cluster placed during the rollout gets the last good revision until the rollout reaches it.
	placeableCluster(t, "rollout-d", selector)
	waitPlaced(t, ns, "web", a, b, c, "rollout-d")
	waitValue(t, ns, "web", "rollout-d", "2", workv1alpha1.ResourceHealthy)
	pause("null")
	waitValue(t, ns, "web", a, "4", workv1alpha1.ResourceHealthy)
}
