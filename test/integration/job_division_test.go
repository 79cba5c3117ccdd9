package integration

import (
	"context"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestJobDivision: through the detector, the scheduler and the binding controller, a Job divided over two
// clusters gets half its completions in each, and an Indexed Job is refused a divided placement with a
// reason on its binding (every cluster would run every index) and placed nowhere.
func TestJobDivision(t *testing.T) {
	ctx := context.Background()
	const namespace = "job-division"
	jobKind := schema.GroupKind{Group: "batch", Kind: "Job"}
	labels := map[string]string{"job-division": "yes"}
	for _, c := range []string{"division-a", "division-b"} {
		placeableCluster(t, c, labels)
		updateClusterStatus(t, c, func(s *clusterv1alpha1.ClusterStatus) {
			s.APIEnablements = append(s.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: "batch/v1",
				Resources: []clusterv1alpha1.APIResource{{Name: "jobs", Kind: "Job"}}})
		})
	}
	createNamespace(t, namespace)
	create(t, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "divided"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "batch/v1", Kind: "Job"}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:    &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}},
				ClusterTolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				ReplicaScheduling:  &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided},
			},
		}})
	job := func(name string, mode batchv1.CompletionMode) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](4), Completions: ptr.To[int32](4), CompletionMode: ptr.To(mode),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	}

	create(t, job("plain", batchv1.NonIndexedCompletion))
	testenv.Eventually(t, hangGuard, "each cluster runs 2 of the 4 completions", func() error {
		b, err := binding(ctx, jobKind, namespace, "plain")
		if err != nil {
			return err
		}
		if len(b.Spec.Clusters) != 2 {
			return fmt.Errorf("placed on %+v", b.Spec.Clusters)
		}
		for _, target := range b.Spec.Clusters {
			w := &workv1alpha1.Work{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(target.Name), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}, w); err != nil {
				return err
			}
			m := map[string]any{}
			if err := utiljson.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m); err != nil {
				return err
			}
			completions, _, _ := unstructured.NestedInt64(m, "spec", "completions")
			parallelism, _, _ := unstructured.NestedInt64(m, "spec", "parallelism")
			if completions != 2 || parallelism != 2 {
				return fmt.Errorf("%s runs parallelism %d, completions %d", target.Name, parallelism, completions)
			}
		}
		return nil
	})

	create(t, job("indexed", batchv1.IndexedCompletion))
	testenv.Eventually(t, hangGuard, "the Indexed Job refused a divided placement", func() error {
		b, err := binding(ctx, jobKind, namespace, "indexed")
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != scheduler.ReasonNotDivisible || len(b.Spec.Clusters) != 0 {
			return fmt.Errorf("Scheduled %+v, placed on %+v", c, b.Spec.Clusters)
		}
		return nil
	})
}
