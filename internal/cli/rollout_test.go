package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// flotilla rollout refuses a bad argument or flag before it reaches the hub (the kubeconfig does not exist).
func TestRolloutRefusesBadArguments(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "web"}, `"web": want KIND/NAME`},
		{[]string{"status", "deployment/web", "--timeout", "-1s"}, "--timeout -1s"},
		{[]string{"history", "deployment/web", "-o", "table"}, `--output "table": want yaml or json`},
		{[]string{"history", "deployment/web", "--revision", "-2"}, "--revision -2"},
		{[]string{"undo", "deployment/web", "--to-revision", "-1"}, "--to-revision -1"},
		{[]string{"pause", "deployment/"}, `"deployment/": want KIND/NAME`},
		{[]string{"resume"}, "accepts 1 arg(s)"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := NewPluginRoot()
			root.SetArgs(append([]string{"rollout", tt.args[0], "--kubeconfig", t.TempDir() + "/none"}, tt.args[1:]...))
			if err := root.Execute(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

// revisionOf is a ControllerRevision of the web Deployment's binding numbered n, with a template whose
// image and change cause are given.
func revisionOf(t *testing.T, n int64, hash, image, cause string) appsv1.ControllerRevision {
	t.Helper()
	rev := rollout.Revision{Template: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"image": image},
			"annotations": map[string]any{annotationChangeCause: cause}},
		"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": image}}}}},
	}}
	raw, err := json.Marshal(rev)
	if err != nil {
		t.Fatal(err)
	}
	return appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: rollout.Name("web-deployment", hash),
			Labels: map[string]string{workv1alpha1.LabelRevisionOf: "web-deployment", rollout.LabelHash: hash}},
		Revision: n, Data: runtime.RawExtension{Raw: raw},
	}
}

func TestUndoRevision(t *testing.T) {
	revs := []appsv1.ControllerRevision{revisionOf(t, 1, "a", "v1", ""), revisionOf(t, 3, "c", "v3", ""), revisionOf(t, 4, "d", "v4", "")}
	for _, tt := range []struct {
		name        string
		current, to int64
		want        int64
		err         string
	}{
		{"before the target", 4, 0, 3, ""},
		{"before a target that is not the newest", 3, 0, 1, ""},
		{"no target recorded: before the newest", 0, 0, 3, ""},
		{"named", 4, 1, 1, ""},
		{"nothing before the oldest", 1, 0, 0, "no revision before revision 1"},
		{"no such revision", 4, 2, 0, "no revision 2: there are revisions 1, 3, 4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := undoRevision(revs, tt.current, tt.to)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got.Revision != tt.want {
				t.Fatalf("got %v, %v; want revision %d", got, err, tt.want)
			}
		})
	}
}

func TestHistoryMarksTargetAndStable(t *testing.T) {
	revs := []appsv1.ControllerRevision{revisionOf(t, 1, "a", "v1", "first"), revisionOf(t, 2, "b", "v2", ""), revisionOf(t, 3, "c", "v3", "image v3")}
	entries := history(revs, &workv1alpha1.RolloutStatus{TargetHash: "c", StableHash: "a"})
	var out bytes.Buffer
	if err := printHistory(&out, "deployment.apps/web", entries); err != nil {
		t.Fatal(err)
	}
	want := "deployment.apps/web\n" +
		"REVISION   HASH   ROLLOUT   CHANGE-CAUSE\n" +
		"1          a      stable    first\n" +
		"2          b      -         -\n" +
		"3          c      target    image v3\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	if both := history(revs[2:], &workv1alpha1.RolloutStatus{TargetHash: "c", StableHash: "c"}); both[0].Rollout != "target,stable" {
		t.Fatalf("a complete rollout's revision: %+v", both[0])
	}
	bad := revs[1]
	bad.Data.Raw = []byte("{")
	if got := history([]appsv1.ControllerRevision{bad}, nil); !strings.HasPrefix(got[0].ChangeCause, "(unreadable: ") {
		t.Fatalf("an unreadable revision: %+v", got[0])
	}
}

