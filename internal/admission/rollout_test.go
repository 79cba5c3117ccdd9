package admission

import (
	"strings"
	"testing"
)

// TestValidateRollout: every bad rollout field is refused naming its path; good ones, and mandatory groups a
// Placement defines, are accepted.
func TestValidateRollout(t *testing.T) {
	progressive := func(fields string) string {
		return policyHead + "  rollout:\n    type: Progressive\n    decisionGroups: [{groupName: canary}]\n    progressive:\n" + fields
	}
	for _, tc := range []struct {
		name     string
		manifest string
		want     []string // nil: accepted
	}{
		{"good", progressive("      maxConcurrency: 25%\n      maxFailures: 1\n      minSuccessTime: 5s\n      progressDeadline: 30s\n" +
			"      mandatoryDecisionGroups: [{groupName: canary}, {groupIndex: 1}]\n"), nil},
		{"percent bounds", progressive("      maxConcurrency: 100%\n      maxFailures: 0%\n"), nil},
		{"maxConcurrency abc", progressive("      maxConcurrency: abc\n"),
			[]string{"spec.rollout.progressive.maxConcurrency", `"abc" is neither a count nor a percentage from 0% to 100%`}},
		{"maxConcurrency 150%", progressive("      maxConcurrency: 150%\n"), []string{"spec.rollout.progressive.maxConcurrency", `"150%"`}},
		{"maxConcurrency 0", progressive("      maxConcurrency: 0\n"), []string{"spec.rollout.progressive.maxConcurrency", "at least 1"}},
		{"maxFailures -1", progressive("      maxFailures: -1\n"), []string{"spec.rollout.progressive.maxFailures", `"-1" is neither a count nor a percentage`}},
		{"maxFailures -1%", progressive("      maxFailures: -1%\n"), []string{"spec.rollout.progressive.maxFailures"}},
		{"maxFailures 5 without %", progressive("      maxFailures: \"5\"\n"), []string{"spec.rollout.progressive.maxFailures"}},
		{"negative minSuccessTime", progressive("      minSuccessTime: -5s\n"), []string{"spec.rollout.progressive.minSuccessTime", "must not be negative"}},
		{"negative progressDeadline", progressive("      progressDeadline: -1s\n"), []string{"spec.rollout.progressive.progressDeadline", "must not be negative"}},
		{"progressDeadline before minSuccessTime", progressive("      minSuccessTime: 1m\n      progressDeadline: 30s\n"),
			[]string{"spec.rollout.progressive.progressDeadline", "shorter than minSuccessTime 1m0s"}},
		{"unknown mandatory group", progressive("      mandatoryDecisionGroups: [{groupName: canary}, {groupName: early}]\n"),
			[]string{`spec.rollout.progressive.mandatoryDecisionGroups[1].groupName: Not found: "early"`}},
		{"mandatory group of a Placement", strings.Replace(progressive("      mandatoryDecisionGroups: [{groupName: early}]\n"),
			"  rollout:", "  placementRef: {name: web}\n  rollout:", 1), nil},
		{"progressive with type All", policyHead + "  rollout:\n    type: All\n    progressive: {maxConcurrency: 1}\n",
			[]string{"spec.rollout.progressive", "progressive applies to type Progressive or ProgressivePerGroup, not All"}},
		{"progressive without a type", policyHead + "  rollout:\n    progressive: {maxConcurrency: 1}\n",
			[]string{"spec.rollout.progressive", "not All"}},
		{"duplicate groups", policyHead + "  rollout:\n    type: ProgressivePerGroup\n    decisionGroups: [{groupName: a}, {groupName: a}]\n",
			[]string{"spec.rollout.decisionGroups[1].groupName: Duplicate value"}},
		{"group selector that does not parse", policyHead + "  rollout:\n    type: ProgressivePerGroup\n    decisionGroups:\n" +
			"      - groupName: a\n        groupClusterSelector: {labelSelector: {matchExpressions: [{key: env, operator: Near}]}}\n",
			[]string{"spec.rollout.decisionGroups[0].groupClusterSelector.labelSelector.matchExpressions[0].operator", "Near"}},
		{"clustersPerDecisionGroup 0%", policyHead + "  rollout:\n    type: ProgressivePerGroup\n    clustersPerDecisionGroup: 0%\n",
			[]string{"spec.rollout.clustersPerDecisionGroup", "percentage from 1% to 100%"}},
		{"clustersPerDecisionGroup 0", policyHead + "  rollout:\n    type: ProgressivePerGroup\n    clustersPerDecisionGroup: 0\n",
			[]string{"spec.rollout.clustersPerDecisionGroup", "want at least 1"}},
		{"clustersPerDecisionGroup 50%", policyHead + "  rollout:\n    type: ProgressivePerGroup\n    clustersPerDecisionGroup: 50%\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, err := validatePropagationPolicy(object(t, tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("accepted:\n%s", tc.manifest)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs.ToAggregate().Error(), w) {
					t.Errorf("%v: does not name %q", errs.ToAggregate(), w)
				}
			}
		})
	}
}
