package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

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
	if out, err := run("undo", "deploy/web", "-n", ns, "--to-revision", "100", "--all-at-once"); err != nil || !strings.HasSuffix(out, "to every cluster at once\n") {
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
