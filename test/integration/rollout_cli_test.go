package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestRolloutCommands drives flotilla rollout against the hub: pause and resume set and clear the binding's
// annotation under the CLI's field manager; history lists a revision kept as a ControllerRevision; undo puts
// it back on the template (its identity kept) and, with --all-at-once, names it on the binding; the errors
// name what is missing.
func TestRolloutCommands(t *testing.T) {
	ctx := context.Background()
	const ns = "rollout-cli"
	createNamespace(t, ns)
	web := func(image, cause string) *appsv1.Deployment {
		labels := map[string]string{"app": "web"}
		return &appsv1.Deployment{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"image": strings.ReplaceAll(image, ":", "-")},
				Annotations: map[string]string{"kubernetes.io/change-cause": cause}},
			Spec: appsv1.DeploymentSpec{Replicas: ptrTo(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}}}},
		}
	}
	live := web("nginx:2", "image nginx:2")
	create(t, live)
	policy := namespacedPolicy(ns, "web", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"})
	policy.Spec.Rollout = &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive,
		Progressive: &policyv1alpha1.ProgressiveRollout{MaxConcurrency: ptrTo(intstr.FromInt32(1))}}
	create(t, policy)
	deploymentKind := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	testenv.Eventually(t, hangGuard, "web's binding with the policy's rollout", func() error {
		b, err := binding(ctx, deploymentKind, ns, "web")
		if err == nil && (b.Spec.Rollout == nil || b.Spec.Rollout.Type != policyv1alpha1.RolloutProgressive) {
			err = fmt.Errorf("binding rollout %+v", b.Spec.Rollout)
		}
		return err
	})
	run := func(args ...string) (string, error) { return runFlotilla(ctx, append([]string{"rollout"}, args...)...) }
	annotation := func(key string) (string, bool) {
		b, err := binding(ctx, deploymentKind, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		v, ok := b.Annotations[key]
		return v, ok
	}

	// pause and resume.
	if out, err := run("pause", "deploy/web", "-n", ns); err != nil || out != "deployment.apps/web paused\n" {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	if v, _ := annotation(workv1alpha1.AnnotationRolloutPaused); v != "true" {
		t.Fatalf("paused annotation %q", v)
	}
	b, err := binding(ctx, deploymentKind, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(b.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == "flotilla-rollout" }) {
		t.Fatalf("no field manager flotilla-rollout in %+v", b.ManagedFields)
	}
	if out, err := run("pause", "deployments.apps/web", "-n", ns); err != nil || out != "deployment.apps/web already paused\n" {
		t.Fatalf("pause again: %v\n%s", err, out)
	}
	if out, err := run("resume", "deploy/web", "-n", ns); err != nil || out != "deployment.apps/web resumed\n" {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if v, ok := annotation(workv1alpha1.AnnotationRolloutPaused); ok {
		t.Fatalf("resumed, yet the annotation is %q", v)
	}
	// Without -n: the kubeconfig's namespace (default), where there is no such template.
	if out, err := run("pause", "deploy/web"); err == nil || !strings.Contains(err.Error(), "deployment.apps/web in default is not placed by any policy") {
		t.Fatalf("pause in default: %v\n%s", err, out)
	}

	// A revision as the hub keeps it: the older template, snapshotted, in a ControllerRevision.
	old := &unstructured.Unstructured{}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(web("nginx:1", "image nginx:1"))
	if err != nil {
		t.Fatal(err)
	}
	old.Object = raw
	rev, hash, err := rollout.Snapshot(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(rev)
	if err != nil {
		t.Fatal(err)
	}
	bindingName := workv1alpha1.BindingName(deploymentKind, "web")
	create(t, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rollout.Name(bindingName, hash),
		Labels: map[string]string{workv1alpha1.LabelRevisionOf: bindingName, rollout.LabelHash: hash}},
		Revision: 100, Data: runtime.RawExtension{Raw: data}})

	out, err := run("history", "deploy/web", "-n", ns)
	if err != nil || !slices.ContainsFunc(strings.Split(out, "\n"), func(line string) bool {
		return strings.Join(strings.Fields(line), " ") == "100 "+hash+" - image nginx:1"
	}) {
		t.Fatalf("history: %v\n%s", err, out)
	}
	out, err = run("history", "deploy/web", "-n", ns, "--revision", "100", "-o", "json")
	shown := &appsv1.Deployment{}
	if err != nil || json.Unmarshal([]byte(out), shown) != nil || shown.Spec.Template.Spec.Containers[0].Image != "nginx:1" {
		t.Fatalf("history --revision 100: %v\n%s", err, out)
	}

	// undo.
	before := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(live), before); err != nil {
		t.Fatal(err)
	}
	if out, err := run("undo", "deploy/web", "-n", ns, "--to-revision", "7"); err == nil || !strings.Contains(err.Error(), "no revision 7: there are revisions") {
		t.Fatalf("undo to a revision there is not: %v\n%s", err, out)
	}
	if out, err := run("undo", "deploy/web", "-n", ns, "--to-revision", "100"); err != nil ||
		out != fmt.Sprintf("deployment.apps/web rolled back to revision 100 (%s), under its rollout strategy\n", hash) {
		t.Fatalf("undo: %v\n%s", err, out)
	}
	after := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(live), after); err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || after.Spec.Template.Spec.Containers[0].Image != "nginx:1" || after.Labels["image"] != "nginx-1" ||
		after.Annotations["kubernetes.io/change-cause"] != "image nginx:1" || after.Generation <= before.Generation {
		t.Fatalf("undone template: uid %s (was %s), generation %d (was %d), labels %v, annotations %v, image %s", after.UID, before.UID,
			after.Generation, before.Generation, after.Labels, after.Annotations, after.Spec.Template.Spec.Containers[0].Image)
	}
	if _, ok := annotation(workv1alpha1.AnnotationRolloutAllAtOnce); ok {
		t.Fatal("an undo without --all-at-once set the all-at-once annotation")
	}
	// The hub may have renumbered the revision since, as the newest: undo to whatever number it has now.
	revs, err := rollout.List(ctx, env.Client, b.Spec.Resource, bindingName)
	if err != nil || rollout.Find(revs, hash) == nil {
		t.Fatalf("revision %s gone (%v)", hash, err)
	}
	number := fmt.Sprint(rollout.Find(revs, hash).Revision)
	if out, err := run("undo", "deploy/web", "-n", ns, "--to-revision", number, "--all-at-once"); err != nil || !strings.HasSuffix(out, "to every cluster at once\n") {
		t.Fatalf("undo --all-at-once: %v\n%s", err, out)
	}
	if v, _ := annotation(workv1alpha1.AnnotationRolloutAllAtOnce); v != hash {
		t.Fatalf("all-at-once annotation %q, want %s", v, hash)
	}

	// status, once, names the template and its rollout; a template no policy places has no rollout.
	if out, err := run("status", "deploy/web", "-n", ns, "--watch=false"); err != nil || !strings.HasPrefix(out, "deployment.apps/web in "+ns+": Progressive rollout") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if out, err := run("status", "deploy/nothing", "-n", ns); err == nil || !strings.Contains(err.Error(), "deployment.apps/nothing in "+ns+" is not placed by any policy") {
		t.Fatalf("status of no template: %v\n%s", err, out)
	}
	if out, err := run("undo", "secret/web", "-n", ns); err == nil || !strings.Contains(err.Error(), "not placed by any policy") {
		t.Fatalf("undo of no binding: %v\n%s", err, out)
	}
}