func progressiveBinding() *workv1alpha1.ResourceBinding {
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}}
	b.Spec.Rollout = &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive}
	return b
}

func TestPrintRollout(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(now.Add(-ago))) }
	target := &rolloutTarget{key: client.ObjectKey{Namespace: "shop", Name: "web"}}
	target.gvk.Group, target.gvk.Kind = "apps", "Deployment"
	b := progressiveBinding()
	b.Status.Rollout = &workv1alpha1.RolloutStatus{TargetRevision: 3, TargetHash: "c", StableRevision: 2, StableHash: "b", Wave: 2,
		Clusters: []workv1alpha1.ClusterRollout{
			{Name: "member1", Group: "canary", Revision: 3, State: workv1alpha1.RolloutSucceeded, Since: at(time.Minute)},
			{Name: "member2", Revision: 3, State: workv1alpha1.RolloutProgressing, Since: at(20 * time.Second), HealthySince: at(5 * time.Second)},
			{Name: "member3", Revision: 2, State: workv1alpha1.RolloutPending},
		}}
	b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionRolloutProgressing, Status: metav1.ConditionTrue, Message: "wave 2: member2"},
		{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Message: "not a rollout condition"}}
	var out bytes.Buffer
	if err := printRollout(&out, target, b, now); err != nil {
		t.Fatal(err)
	}
	want := "deployment.apps/web in shop: Progressive rollout of revision 3 (c), wave 2; clusters not yet reached run revision 2 (b)\n" +
		"  RolloutProgressing=True  wave 2: member2\n" +
		"GROUP    CLUSTER   REVISION   STATE         SINCE   HEALTHY-FOR\n" +
		"canary   member1   3          Succeeded     1m0s    -\n" +
		"-        member2   3          Progressing   20s     5s\n" +
		"-        member3   2          Pending       -       -\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}

	all := &workv1alpha1.ResourceBinding{}
	all.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, Message: "applied in 3 clusters"}}
	out.Reset()
	if err := printRollout(&out, target, all, now); err != nil {
		t.Fatal(err)
	}
	if want := "deployment.apps/web in shop has no progressive rollout (its policy's spec.rollout.type is All): a change reaches every cluster at once\n" +
		"  FullyApplied=True  applied in 3 clusters\n"; out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestRolloutDoneAndSteps(t *testing.T) {
	prev := progressiveBinding()
	prev.Status.Rollout = &workv1alpha1.RolloutStatus{TargetRevision: 2, TargetHash: "b", Wave: 1,
		Clusters: []workv1alpha1.ClusterRollout{{Name: "member1", Revision: 2, State: workv1alpha1.RolloutProgressing}}}
	prev.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionRolloutProgressing, Status: metav1.ConditionTrue, Message: "wave 1"}}
	if done, err := rolloutDone(prev); done || err != nil {
		t.Fatalf("progressing: done %v, %v", done, err)
	}
	cur := prev.DeepCopy()
	cur.Status.Rollout.Wave = 2
	cur.Status.Rollout.Clusters = []workv1alpha1.ClusterRollout{{Name: "member1", Revision: 2, State: workv1alpha1.RolloutSucceeded},
		{Name: "member2", Revision: 2, State: workv1alpha1.RolloutProgressing}}
	steps := rolloutSteps(prev, cur)
	if want := []string{"wave 2", "member1: Succeeded on revision 2", "member2: Progressing on revision 2"}; strings.Join(steps, "|") != strings.Join(want, "|") {
		t.Fatalf("steps %q, want %q", steps, want)
	}
	failed := cur.DeepCopy()
	failed.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionRolloutFailed, Status: metav1.ConditionTrue, Message: "member2 not healthy within 30s"}}
	if done, err := rolloutDone(failed); done || err == nil || err.Error() != "rollout of revision 2 failed: member2 not healthy within 30s" {
		t.Fatalf("failed: done %v, %v", done, err)
	}
	if steps := rolloutSteps(cur, failed); len(steps) != 1 || steps[0] != "RolloutFailed=True  member2 not healthy within 30s" {
		t.Fatalf("steps %q", steps)
	}
	complete := cur.DeepCopy()
	complete.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionRolloutComplete, Status: metav1.ConditionTrue}}
	if done, err := rolloutDone(complete); !done || err != nil {
		t.Fatalf("complete: done %v, %v", done, err)
	}
	all := &workv1alpha1.ResourceBinding{}
	all.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue}}
	if done, _ := rolloutDone(all); done {
		t.Fatal("applied but not healthy read as done")
	}
	all.Status.Conditions = append(all.Status.Conditions, metav1.Condition{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue})
	if done, _ := rolloutDone(all); !done {
		t.Fatal("applied and healthy not read as done")
	}
}

