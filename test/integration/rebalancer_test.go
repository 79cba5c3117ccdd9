package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}

func webDeployment(namespace, name string, labels map[string]string) *appsv1.Deployment {
	pod := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: pod},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pod},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}

// finished waits until the Rebalancer has finished and returns it.
func finished(t *testing.T, name string) *workv1alpha1.Rebalancer {
	t.Helper()
	rb := &workv1alpha1.Rebalancer{}
	testenv.Eventually(t, hangGuard, "rebalancer "+name+" finished", func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, rb); err != nil {
			return err
		}
		if rb.Status.FinishTime == nil {
			return fmt.Errorf("not finished: %+v", rb.Status)
		}
		return nil
	})
	return rb
}

// TestRebalancer: a Rebalancer sets rescheduleTriggeredAt of each named (or selected) template's binding to
// its creation time and reports each result; a template without a binding is NotFound; a finished
// Rebalancer goes away after its TTL.
func TestRebalancer(t *testing.T) {
	ctx := context.Background()
	ns := "rebalance"
	createNamespace(t, ns)
	create(t, namespacedPolicy(ns, "web", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}))
	create(t, webDeployment(ns, "web", nil))
	create(t, webDeployment(ns, "api", map[string]string{"tier": "backend"}))
	for _, name := range []string{"web", "api"} {
		testenv.Eventually(t, hangGuard, "binding of "+name, func() error {
			_, err := binding(ctx, deploymentKind, ns, name)
			return err
		})
	}
	ref := func(name string) workv1alpha1.WorkloadReference {
		return workv1alpha1.WorkloadReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}
	}

	t.Run("named and selected workloads", func(t *testing.T) {
		rb := &workv1alpha1.Rebalancer{ObjectMeta: metav1.ObjectMeta{Name: "rebalance-named"}, Spec: workv1alpha1.RebalancerSpec{
			Workloads: []workv1alpha1.WorkloadReference{ref("web"), ref("missing"),
				{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
			Selector: &workv1alpha1.TemplateSelector{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns,
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "backend"}}},
		}}
		create(t, rb)
		got := finished(t, rb.Name)
		if got.Spec.TTLSecondsAfterFinished == nil || *got.Spec.TTLSecondsAfterFinished != 300 {
			t.Errorf("ttlSecondsAfterFinished = %v, want the default 300", got.Spec.TTLSecondsAfterFinished)
		}
		want := map[string]workv1alpha1.RebalanceResult{
			ns + "/web": workv1alpha1.RebalanceSuccessful, ns + "/missing": workv1alpha1.RebalanceNotFound,
			"/web": workv1alpha1.RebalanceFailed, ns + "/api": workv1alpha1.RebalanceSuccessful,
		}
		if len(got.Status.ObservedWorkloads) != len(want) {
			t.Fatalf("observed %+v, want %d workloads", got.Status.ObservedWorkloads, len(want))
		}
		for _, o := range got.Status.ObservedWorkloads {
			key := o.Workload.Namespace + "/" + o.Workload.Name
			if o.Result != want[key] {
				t.Errorf("%s: %s (%s), want %s", key, o.Result, o.Message, want[key])
			}
			if o.Result != workv1alpha1.RebalanceSuccessful && o.Message == "" {
				t.Errorf("%s: %s without a message", key, o.Result)
			}
		}
		for _, name := range []string{"web", "api"} {
			b, err := binding(ctx, deploymentKind, ns, name)
			if err != nil {
				t.Fatal(err)
			}
			if at := b.Spec.RescheduleTriggeredAt; at == nil || !at.Equal(&got.CreationTimestamp) {
				t.Errorf("binding of %s: rescheduleTriggeredAt = %v, want the Rebalancer's creation time %v", name, at, got.CreationTimestamp)
			}
			if !managedBy(b, workv1alpha1.ControllerFieldManager("rebalancer"), "f:rescheduleTriggeredAt") {
				t.Errorf("binding of %s: rescheduleTriggeredAt is not owned by the rebalancer's field manager: %+v", name, b.ManagedFields)
			}
		}
	})

	t.Run("flotilla rebalance", func(t *testing.T) {
		out, err := runFlotilla(ctx, "rebalance", "deploy/api", "-n", ns)
		if err != nil {
			t.Fatalf("flotilla rebalance: %v\n%s", err, out)
		}
		name := strings.TrimSpace(out)
		t.Cleanup(func() {
			_ = env.Client.Delete(ctx, &workv1alpha1.Rebalancer{ObjectMeta: metav1.ObjectMeta{Name: name}})
		})
		got := finished(t, name)
		if r := got.Status.ObservedWorkloads; len(r) != 1 || r[0].Workload != ref("api") || r[0].Result != workv1alpha1.RebalanceSuccessful {
			t.Fatalf("observed %+v, want Deployment %s/api Successful", r, ns)
		}
		if out, err := runFlotilla(ctx, "rebalance", "nosuchkind/web", "-n", ns); err == nil || !strings.Contains(err.Error(), `unknown kind "nosuchkind"`) {
			t.Fatalf("an unknown kind: %v\n%s", err, out)
		}
	})

	t.Run("TTL deletes a finished Rebalancer", func(t *testing.T) {
		rb := &workv1alpha1.Rebalancer{ObjectMeta: metav1.ObjectMeta{Name: "rebalance-ttl"}, Spec: workv1alpha1.RebalancerSpec{
			Workloads: []workv1alpha1.WorkloadReference{ref("missing")}, TTLSecondsAfterFinished: ptr.To(int32(5)), // time to read the result first
		}}
		create(t, rb)
		got := finished(t, rb.Name)
		if r := got.Status.ObservedWorkloads; len(r) != 1 || r[0].Result != workv1alpha1.RebalanceNotFound {
			t.Fatalf("observed %+v, want one NotFound", r)
		}
		testenv.EventuallyGone(t, env.Client, rb, hangGuard)
	})
}

// managedBy reports whether manager owns the field of b (a managedFields key such as "f:replicas").
func managedBy(b client.Object, manager, field string) bool {
	for _, m := range b.GetManagedFields() {
		if m.Manager == manager && m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"`+field+`"`) {
			return true
		}
	}
	return false
}
