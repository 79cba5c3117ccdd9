package autoscaling

import (
	"testing"

	"sigs.k8s.io/yaml"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
)

// TestKarmadaFields: objects written with Karmada's field names (autoscaling.karmada.io/v1alpha1, the
// apiVersion changed) decode strictly, with nothing left over, spec and status alike.
func TestKarmadaFields(t *testing.T) {
	fhpa := `apiVersion: autoscaling.flotilla.io/v1alpha1
kind: FederatedHPA
metadata: {name: nginx, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nginx}
  minReplicas: 1
  maxReplicas: 10
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 10
    scaleUp:
      stabilizationWindowSeconds: 10
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 10}
status:
  currentReplicas: 2
  desiredReplicas: 3
  lastScaleTime: "2026-01-01T00:00:00Z"
  currentMetrics:
  - type: Resource
    resource: {name: cpu, current: {averageUtilization: 30, averageValue: 30m}}
  conditions:
  - {type: AbleToScale, status: "True", reason: SucceededRescale, message: ok, lastTransitionTime: "2026-01-01T00:00:00Z"}
`
	cron := `apiVersion: autoscaling.flotilla.io/v1alpha1
kind: CronFederatedHPA
metadata: {name: nginx-cronfhpa, namespace: default}
spec:
  scaleTargetRef: {apiVersion: autoscaling.flotilla.io/v1alpha1, kind: FederatedHPA, name: nginx}
  rules:
  - name: scale-up
    schedule: "*/1 * * * *"
    targetMinReplicas: 5
    targetMaxReplicas: 20
    suspend: false
    timeZone: Asia/Shanghai
    successfulHistoryLimit: 3
    failedHistoryLimit: 3
status:
  executionHistories:
  - ruleName: scale-up
    nextExecutionTime: "2026-01-01T00:01:00Z"
    successfulExecutions:
    - {scheduleTime: "2026-01-01T00:00:00Z", executionTime: "2026-01-01T00:00:01Z", appliedMinReplicas: 5, appliedMaxReplicas: 20}
    failedExecutions:
    - {scheduleTime: "2025-12-31T23:59:00Z", executionTime: "2025-12-31T23:59:01Z", message: not found}
`
	if err := yaml.UnmarshalStrict([]byte(fhpa), &autoscalingv1alpha1.FederatedHPA{}); err != nil {
		t.Errorf("FederatedHPA: %v", err)
	}
	c := &autoscalingv1alpha1.CronFederatedHPA{}
	if err := yaml.UnmarshalStrict([]byte(cron), c); err != nil {
		t.Errorf("CronFederatedHPA: %v", err)
	}
	if _, err := ParseSchedule(c.Spec.Rules[0].Schedule, c.Spec.Rules[0].TimeZone); err != nil {
		t.Errorf("the rule's schedule: %v", err)
	}
}
