package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// karmadaCronYAML is a Karmada user's FederatedHPA and the CronFederatedHPA that raises its floor every
// minute, unchanged.
const karmadaCronYAML = `apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata:
  name: web
  namespace: karmada-cron
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 50}
---
apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata:
  name: web-peak
  namespace: karmada-cron
spec:
  scaleTargetRef: {apiVersion: autoscaling.karmada.io/v1alpha1, kind: FederatedHPA, name: web}
  rules:
  - name: peak
    schedule: "* * * * *"
    targetMinReplicas: 3`

// TestKarmadaCronFederatedHPA: a CronFederatedHPA of Karmada's group that targets a FederatedHPA of Karmada's
// group changes that FederatedHPA's bounds at its schedule, and the Flotilla twin follows (changing the twin
// instead would be put back by the mirror).
func TestKarmadaCronFederatedHPA(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "karmada-cron")
	for _, doc := range strings.Split(karmadaCronYAML, "\n---\n") {
		obj := parseObject(t, doc)
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	// The rule runs at the next minute.
	testenv.Eventually(t, 90*time.Second, "the Karmada FederatedHPA's minReplicas raised to 3, and its twin's", func() error {
		peer := &unstructured.Unstructured{}
		peer.SetAPIVersion("autoscaling.karmada.io/v1alpha1")
		peer.SetKind("FederatedHPA")
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "karmada-cron", Name: "web"}, peer); err != nil {
			return err
		}
		twin := &autoscalingv1alpha1.FederatedHPA{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "karmada-cron", Name: "web"}, twin); err != nil {
			return err
		}
		min, _, _ := unstructured.NestedInt64(peer.Object, "spec", "minReplicas")
		if min != 3 || twin.Spec.MinReplicas == nil || *twin.Spec.MinReplicas != 3 || twin.Spec.MaxReplicas != 10 {
			return fmt.Errorf("Karmada's minReplicas %d, the twin's %v (max %d)", min, twin.Spec.MinReplicas, twin.Spec.MaxReplicas)
		}
		return nil
	})
}
