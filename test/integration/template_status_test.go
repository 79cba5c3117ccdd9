package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// placeByHand binds a template no policy selects to the given clusters (agentless: the test reports the
// Works' status), with a placement that selects no cluster so the scheduler leaves spec.clusters alone.
func placeByHand(t *testing.T, template client.Object, gvk schema.GroupVersionKind, divided bool, targets ...workv1alpha1.TargetCluster) *workv1alpha1.ResourceBinding {
	t.Helper()
	ctx := context.Background()
	for _, target := range targets {
		if _, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: target.Name},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-" + target.Name}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: target.Name}})
		})
	}
	placement := nowhere.DeepCopy()
	var replicas int32
	if divided {
		placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided}
		for _, target := range targets {
			replicas += target.Replicas
		}
	}
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: template.GetNamespace(), Name: workv1alpha1.BindingName(gvk.GroupKind(), template.GetName()),
			Finalizers: []string{workv1alpha1.FinalizerBinding}},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: template.GetNamespace(),
				Name: template.GetName(), UID: template.GetUID()},
			Placement: placement, Clusters: targets, Replicas: replicas,
		},
	}
	if err := env.Client.Create(ctx, b, client.FieldOwner(bindingTestManager)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, b)
		for _, target := range targets {
			w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(target.Name), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}}
			testenv.Eventually(t, hangGuard, "the Work deleted", func() error {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); apierrors.IsNotFound(err) {
					return nil
				} else if err != nil {
					return err
				}
				if w.DeletionTimestamp == nil {
					return errors.New("not deleted yet")
				}
				return env.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			})
		}
		testenv.EventuallyGone(t, env.Client, b, hangGuard)
	})
	return b
}