// restore puts the revision's spec, labels and annotations on the template and keeps its identity; an edit
// made after the template was read is not overwritten.
func TestRestoreKeepsIdentity(t *testing.T) {
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-1",
		Labels: map[string]string{"image": "v2", "edited": "yes"}}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(5))}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(live).Build()
	target := &rolloutTarget{c: c, key: client.ObjectKeyFromObject(live)}
	target.gvk = appsv1.SchemeGroupVersion.WithKind("Deployment")
	cr := revisionOf(t, 1, "a", "v1", "first")
	rev, err := rollout.Decode(&cr)
	if err != nil {
		t.Fatal(err)
	}
	if err := target.restore(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	got := &appsv1.Deployment{}
	if err := c.Get(context.Background(), target.key, got); err != nil {
		t.Fatal(err)
	}
	if got.UID != "uid-1" || got.Labels["image"] != "v1" || got.Labels["edited"] != "" || got.Annotations[annotationChangeCause] != "first" ||
		*got.Spec.Replicas != 2 || got.Spec.Template.Spec.Containers[0].Image != "v1" {
		t.Fatalf("restored %+v", got)
	}

	// A template changed between the read and the write: the update carries the resourceVersion read.
	stale := &conflictOnce{Client: c}
	target.c = stale
	if err := target.restore(context.Background(), rev); err == nil || !strings.Contains(err.Error(), "changed while undo read it") {
		t.Fatalf("a concurrent edit: %v", err)
	}
	if err := target.restore(context.Background(), rev); err != nil {
		t.Fatal(err)
	}

	target.key.Name = "gone"
	if err := target.restore(context.Background(), rev); err == nil || !strings.Contains(err.Error(), "template deployment.apps/gone in shop not found") {
		t.Fatalf("a missing template: %v", err)
	}
}

// conflictOnce edits the template behind the reader's back once, after its first read.
type conflictOnce struct {
	client.Client
	done bool
}

func (c *conflictOnce) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil || c.done {
		return err
	}
	c.done = true
	other := &unstructured.Unstructured{Object: obj.(*unstructured.Unstructured).DeepCopy().Object}
	other.SetLabels(map[string]string{"edited": "meanwhile"})
	return c.Client.Update(ctx, other)
}

// A template whose binding has no ControllerRevisions: history and undo say so.
func TestNoRevisions(t *testing.T) {
	b := progressiveBinding()
	b.Spec.Resource = workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	other := revisionOf(t, 1, "a", "v1", "")
	other.Labels[workv1alpha1.LabelRevisionOf] = "api-deployment"
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(&other).Build()
	target := &rolloutTarget{c: c, key: client.ObjectKey{Namespace: "shop", Name: "web"}, binding: b}
	target.gvk = appsv1.SchemeGroupVersion.WithKind("Deployment")
	if _, err := target.revisions(context.Background()); err == nil || err.Error() != "deployment.apps/web in shop has no revisions: the hub records them while its policy sets spec.rollout" {
		t.Fatalf("got %v", err)
	}
}