// TestRolloutStatusFollowsTheHub runs flotilla rollout status, history, pause, resume and undo on a rollout
// the hub drives through two clusters: status waits for a good change to complete (exit 0) and fails with the
// rollout's reason on a bad one; undo puts the previous revision back and the failed cluster gets it; a paused
// rollout outlasts --timeout until resumed.
func TestRolloutStatusFollowsTheHub(t *testing.T) {
	const ns = "rollout-status"
	ctx := context.Background()
	createNamespace(t, ns)
	selector := map[string]string{"rollout-status": "yes"}
	a, b := "rollout-status-a", "rollout-status-b"
	for _, name := range []string{a, b} {
		placeableCluster(t, name, selector)
	}
	cm := configMap(ns, "web", nil)
	cm.Data = map[string]string{"v": "1"}
	create(t, cm)
	p := placedPolicy(ns, selector)
	p.Spec.Rollout = &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive, Progressive: &policyv1alpha1.ProgressiveRollout{
		MaxConcurrency: ptrTo(intstr.FromInt32(1)), MinSuccessTime: metav1.Duration{Duration: time.Second},
		ProgressDeadline: &metav1.Duration{Duration: 3 * time.Second}}}
	create(t, p)
	waitPlaced(t, ns, "web", a, b)
	for _, cluster := range []string{a, b} {
		waitValue(t, ns, "web", cluster, "1", workv1alpha1.ResourceHealthy)
	}
	rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutComplete)
	run := func(args ...string) (string, error) { return runFlotilla(ctx, append([]string{"rollout"}, args...)...) }
	// targeting waits until the hub rolls out revision n, so that status does not read the previous rollout.
	targeting := func(n int64) {
		t.Helper()
		testenv.Eventually(t, hangGuard, fmt.Sprintf("revision %d the target", n), func() error {
			b, err := binding(ctx, configMapKind, ns, "web")
			if err == nil && (b.Status.Rollout == nil || b.Status.Rollout.TargetRevision != n) {
				err = fmt.Errorf("rollout %+v", b.Status.Rollout)
			}
			return err
		})
	}
	type result struct {
		out string
		err error
	}
	follow := func(args ...string) chan result {
		done := make(chan result, 1)
		go func() {
			out, err := run(append([]string{"status", "cm/web", "-n", ns, "--timeout", "45s"}, args...)...)
			done <- result{out, err}
		}()
		return done
	}

	// A good change: status follows it wave by wave and exits 0.
	setValue(t, cm, "2")
	targeting(2)
	watching := follow()
	waitValue(t, ns, "web", a, "2", workv1alpha1.ResourceHealthy)
	waitValue(t, ns, "web", b, "2", workv1alpha1.ResourceHealthy)
	got := <-watching
	if got.err != nil || !strings.Contains(got.out, "configmap/web in "+ns+": Progressive rollout of revision 2") ||
		!strings.Contains(got.out, "] "+b+": Succeeded on revision 2\n") || !strings.HasSuffix(got.out, "] rollout of revision 2 complete: every cluster runs it\n") {
		t.Fatalf("status of a good change: %v\n%s", got.err, got.out)
	}
	if out, err := run("status", "cm/web", "-n", ns, "--watch=false"); err != nil ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), "GROUP CLUSTER REVISION STATE SINCE HEALTHY-FOR") ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), a+" 2 Succeeded") {
		t.Fatalf("status --watch=false: %v\n%s", err, out)
	}

	// A bad change: a is never healthy; status exits with the rollout's reason.
	setValue(t, cm, "3")
	targeting(3)
	watching = follow()
	waitValue(t, ns, "web", a, "3", workv1alpha1.ResourceUnhealthy)
	got = <-watching
	if got.err == nil || got.err.Error() != "configmap/web in "+ns+": rollout of revision 3 failed: not healthy within progressDeadline: "+a {
		t.Fatalf("status of a failing change: %v\n%s", got.err, got.out)
	}
	out, err := run("history", "cm/web", "-n", ns)
	if err != nil || !strings.Contains(out, "\n2 ") || !strings.Contains(strings.Join(strings.Fields(out), " "), "stable") ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), "target") {
		t.Fatalf("history: %v\n%s", err, out)
	}

	// undo: the revision before the failed one (2) goes back on the template; a gets it back.
	if out, err := run("undo", "cm/web", "-n", ns); err != nil || !strings.HasPrefix(out, "configmap/web rolled back to revision 2 ") {
		t.Fatalf("undo: %v\n%s", err, out)
	}
	undone := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), undone); err != nil || undone.Labels[policyv1alpha1.LabelPropagationPolicyName] != p.Name {
		t.Fatalf("undo dropped the detector's claim: labels %v (%v)", undone.Labels, err)
	}
	waitValue(t, ns, "web", a, "2", workv1alpha1.ResourceHealthy)
	rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutComplete)

	// Paused: status gives up at --timeout; resumed, the change completes.
	if out, err := run("pause", "cm/web", "-n", ns); err != nil || out != "configmap/web paused\n" {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	rolloutCondition(t, ns, "web", workv1alpha1.ConditionRolloutPaused)
	setValue(t, cm, "4")
	targeting(5) // 1, 2, 3, 2 again as 4 (the same revision: undo kept the claim), and now 5
	if out, err := run("status", "cm/web", "-n", ns, "--timeout", "2s"); err == nil || !strings.Contains(err.Error(), "stopped waiting (context deadline exceeded): revision 5 succeeded on 0 of 2 clusters") {
		t.Fatalf("status of a paused rollout: %v\n%s", err, out)
	}
	if v, _, _, _ := rolledValue(t, ns, "web", a); v != "2" {
		t.Fatalf("a paused rollout reached a: v=%s", v)
	}
	if out, err := run("resume", "cm/web", "-n", ns); err != nil || out != "configmap/web resumed\n" {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	watching = follow()
	waitValue(t, ns, "web", a, "4", workv1alpha1.ResourceHealthy)
	waitValue(t, ns, "web", b, "4", workv1alpha1.ResourceHealthy)
	if got := <-watching; got.err != nil {
		t.Fatalf("status after resume: %v\n%s", got.err, got.out)
	}
}
