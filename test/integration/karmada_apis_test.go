package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mirror"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// karmadaGettingStarted is Karmada's getting-started policy, unchanged but for its namespace.
const karmadaGettingStarted = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
  namespace: karmada-apis
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
    replicaScheduling:
      replicaDivisionPreference: Weighted
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
          - targetCluster:
              clusterNames:
                - member1
            weight: 1
          - targetCluster:
              clusterNames:
                - member2
            weight: 1
`

// TestKarmadaAPIsServed: Karmada's getting-started PropagationPolicy, applied unchanged in policy.karmada.io,
// gets a twin in policy.flotilla.io with its spec, owned by it, plus Karmada's failover default (no cluster
// failover without spec.failover.cluster: both health taints tolerated for ever); the twin claims the
// template, and that status shows on the Karmada object; one with spec.failover.cluster has no tolerations
// added. Every other Karmada kind (override policies, FederatedResourceQuota,
// ResourceInterpreterCustomization) gets its twin; a bad Karmada override is refused when written, with the
// twin's message; a Karmada object whose name a Flotilla object already has says so and leaves it alone;
// deleting the Karmada object deletes its twin.
func TestKarmadaAPIsServed(t *testing.T) {
	ctx := context.Background()
	const ns = "karmada-apis"
	createNamespace(t, ns)

	peer := parseObject(t, karmadaGettingStarted)
	if err := env.Client.Create(ctx, peer); err != nil {
		t.Fatal(err)
	}
	twin := &policyv1alpha1.PropagationPolicy{}
	testenv.Eventually(t, 30*time.Second, "the twin of nginx-propagation", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx-propagation"}, twin)
	})
	if !metav1.IsControlledBy(twin, peer) {
		t.Errorf("the twin is not owned by the Karmada policy: %v", twin.OwnerReferences)
	}
	if s := twin.Spec.Placement.ReplicaScheduling; s == nil || s.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingDivided ||
		s.WeightPreference == nil || len(s.WeightPreference.StaticWeightList) != 2 || !equality.Semantic.DeepEqual(twin.Spec.Placement.ClusterAffinity.ClusterNames, []string{"member1", "member2"}) {
		t.Errorf("the twin's placement is not the Karmada policy's: %+v", twin.Spec.Placement)
	}
	wantTolerations := []corev1.Toleration{
		{Key: clusterv1alpha1.TaintClusterUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: clusterv1alpha1.TaintClusterNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
	if !equality.Semantic.DeepEqual(twin.Spec.Placement.ClusterTolerations, wantTolerations) {
		t.Errorf("without spec.failover.cluster the twin must tolerate the health taints for ever, got %+v", twin.Spec.Placement.ClusterTolerations)
	}

	// The twin claims the template; its status shows on the Karmada object.
	labels := map[string]string{"app": "nginx"}
	nginx := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}}}}}
	create(t, nginx)
	testenv.Eventually(t, 30*time.Second, "the twin's status on the Karmada policy", func() error {
		got := peer.DeepCopy()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(peer), got); err != nil {
			return err
		}
		if claimed, _, _ := unstructured.NestedInt64(got.Object, "status", "claimedTemplates"); claimed != 1 {
			return fmt.Errorf("status %v", got.Object["status"])
		}
		return nil
	})

	// With spec.failover.cluster, Flotilla's failover applies as it is: no tolerations added.
	withFailover := parseObject(t, strings.Replace(strings.Replace(karmadaGettingStarted, "name: nginx-propagation", "name: with-failover", 1),
		"spec:\n", "spec:\n  failover:\n    cluster: {purgeMode: Gracefully}\n", 1))
	if err := env.Client.Create(ctx, withFailover); err != nil {
		t.Fatal(err)
	}
	withFailoverTwin := &policyv1alpha1.PropagationPolicy{}
	testenv.Eventually(t, 30*time.Second, "the twin of with-failover", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "with-failover"}, withFailoverTwin)
	})
	if len(withFailoverTwin.Spec.Placement.ClusterTolerations) != 0 || withFailoverTwin.Spec.Failover == nil {
		t.Errorf("with spec.failover.cluster the twin must keep Flotilla's failover: %+v", withFailoverTwin.Spec)
	}

	// Every other kind gets its twin.
	for _, tt := range []struct {
		doc  string
		twin client.Object
	}{
		{"apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata: {name: images, namespace: karmada-apis}\nspec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]\n  overrideRules:\n    - targetCluster: {clusterNames: [member1]}\n      overriders:\n        imageOverrider: [{component: Registry, operator: replace, value: registry.example.com}]\n",
			&policyv1alpha1.OverridePolicy{}},
		{"apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterOverridePolicy\nmetadata: {name: karmada-apis-labels}\nspec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  overrideRules:\n    - overriders:\n        labelsOverrider: [{operator: add, value: {team: blue}}]\n",
			&policyv1alpha1.ClusterOverridePolicy{}},
		{"apiVersion: policy.karmada.io/v1alpha1\nkind: FederatedResourceQuota\nmetadata: {name: team, namespace: karmada-apis}\nspec:\n  overall: {cpu: \"10\"}\n",
			&policyv1alpha1.FederatedResourceQuota{}},
		{"apiVersion: autoscaling.karmada.io/v1alpha1\nkind: FederatedHPA\nmetadata: {name: nginx, namespace: karmada-apis}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nginx}\n  minReplicas: 1\n  maxReplicas: 5\n  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}}]\n",
			&autoscalingv1alpha1.FederatedHPA{}},
		{"apiVersion: config.karmada.io/v1alpha1\nkind: ResourceInterpreterCustomization\nmetadata: {name: karmada-apis-replicas}\nspec:\n  target: {apiVersion: example.io/v1, kind: Widget}\n  customizations:\n    replicaResource:\n      luaScript: |\n        function GetReplicas(obj)\n          return obj.spec.size, {}\n        end\n",
			&configv1alpha1.InterpreterCustomization{}},
	} {
		obj := parseObject(t, tt.doc)
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
		testenv.Eventually(t, 30*time.Second, "the twin of "+obj.GetKind()+" "+obj.GetName(), func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(obj), tt.twin)
		})
		if !metav1.IsControlledBy(tt.twin, obj) {
			t.Errorf("the twin of %s %s is not owned by it", obj.GetKind(), obj.GetName())
		}
	}

	// Refused when written, as the twin would be.
	bad := parseObject(t, "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata: {name: bad, namespace: karmada-apis}\nspec:\n  overrideRules:\n    - overriders:\n        plaintext: [{path: /spec/replicas, operator: add}]\n")
	if err := createDryRun(bad); err == nil || !strings.Contains(err.Error(), "value is required for add and replace") {
		t.Errorf("a Karmada override without a value: want it refused, got %v", err)
	}

	// Karmada fields Flotilla does not act on are not in the schema: refused as unknown (kubectl's strict
	// field validation), never taken and ignored.
	for field, spec := range map[string]string{
		"workloadAffinity":   "  placement:\n    workloadAffinity: {}\n",
		"overflowAffinities": "  placement:\n    clusterAffinities: [{affinityName: a, overflowAffinities: []}]\n",
		"association":        "  association: true\n",
	} {
		doc := "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: unknown, namespace: karmada-apis}\nspec:\n" +
			"  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n" + spec
		err := env.Client.Create(ctx, parseObject(t, doc), client.DryRunAll, client.FieldValidation("Strict"))
		if err == nil || !strings.Contains(err.Error(), "unknown field") || !strings.Contains(err.Error(), field) {
			t.Errorf("a Karmada policy with %s: want it refused as an unknown field, got %v", field, err)
		}
	}

	// A name a Flotilla object has: the Flotilla object is left alone, and an event says why.
	taken := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns}, Spec: policyv1alpha1.PropagationSpec{
		ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "mine"}}}}
	create(t, taken)
	takenPeer := parseObject(t, strings.Replace(karmadaGettingStarted, "name: nginx-propagation", "name: taken", 1))
	if err := env.Client.Create(ctx, takenPeer); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "an event saying the name is taken", func() error {
		events, err := env.Kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == mirror.ReasonNameTaken && e.Regarding.Name == "taken" {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(taken), taken); err != nil || len(taken.OwnerReferences) != 0 || taken.Spec.ResourceSelectors[0].Kind != "ConfigMap" {
		t.Errorf("the Flotilla policy that had the name must be left alone: %v %+v", err, taken)
	}

	// Deleting the Karmada policy deletes its twin.
	if err := env.Client.Delete(ctx, peer); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the twin deleted with the Karmada policy", func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx-propagation"}, &policyv1alpha1.PropagationPolicy{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}
