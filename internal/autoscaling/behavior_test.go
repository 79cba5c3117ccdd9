package autoscaling

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func rules(window int32, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, Policies: policies}
}

// TestNormalizeDefaults: with the HPA's default behavior, a scale-up goes at most to max(current + 4,
// current × 2) per 15 s, and a scale-down waits for the 300 s window's highest recommendation.
func TestNormalizeDefaults(t *testing.T) {
	b := NewBehavior()
	def := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	got, limit := b.Normalize("ns/web", def, 1, 100, 2, 20, epoch)
	if got != 6 || !limit.Limited || limit.Reason != "ScaleUpLimit" {
		t.Fatalf("scale-up from 2 to 20 = %d %+v, want 6 by ScaleUpLimit", got, limit)
	}
	b.Record("ns/web", def, 2, 6, epoch)
	// 5 s later the period's start is still 2: at most 6 again.
	if got, _ := b.Normalize("ns/web", def, 1, 100, 6, 20, epoch.Add(5*time.Second)); got != 6 {
		t.Fatalf("within the period = %d, want 6", got)
	}
	// 20 s later the period has passed: from 6, at most 12.
	if got, _ := b.Normalize("ns/web", def, 1, 100, 6, 20, epoch.Add(20*time.Second)); got != 12 {
		t.Fatalf("after the period = %d, want 12", got)
	}
	// A scale-down within 300 s of the recommendations of 20 stays at the current count.
	got, limit = b.Normalize("ns/web", def, 1, 100, 12, 3, epoch.Add(60*time.Second))
	if got != 12 || limit.Stabilized != "ScaleDownStabilized" {
		t.Fatalf("scale-down in the window = %d %+v, want 12, ScaleDownStabilized", got, limit)
	}
	// Past the window it goes down to the recommendation.
	if got, _ := b.Normalize("ns/web", def, 1, 100, 12, 3, epoch.Add(400*time.Second)); got != 3 {
		t.Fatalf("scale-down after the window = %d, want 3", got)
	}
}

// TestNormalizeBehavior: a behavior's own windows and policies, the Min select policy, Disabled, and the
// bounds.
func TestNormalizeBehavior(t *testing.T) {
	disabled := autoscalingv2.DisabledPolicySelect
	minChange := autoscalingv2.MinChangePolicySelect
	tests := []struct {
		name     string
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		min, max int32
		current  int32
		desired  int32
		want     int32
		reason   string
	}{
		{"one pod per minute up", &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: rules(0, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60})},
			1, 10, 2, 8, 3, "ScaleUpLimit"},
		{"the lesser of two policies with Min", &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &minChange, Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 60}, {Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60}}}},
			1, 100, 4, 40, 6, "ScaleUpLimit"},
		{"scale-up disabled", &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled}},
			1, 10, 2, 8, 2, "ScaleUpLimit"},
		{"maxReplicas", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, 1, 5, 4, 9, 5, "TooManyReplicas"},
		{"minReplicas on a scale-down without a window", &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(0,
			autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15})}, 3, 10, 5, 1, 3, "TooFewReplicas"},
		{"half per period down", &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(0,
			autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60})}, 1, 10, 9, 1, 4, "ScaleDownLimit"},
		{"no behavior: twice the count, or 4", nil, 1, 100, 3, 30, 6, "ScaleUpLimit"},
		{"no behavior: within range", nil, 1, 100, 3, 5, 5, "DesiredWithinRange"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, limit := NewBehavior().Normalize("ns/web", tt.behavior, tt.min, tt.max, tt.current, tt.desired, epoch)
			if got != tt.want || limit.Reason != tt.reason {
				t.Fatalf("= %d (%s), want %d (%s)", got, limit.Reason, tt.want, tt.reason)
			}
		})
	}
}

// TestNormalizeScaleUpWindow: a scale-up window holds the count to the lowest recent recommendation.
func TestNormalizeScaleUpWindow(t *testing.T) {
	b := NewBehavior()
	behavior := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(60)}
	// The first sight records the current count, 2, as a recommendation: within 60 s the count stays 2.
	if got, limit := b.Normalize("ns/web", behavior, 1, 10, 2, 8, epoch); got != 2 || limit.Stabilized != "ScaleUpStabilized" {
		t.Fatalf("= %d %+v, want 2 ScaleUpStabilized", got, limit)
	}
	if got, _ := b.Normalize("ns/web", behavior, 1, 10, 2, 8, epoch.Add(30*time.Second)); got != 2 {
		t.Fatalf("at 30 s = %d, want 2", got)
	}
	// After 61 s only the recommendations of 8 remain in the window.
	if got, _ := b.Normalize("ns/web", behavior, 1, 10, 2, 8, epoch.Add(61*time.Second)); got != 6 {
		t.Fatalf("at 61 s = %d, want 6 (8, limited to 2 + 4 by the default policies)", got)
	}
	b.Forget("ns/web")
	if len(b.states) != 0 {
		t.Fatal("Forget left the memory")
	}
}
