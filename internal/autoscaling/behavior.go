package autoscaling

import (
	"math"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	autoscalingv2defaults "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
)

// Limit is why a normalized count differs from the recommendation, or that it does not: the reasons and
// messages of the HorizontalPodAutoscaler's AbleToScale and ScalingLimited conditions.
type Limit struct {
	// Stabilized is the AbleToScale reason: ScaleUpStabilized, ScaleDownStabilized or ReadyForNewScale.
	Stabilized, StabilizedMessage string
	// Limited says whether the rate or the bounds cut the stabilized count; Reason and Message say which.
	Limited         bool
	Reason, Message string
}

// Behavior is the HorizontalPodAutoscaler's memory of one autoscaler: its recent recommendations and scale
// events, against which the stabilization windows and rate policies are applied (upstream keeps the same in
// the controller's memory, so it also starts afresh when the controller does).
type Behavior struct {
	mu     sync.Mutex
	states map[string]*memory
}

type memory struct {
	recommendations []recommendation
	up, down        []scaleEvent
}

type recommendation struct {
	replicas int32
	at       time.Time
}

type scaleEvent struct {
	change   int32
	at       time.Time
	outdated bool
}

// NewBehavior returns an empty memory.
func NewBehavior() *Behavior { return &Behavior{states: map[string]*memory{}} }

// Forget drops an autoscaler's memory, when it is deleted.
func (b *Behavior) Forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.states, key)
}

func (b *Behavior) state(key string, current int32, now time.Time) *memory {
	m := b.states[key]
	if m == nil {
		// Upstream's recordInitialRecommendation: the current count is the first recommendation.
		m = &memory{recommendations: []recommendation{{current, now}}}
		b.states[key] = m
	}
	return m
}

// DownscaleStabilization is kube-controller-manager's default scale-down stabilization window, used when a
// behavior does not set one and when there is no behavior at all.
const DownscaleStabilization = 5 * time.Minute

// Rules fills a behavior's rules with the HorizontalPodAutoscaler's defaults, as the autoscaling/v2 API and
// the controller do: scale up at once by up to 100% or 4 pods per 15 s, whichever is more; scale down by up
// to 100% per 15 s after a 300 s stabilization window.
func Rules(behavior *autoscalingv2.HorizontalPodAutoscalerBehavior) (up, down *autoscalingv2.HPAScalingRules) {
	if behavior == nil {
		behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	}
	up, down = autoscalingv2defaults.GenerateHPAScaleUpRules(behavior.ScaleUp), autoscalingv2defaults.GenerateHPAScaleDownRules(behavior.ScaleDown)
	if down.StabilizationWindowSeconds == nil {
		window := int32(DownscaleStabilization.Seconds())
		down.StabilizationWindowSeconds = &window
	}
	return up, down
}

// Normalize stabilizes desired, records it, and bounds the result. With a behavior it is upstream's
// normalizeDesiredReplicasWithBehaviors (the windows, then the rate policies and minReplicas..maxReplicas);
// without one, upstream's normalizeDesiredReplicas (the highest recommendation of the default scale-down
// window, then minReplicas..maxReplicas and at most twice the current count, or 4).
func (b *Behavior) Normalize(key string, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior, minReplicas, maxReplicas, current, desired int32, now time.Time) (int32, Limit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.state(key, current, now)
	if behavior == nil {
		return m.normalizePlain(minReplicas, maxReplicas, current, desired, now)
	}
	up, down := Rules(behavior)
	stabilized, reason, message := m.stabilize(up, down, current, desired, now)
	limit := Limit{Stabilized: "ReadyForNewScale", StabilizedMessage: "recommended size matches current size"}
	if stabilized != desired {
		limit.Stabilized, limit.StabilizedMessage = reason, message
	}
	out, reason, message := m.bound(up, down, minReplicas, maxReplicas, current, stabilized, now)
	limit.Limited, limit.Reason, limit.Message = out != stabilized, reason, message
	return out, limit
}

