// Package statepreservation carries state from a failed copy of a workload to its replacement: the
// policy's rules pick values from the status the failed cluster last reported (client-go's JSONPath), and
// the replacement gets them as labels, so an application can resume where it stopped (a checkpoint id, an
// offset).
package statepreservation

import (
	"bytes"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// parse parses a rule's JSONPath, as client-go's jsonpath reads it ({.status.x}).
func parse(rule policyv1alpha1.StatePreservationRule) (*jsonpath.JSONPath, error) {
	p := jsonpath.New(rule.AliasLabelName)
	if err := p.Parse(rule.JSONPath); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks the rules of one statePreservation: each jsonPath parses, and each aliasLabelName is a
// label key. The hub's admission runs it on every propagation policy, so a rule that could never apply is
// refused when it is written, not when a cluster fails.
func Validate(sp *policyv1alpha1.StatePreservation, path *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	for i, rule := range sp.Rules {
		p := path.Child("rules").Index(i)
		for _, msg := range validation.IsQualifiedName(rule.AliasLabelName) {
			errs = append(errs, field.Invalid(p.Child("aliasLabelName"), rule.AliasLabelName, msg))
		}
		if _, err := parse(rule); err != nil {
			errs = append(errs, field.Invalid(p.Child("jsonPath"), rule.JSONPath, "not a JSONPath client-go can read: "+err.Error()))
		}
	}
	return errs
}

// Extract applies the rules to status (the failed copy's status, as the member reported it) and returns the
// labels to inject. A rule whose path finds nothing, finds more than one value, or finds a value that is not
// a valid label value gives no label and a problem that says why: a missing value is reported, never
// guessed.
func Extract(rules []policyv1alpha1.StatePreservationRule, status map[string]any) (map[string]string, []string) {
	labels := map[string]string{}
	var problems []string
	for _, rule := range rules {
		value, err := extract(rule, status)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s): %v", rule.AliasLabelName, rule.JSONPath, err))
			continue
		}
		labels[rule.AliasLabelName] = value
	}
	return labels, problems
}

func extract(rule policyv1alpha1.StatePreservationRule, status map[string]any) (string, error) {
	p, err := parse(rule)
	if err != nil {
		return "", err
	}
	if status == nil {
		return "", fmt.Errorf("the cluster reported no status")
	}
	results, err := p.FindResults(status)
	if err != nil {
		return "", err
	}
	var found int
	for _, r := range results {
		found += len(r)
	}
	if found != 1 {
		return "", fmt.Errorf("found %d values, want one", found)
	}
	var buf bytes.Buffer
	if err := p.PrintResults(&buf, results[0]); err != nil {
		return "", err
	}
	value := buf.String()
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		return "", fmt.Errorf("the value %q is no label value: %s", value, strings.Join(msgs, "; "))
	}
	return value, nil
}
