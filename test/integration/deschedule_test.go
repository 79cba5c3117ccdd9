package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestUnschedulableReplicasMove: replicas divided by capacity that a cluster reports unschedulable for
// longer than the policy's descheduleAfter leave it for a cluster with room; the others stay, the template's
// events say so. descheduleAfter on a static division is refused at admission.
func TestUnschedulableReplicasMove(t *testing.T) {
	ctx := context.Background()
	const ns = "deschedule"
	createNamespace(t, ns)
	selector := map[string]string{"deschedule": "yes"}
	for _, name := range []string{"deschedule-a", "deschedule-b"} {
		placeableCluster(t, name, selector)
		updateClusterStatus(t, name, func(s *clusterv1alpha1.ClusterStatus) {
			s.APIEnablements = append(s.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: "apps/v1",
				Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}})
		})
	}
	labels := map[string]string{"app": "web"}
	create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(6)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}}})
	policy := placedPolicy(ns, selector)
	policy.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}
	policy.Spec.Placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided,
		WeightPreference: &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
		DescheduleAfter:  &metav1.Duration{Duration: 30 * time.Second}}
	create(t, policy)

	kind := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	placed := func(want string) {
		t.Helper()
		testenv.Eventually(t, hangGuard, "web placed "+want, func() error {
			b, err := binding(ctx, kind, ns, "web")
			if err != nil {
				return err
			}
			var got []string
			for _, c := range b.Spec.Clusters {
				got = append(got, fmt.Sprintf("%s=%d", c.Name, c.Replicas))
			}
			if strings.Join(got, ",") != want {
				return fmt.Errorf("placed %v", got)
			}
			return nil
		})
	}
	placed("deschedule-a=3,deschedule-b=3")

	// a's scheduler has had 1 of its 3 pods pending for a minute, longer than the policy's 30 s.
	b, err := binding(ctx, kind, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	w := &workv1alpha1.Work{}
	testenv.Eventually(t, hangGuard, "web's Work in deschedule-a", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace("deschedule-a"), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}, w)
	})
	// The hub's controllers may write the Work between the read and this report: it is retried on a
	// conflict, as an agent's report is.
	now := metav1.Now()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		w.Status = workv1alpha1.WorkStatus{
			Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied",
				ObservedGeneration: w.Generation, LastTransitionTime: now}},
			ManifestStatuses: []workv1alpha1.ManifestStatus{{
				Identifier: workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"},
				Applied:    true, Health: workv1alpha1.ResourceUnhealthy,
				Status:        &runtime.RawExtension{Raw: []byte(`{"replicas":3,"readyReplicas":2}`)},
				Unschedulable: &workv1alpha1.UnschedulableReplicas{Replicas: 1, Since: metav1.NewTime(now.Add(-time.Minute))},
				Conditions:    []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now}},
			}},
		}
		return env.Client.Status().Update(ctx, w)
	})
	if err != nil {
		t.Fatal(err)
	}
	placed("deschedule-a=2,deschedule-b=4")
	testenv.Eventually(t, hangGuard, "a Descheduled event on the template", func() error {
		events, err := env.Kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=web"})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "Descheduled" && strings.Contains(e.Note, "1 from deschedule-a (unschedulable there since") {
				return nil
			}
		}
		return fmt.Errorf("%d events, none Descheduled", len(events.Items))
	})

	static := placedPolicy(ns, selector)
	static.Name = "static"
	static.Spec.Placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided,
		DescheduleAfter: &metav1.Duration{Duration: time.Minute}}
	if err := env.Client.Create(ctx, static); err == nil || !strings.Contains(err.Error(), "descheduleAfter applies only to replicas divided by capacity") {
		t.Fatalf("descheduleAfter on equal weights: %v, want refused", err)
	}
}
