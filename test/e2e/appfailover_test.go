package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestApplicationFailoverMovesOffAnUnhealthyCluster: a Deployment duplicated on two of the three members
// (m1 and m2) never becomes Available on m2, where an override asks for a node no member has. After the
// policy's 10 s of application failover toleration it moves off m2 to m3; m2's copy stays until m3's is
// Available, and m3's copy carries the label the policy's statePreservation took from m2's status. m1, where
// it ran well, keeps its copy without the label.
func TestApplicationFailoverMovesOffAnUnhealthyCluster(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	const label = "failover.example.io/replicas"
	f.createDeployment(t, deployment(f.ns, "flaky", 2))
	placement := placementOn("m1", "m2", "m3")
	placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 2}}
	f.createPolicy(t, "flaky", deploymentSelector("flaky"), placement, func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(int32(10))},
			PurgeMode:          policyv1alpha1.PurgeGracefully,
			StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
				{AliasLabelName: label, JSONPath: "{.replicas}"}}},
		}}
	})
	stuck := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck-on-m2", Namespace: f.ns},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{deploymentSelector("flaky")},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/template/spec/nodeSelector",
					Operator: "add", Value: &apiextensionsv1.JSON{Raw: []byte(`{"flotilla.example.io/no-such-node":"true"}`)}}}},
			}},
		},
	}
	if err := f.hub.Client.Create(ctx, stuck); err != nil {
		t.Fatal(err)
	}

	// Placed on m1 and m2 first; m2's copy never becomes Available.
	testenv.Eventually(t, 2*time.Minute, "flaky on m1 and m2", func() error {
		for _, c := range []*framework.Cluster{f.m1, f.m2} {
			if n, _, err := replicasIn(ctx, c, f.ns, "flaky"); err != nil || n != 2 {
				return fmt.Errorf("%s runs %d replicas (%v), want 2", c.Name, n, err)
			}
		}
		return nil
	})

	// It moves to m3, and m2's copy goes only once m3's is Available. Sampling two members one after the
	// other cannot show which came first (the hub can turn m3's availability into m2's removal between the
	// two reads), so a finalizer holds m2's copy once Flotilla deletes it: its deletion time is then compared
	// with the time m3's copy turned Available.
	hold := []byte(`{"metadata":{"finalizers":["flotilla.example.io/hold"]}}`)
	if _, err := f.m2.Kube.AppsV1().Deployments(f.ns).Patch(ctx, "flaky", types.MergePatchType, hold, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = f.m2.Kube.AppsV1().Deployments(f.ns).Patch(context.Background(), "flaky", types.MergePatchType, release, metav1.PatchOptions{})
	})
	var deleted *metav1.Time
	testenv.Eventually(t, 3*time.Minute, "flaky moved off m2 to m3", func() error {
		n2, on2, err := replicasIn(ctx, f.m2, f.ns, "flaky")
		if err != nil || n2 == -1 {
			return fmt.Errorf("m2's copy is gone although a finalizer holds it (%v)", err)
		}
		if deleted = on2.DeletionTimestamp; deleted == nil {
			return fmt.Errorf("m2's copy is not deleted yet")
		}
		return nil
	})
	_, on3, err := replicasIn(ctx, f.m3, f.ns, "flaky")
	if err != nil || on3 == nil {
		t.Fatalf("m2's copy was deleted while m3 has none (%v)", err)
	}
	available := deploymentCondition(on3, appsv1.DeploymentAvailable)
	if on3.Status.AvailableReplicas != 2 || available == nil || available.Status != "True" || available.LastTransitionTime.After(deleted.Time) {
		t.Fatalf("m2's copy was deleted at %s, before m3's was Available (m3: %d available, condition %+v)", deleted, on3.Status.AvailableReplicas, available)
	}
	release := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := f.m2.Kube.AppsV1().Deployments(f.ns).Patch(ctx, "flaky", types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "m2's copy gone", func() error {
		if n2, _, err := replicasIn(ctx, f.m2, f.ns, "flaky"); err != nil || n2 != -1 {
			return fmt.Errorf("m2 still runs %d replicas (%v)", n2, err)
		}
		return nil
	})
	_, on3, err = replicasIn(ctx, f.m3, f.ns, "flaky")
	if err != nil || on3 == nil || on3.Labels[label] != "2" {
		t.Fatalf("m3's copy (%v) has labels %v, want %s=2 preserved from m2's status", err, labelsOf(on3), label)
	}
	_, on1, err := replicasIn(ctx, f.m1, f.ns, "flaky")
	if err != nil || on1 == nil || on1.Labels[label] != "" {
		t.Fatalf("m1's copy (%v) has labels %v, want it running without the preserved label", err, labelsOf(on1))
	}
	events, err := f.hub.Kube.EventsV1().Events(f.ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=flaky"})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range events.Items {
		notes = append(notes, e.Note)
	}
	if all := strings.Join(notes, "\n"); !strings.Contains(all, "evicting from m2: application unhealthy") || !strings.Contains(all, "removing from m2") {
		t.Errorf("events on the template:\n%s\nwant the eviction from m2 and its end", all)
	}
}

// deploymentCondition returns a Deployment's condition of type t, or nil.
func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func labelsOf(d *appsv1.Deployment) map[string]string {
	if d == nil {
		return nil
	}
	return d.Labels
}
