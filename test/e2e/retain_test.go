package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestMemberAutoscalerKeepsItsReplicas: a Deployment of 2 replicas is placed on m1 (pull) and m3 (push); in
// each member a HorizontalPodAutoscaler targets it and the Deployment is scaled through its scale
// subresource under another field manager, as the autoscaler does. The members run no metrics server, so
// no autoscaler would scale on load; the test scales itself (minReplicas = maxReplicas = the new count, so
// a member's autoscaler controller, if it acts, agrees). Flotilla then leaves the count alone, also when the template changes
// and its Works are applied again, and the hub's status shows the members' count.
func TestMemberAutoscalerKeepsItsReplicas(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	scaled := map[*framework.Cluster]int32{f.m1: 4, f.m3: 4}
	// The autoscalers come first, so that the executors know them from the Deployment's first apply: an
	// autoscaler's controller acts only after its sync period, an executor sees a new autoscaler within
	// moments; this test scales at once.
	for m, replicas := range scaled {
		f.memberNamespace(t, m)
		hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To(replicas), MaxReplicas: replicas,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
		if _, err := m.Kube.AutoscalingV2().HorizontalPodAutoscalers(f.ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.createDeployment(t, deployment(f.ns, "web", 2))
	f.createPolicy(t, "web", deploymentSelector("web"), placementOn("m1", "m3"))
	testenv.Eventually(t, 2*time.Minute, "web placed", func() error {
		for m := range scaled {
			if got, _, err := replicasIn(ctx, m, f.ns, "web"); err != nil || got < 0 {
				return fmt.Errorf("not in %s yet (%v)", m.Name, err)
			}
		}
		return nil
	})

	for m, replicas := range scaled {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			scale, err := m.Kube.AppsV1().Deployments(f.ns).GetScale(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			scale.Spec.Replicas = replicas
			_, err = m.Kube.AppsV1().Deployments(f.ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{FieldManager: "autoscaler-e2e"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitPlaced(t, f.ns, "web", scaled)

	// A template change applies the Works again; once it reached the members, their counts hold.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := f.hub.Kube.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Labels = map[string]string{"revision": "2"}
		_, err = f.hub.Kube.AppsV1().Deployments(f.ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the template change applied in the members", func() error {
		for m := range scaled {
			if _, d, err := replicasIn(ctx, m, f.ns, "web"); err != nil || d == nil || d.Labels["revision"] != "2" {
				return fmt.Errorf("%s does not have the new label yet (%v)", m.Name, err)
			}
		}
		return nil
	})
	for m, replicas := range scaled {
		holdsReplicas(t, m, f.ns, "web", replicas, 15*time.Second)
	}

	testenv.Eventually(t, time.Minute, "the hub's status shows the members' counts", func() error {
		d, err := f.hub.Kube.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		// A Duplicated Deployment's status says how far every cluster got: 4 once both run 4 (the
		// template asks for 2).
		if d.Status.Replicas != 4 || d.Status.AvailableReplicas != 4 {
			return fmt.Errorf("the hub's status has %d replicas, %d available, want the members' 4", d.Status.Replicas, d.Status.AvailableReplicas)
		}
		return nil
	})
}

// holdsReplicas watches a member Deployment for a while and fails at the first moment its replicas are
// not want, however briefly.
func holdsReplicas(t *testing.T, m *framework.Cluster, namespace, name string, want int32, period time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), period)
	defer cancel()
	for ctx.Err() == nil {
		w, err := m.Kube.AppsV1().Deployments(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			t.Fatal(err)
		}
		for ev := range w.ResultChan() { // a new watch starts with the object as it is
			if d, ok := ev.Object.(*appsv1.Deployment); ok && ptr.Deref(d.Spec.Replicas, 1) != want {
				w.Stop()
				t.Fatalf("%s: %s has %d replicas, want the member's %d (managers %v)", m.Name, name, ptr.Deref(d.Spec.Replicas, 1), want, managers(d))
			}
		}
	}
}

func managers(d *appsv1.Deployment) []string {
	var out []string
	for _, mf := range d.ManagedFields {
		out = append(out, mf.Manager+"/"+string(mf.Operation)+"/"+mf.Subresource)
	}
	return out
}