// memberReports writes a Work's status as an agent would after applying it: applied, observed, with the
// member object's status (and health), for the template generation the Work carries.
func memberReports(t *testing.T, b *workv1alpha1.ResourceBinding, gvk schema.GroupVersionKind, cluster string, health workv1alpha1.ResourceHealth, status string) *workv1alpha1.Work {
	t.Helper()
	ctx := context.Background()
	w := &workv1alpha1.Work{}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}
	testenv.Eventually(t, hangGuard, "the Work for "+cluster, func() error { return env.Client.Get(ctx, key, w) })
	now := metav1.Now()
	w.Status = workv1alpha1.WorkStatus{
		Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied",
			ObservedGeneration: w.Generation, LastTransitionTime: now}},
		ManifestStatuses: []workv1alpha1.ManifestStatus{{
			Identifier: workv1alpha1.ResourceIdentifier{Group: gvk.Group, Version: gvk.Version,
				Kind: b.Spec.Resource.Kind, Namespace: b.Namespace, Name: b.Spec.Resource.Name},
			Applied: true, Health: health, Status: &runtime.RawExtension{Raw: []byte(status)},
			Conditions: []metav1.Condition{
				{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now},
				{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue, Reason: "Observed", LastTransitionTime: now},
			},
		}},
	}
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestTemplateStatusConditions: once the Works report, the hub's template carries the conditions tools wait
// for (kubectl wait --for=condition=Available, --for=condition=Complete) and counts shaped like its spec,
// and the hub's API server accepts that status. A Job divided 1/2/3 runs its 6 completions once over the
// fleet, and the hub says when the whole Job completed.
func TestTemplateStatusConditions(t *testing.T) {
	ctx := context.Background()
	const namespace = "template-status"
	createNamespace(t, namespace)
	labels := map[string]string{"app": "web"}
	pod := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}, RestartPolicy: corev1.RestartPolicyNever}}

	t.Run("a Deployment duplicated over three clusters is Available, 3 of 3 ready", func(t *testing.T) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: pod}}
		d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		create(t, d)
		clusters := []string{"status-d1", "status-d2", "status-d3"}
		var targets []workv1alpha1.TargetCluster
		for _, c := range clusters {
			targets = append(targets, workv1alpha1.TargetCluster{Name: c, Replicas: 3})
		}
		b := placeByHand(t, d, appsv1.SchemeGroupVersion.WithKind("Deployment"), false, targets...)
		for _, c := range clusters {
			memberReports(t, b, appsv1.SchemeGroupVersion.WithKind("Deployment"), c, workv1alpha1.ResourceHealthy, `{"observedGeneration":1,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,
				"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}`)
		}
		testenv.Eventually(t, hangGuard, "the hub's Deployment Available, rolled out and propagated", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
				return err
			}
			want := map[string]string{"Available": "True", "Progressing": "True", workv1alpha1.TemplateConditionPropagated: "True"}
			for _, c := range d.Status.Conditions {
				if want[string(c.Type)] == string(c.Status) {
					delete(want, string(c.Type))
				}
			}
			if len(want) > 0 || d.Status.Replicas != 3 || d.Status.ReadyReplicas != 3 || d.Status.ObservedGeneration != d.Generation {
				return fmt.Errorf("status %+v", d.Status)
			}
			return nil
		})
	})

	t.Run("a Job divided 1/2/3 runs 6 completions in all and is Complete once every share is", func(t *testing.T) {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "batch"},
			Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](6), Completions: ptr.To[int32](6), Template: pod}}
		create(t, j)
		shares := map[string]int64{"status-j1": 1, "status-j2": 2, "status-j3": 3}
		var targets []workv1alpha1.TargetCluster
		for _, c := range []string{"status-j1", "status-j2", "status-j3"} {
			targets = append(targets, workv1alpha1.TargetCluster{Name: c, Replicas: int32(shares[c])})
		}
		b := placeByHand(t, j, batchv1.SchemeGroupVersion.WithKind("Job"), true, targets...)
		for c, share := range shares {
			w := &workv1alpha1.Work{}
			testenv.Eventually(t, hangGuard, "the Work for "+c, func() error {
				return env.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(c), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}, w)
			})
			m := &unstructured.Unstructured{}
			if err := utiljson.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m.Object); err != nil {
				t.Fatal(err)
			}
			completions, _, _ := unstructured.NestedInt64(m.Object, "spec", "completions")
			parallelism, _, _ := unstructured.NestedInt64(m.Object, "spec", "parallelism")
			if completions != share || parallelism != share {
				t.Errorf("%s runs parallelism %d, completions %d; want %d of each", c, parallelism, completions, share)
			}
		}
		for c, share := range shares {
			memberReports(t, b, batchv1.SchemeGroupVersion.WithKind("Job"), c, workv1alpha1.ResourceHealthy, fmt.Sprintf(`{"succeeded":%d,"startTime":"2026-12-01T02:00:00Z","completionTime":"2026-12-01T02:05:00Z",
				"conditions":[{"type":"SuccessCriteriaMet","status":"True","reason":"CompletionsReached"},{"type":"Complete","status":"True","reason":"CompletionsReached"}]}`, share))
		}
		testenv.Eventually(t, hangGuard, "the hub's Job Complete with 6 succeeded", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), j); err != nil {
				return err
			}
			complete := false
			for _, c := range j.Status.Conditions {
				complete = complete || c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue
			}
			if !complete || j.Status.Succeeded != 6 || j.Status.CompletionTime == nil {
				return fmt.Errorf("status %+v", j.Status)
			}
			return nil
		})
		if b := (&workv1alpha1.ResourceBinding{}); env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: workv1alpha1.BindingName(schema.GroupKind{Group: "batch", Kind: "Job"}, "batch")}, b) == nil &&
			!meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionHealthy) {
			t.Errorf("binding conditions %+v", b.Status.Conditions)
		}
	})

	t.Run("a Job that failed in one cluster is Failed on the hub once nothing runs", func(t *testing.T) {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "flaky"},
			Spec: batchv1.JobSpec{Completions: ptr.To[int32](1), Template: pod}}
		create(t, j)
		b := placeByHand(t, j, batchv1.SchemeGroupVersion.WithKind("Job"), false,
			workv1alpha1.TargetCluster{Name: "status-f1", Replicas: 1}, workv1alpha1.TargetCluster{Name: "status-f2", Replicas: 1})
		gvk := batchv1.SchemeGroupVersion.WithKind("Job")
		memberReports(t, b, gvk, "status-f1", workv1alpha1.ResourceHealthy, `{"succeeded":1,"startTime":"2026-12-01T02:00:00Z","completionTime":"2026-12-01T02:05:00Z",
			"conditions":[{"type":"SuccessCriteriaMet","status":"True","reason":"CompletionsReached"},{"type":"Complete","status":"True","reason":"CompletionsReached"}]}`)
		memberReports(t, b, gvk, "status-f2", workv1alpha1.ResourceUnhealthy, `{"failed":7,"startTime":"2026-12-01T02:00:00Z",
			"conditions":[{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded"},{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}`)
		testenv.Eventually(t, hangGuard, "the hub's Job Failed", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), j); err != nil {
				return err
			}
			failed := false
			for _, c := range j.Status.Conditions {
				failed = failed || c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason == "BackoffLimitExceeded"
			}
			if !failed || j.Status.Failed != 7 || j.Status.StartTime == nil { // Duplicated: the most failures, the least success (0)
				return fmt.Errorf("status %+v", j.Status)
			}
			return nil
		})
	})
}
