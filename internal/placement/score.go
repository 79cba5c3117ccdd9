package placement

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// MaxScore bounds a built-in score: each is from -MaxScore to MaxScore before its weight.
const MaxScore = 100

// Weights are the weight of each built-in score a policy uses: in Additive mode Balance and Steady at 1
// unless configured otherwise, plus the configured ones; in Exact mode only the configured ones.
func Weights(policy clusterv1alpha1.PrioritizerPolicy) (map[string]int32, error) {
	weights := map[string]int32{}
	if policy.Mode != clusterv1alpha1.PrioritizerPolicyExact {
		weights[clusterv1alpha1.ScoreBalance] = 1
		weights[clusterv1alpha1.ScoreSteady] = 1
	}
	for i, c := range policy.Configurations {
		switch c.ScoreCoordinate.BuiltIn {
		case clusterv1alpha1.ScoreBalance, clusterv1alpha1.ScoreSteady,
			clusterv1alpha1.ScoreResourceAllocatableCPU, clusterv1alpha1.ScoreResourceAllocatableMemory:
			weights[c.ScoreCoordinate.BuiltIn] = c.Weight
		default:
			return nil, fmt.Errorf("spec.prioritizerPolicy.configurations[%d].scoreCoordinate.builtIn: %q is not a built-in score: want %s, %s, %s or %s",
				i, c.ScoreCoordinate.BuiltIn, clusterv1alpha1.ScoreBalance, clusterv1alpha1.ScoreSteady,
				clusterv1alpha1.ScoreResourceAllocatableCPU, clusterv1alpha1.ScoreResourceAllocatableMemory)
		}
	}
	return weights, nil
}

// Score is each candidate's total: the weighted sum of its built-in scores.
//   - Balance: the Cluster the most other Placements decided scores -100, one no other Placement decided 100,
//     linearly between (OCM counts decisions the same way).
//   - Steady: a Cluster the Placement decided last time scores 100, another 0, so that small shifts of the
//     other scores do not move decisions.
//   - ResourceAllocatableCPU and ResourceAllocatableMemory: the Cluster with the most allocatable scores 100,
//     the one with the least -100, linearly between; all score 100 when they have the same.
func Score(policy clusterv1alpha1.PrioritizerPolicy, candidates []*clusterv1alpha1.Cluster, in Input) (map[string]int64, error) {
	weights, err := Weights(policy)
	if err != nil {
		return nil, err
	}
	total := make(map[string]int64, len(candidates))
	add := func(name string, raw []int64) {
		w := int64(weights[name])
		if w == 0 {
			return
		}
		for i, c := range candidates {
			total[c.Name] += w * raw[i]
		}
	}
	balance, steady := make([]int64, len(candidates)), make([]int64, len(candidates))
	cpu, memory := make([]int64, len(candidates)), make([]int64, len(candidates))
	maxDecisions := 0
	for _, c := range candidates {
		maxDecisions = max(maxDecisions, in.Decisions[c.Name])
	}
	for i, c := range candidates {
		balance[i] = MaxScore
		if maxDecisions > 0 {
			balance[i] = MaxScore - int64(2*MaxScore*in.Decisions[c.Name]/maxDecisions)
		}
		if in.Decided[c.Name] {
			steady[i] = MaxScore
		}
		cpu[i] = allocatable(c, corev1.ResourceCPU)
		memory[i] = allocatable(c, corev1.ResourceMemory)
	}
	add(clusterv1alpha1.ScoreBalance, balance)
	add(clusterv1alpha1.ScoreSteady, steady)
	add(clusterv1alpha1.ScoreResourceAllocatableCPU, normalise(cpu))
	add(clusterv1alpha1.ScoreResourceAllocatableMemory, normalise(memory))
	return total, nil
}

// allocatable is a Cluster's allocatable amount of a resource, in milli-units: zero when it reports none.
func allocatable(c *clusterv1alpha1.Cluster, name corev1.ResourceName) int64 {
	if c.Status.ResourceSummary == nil {
		return 0
	}
	q, ok := c.Status.ResourceSummary.Allocatable[name]
	if !ok {
		return 0
	}
	return q.MilliValue()
}

// normalise maps values onto -MaxScore..MaxScore, the least to -MaxScore and the most to MaxScore; equal
// values all score MaxScore.
func normalise(values []int64) []int64 {
	out := make([]int64, len(values))
	if len(values) == 0 {
		return out
	}
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = min(lo, v), max(hi, v)
	}
	for i, v := range values {
		if hi == lo {
			out[i] = MaxScore
			continue
		}
		out[i] = -MaxScore + int64(float64(2*MaxScore)*float64(v-lo)/float64(hi-lo))
	}
	return out
}