// normalizePlain is upstream's normalizeDesiredReplicas, for an autoscaler without a behavior.
func (m *memory) normalizePlain(minReplicas, maxReplicas, current, desired int32, now time.Time) (int32, Limit) {
	stabilized := desired
	cutoff := now.Add(-DownscaleStabilization)
	slot := -1
	for i, r := range m.recommendations {
		if r.at.Before(cutoff) {
			slot = i
		} else {
			stabilized = max(stabilized, r.replicas)
		}
	}
	rec := recommendation{desired, now}
	if slot >= 0 {
		m.recommendations[slot] = rec
	} else {
		m.recommendations = append(m.recommendations, rec)
	}
	limit := Limit{Stabilized: "ReadyForNewScale", StabilizedMessage: "recommended size matches current size"}
	if stabilized != desired {
		limit.Stabilized, limit.StabilizedMessage = "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
	}
	upLimit := int32(math.Max(2*float64(current), 4))
	allowed, reason, message := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if maxReplicas > upLimit {
		allowed, reason, message = upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	out := stabilized
	switch {
	case stabilized < minReplicas:
		out, reason, message = minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case stabilized > allowed:
		out = allowed
	default:
		reason, message = "DesiredWithinRange", "the desired count is within the acceptable range"
	}
	limit.Limited, limit.Reason, limit.Message = out != stabilized, reason, message
	return out, limit
}

// Record is upstream's storeScaleEvent: a scale from prev to next counts against the rate policies. Without
// a behavior nothing is stored, as upstream.
func (b *Behavior) Record(key string, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) {
	if behavior == nil {
		return
	}
	up, down := Rules(behavior)
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.state(key, prev, now)
	if next > prev {
		m.up = storeEvent(m.up, longestPeriod(up), next-prev, now)
	} else {
		m.down = storeEvent(m.down, longestPeriod(down), prev-next, now)
	}
}

// storeEvent marks events older than the longest policy period outdated and puts the new one in the last
// outdated slot, or at the end.
func storeEvent(events []scaleEvent, period int32, change int32, now time.Time) []scaleEvent {
	cutoff := now.Add(-time.Duration(period) * time.Second)
	slot := -1
	for i := range events {
		if events[i].at.Before(cutoff) {
			events[i].outdated = true
		}
		if events[i].outdated {
			slot = i
		}
	}
	e := scaleEvent{change: change, at: now}
	if slot >= 0 {
		events[slot] = e
		return events
	}
	return append(events, e)
}

// stabilize is upstream's stabilizeRecommendationWithBehaviors: the count moves up no further than the
// lowest recommendation of the scale-up window and down no further than the highest of the scale-down window.
func (m *memory) stabilize(up, down *autoscalingv2.HPAScalingRules, current, desired int32, now time.Time) (int32, string, string) {
	upCutoff := now.Add(-time.Duration(*up.StabilizationWindowSeconds) * time.Second)
	downCutoff := now.Add(-time.Duration(*down.StabilizationWindowSeconds) * time.Second)
	upRec, downRec := desired, desired
	slot := -1
	for i, r := range m.recommendations {
		if r.at.After(upCutoff) {
			upRec = min(r.replicas, upRec)
		}
		if r.at.After(downCutoff) {
			downRec = max(r.replicas, downRec)
		}
		if r.at.Before(upCutoff) && r.at.Before(downCutoff) {
			slot = i
		}
	}
	out := max(current, upRec)
	out = min(out, downRec)
	rec := recommendation{desired, now}
	if slot >= 0 {
		m.recommendations[slot] = rec
	} else {
		m.recommendations = append(m.recommendations, rec)
	}
	if desired >= current {
		return out, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return out, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// bound is upstream's convertDesiredReplicasWithBehaviorRate.
func (m *memory) bound(up, down *autoscalingv2.HPAScalingRules, minReplicas, maxReplicas, current, desired int32, now time.Time) (int32, string, string) {
	switch {
	case desired > current:
		limit := max(scaleUpLimit(current, m.up, m.down, up, now), current)
		allowed, reason, message := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if allowed > limit {
			allowed, reason, message = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > allowed {
			return allowed, reason, message
		}
	case desired < current:
		limit := min(scaleDownLimit(current, m.up, m.down, down, now), current)
		allowed, reason, message := minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if allowed < limit {
			allowed, reason, message = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < allowed {
			return allowed, reason, message
		}
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// changeInPeriod sums the events of the last period seconds.
func changeInPeriod(period int32, events []scaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(period) * time.Second)
	var n int32
	for _, e := range events {
		if e.at.After(cutoff) {
			n += e.change
		}
	}
	return n
}

// periodStart is the count at the start of a policy's period: the current count less what was added and plus
// what was removed within it.
func periodStart(current int32, p autoscalingv2.HPAScalingPolicy, up, down []scaleEvent, now time.Time) int32 {
	return current - changeInPeriod(p.PeriodSeconds, up, now) + changeInPeriod(p.PeriodSeconds, down, now)
}

// scaleUpLimit is upstream's calculateScaleUpLimitWithScalingRules: the most replicas the policies allow.
func scaleUpLimit(current int32, upEvents, downEvents []scaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	if *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	minChange := *rules.SelectPolicy == autoscalingv2.MinChangePolicySelect
	result := int32(math.MinInt32)
	if minChange {
		result = math.MaxInt32
	}
	for _, p := range rules.Policies {
		start := periodStart(current, p, upEvents, downEvents, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		if minChange {
			result = min(result, proposed)
		} else {
			result = max(result, proposed)
		}
	}
	return result
}

// scaleDownLimit is upstream's calculateScaleDownLimitWithBehaviors: the fewest replicas the policies allow.
func scaleDownLimit(current int32, upEvents, downEvents []scaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	if *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	minChange := *rules.SelectPolicy == autoscalingv2.MinChangePolicySelect
	result := int32(math.MaxInt32)
	if minChange {
		result = math.MinInt32
	}
	for _, p := range rules.Policies {
		start := periodStart(current, p, upEvents, downEvents, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		if minChange {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

func longestPeriod(rules *autoscalingv2.HPAScalingRules) int32 {
	var longest int32
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}
