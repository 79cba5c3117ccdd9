package interpreter

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A customized kind's status on the hub is what its statusAggregation returns. That says how far the
// members got, not whether every cluster runs the template's current generation and is healthy: during a
// rollout the members report their last state, and kstatus, finding no observedGeneration and no condition
// it reads, calls the template Current. So the hub adds what it knows of the fleet, where the kind's
// status schema takes it (the API server prunes or refuses the rest, and a refused write would cost the
// template the customization's status too):
//   - status.conditions (a list of objects taking type, status, reason, message and lastTransitionTime):
//     flotilla.io/Propagated, and Reconciling (kstatus's own condition), True with Propagated's reason while
//     the fleet is not applied, caught up and healthy everywhere, False once it is. Conditions the
//     customization returns stay, except these two types.
//   - status.observedGeneration, only where the schema types it as an integer: the template's generation
//     once every cluster observed it, the previous one before. Argo Rollouts types it as a string, which
//     kstatus cannot read at all (it fails on it); OpenKruise as an integer.

// ConditionReconciling is kstatus's condition of an object whose controller has not finished its work.
const ConditionReconciling = "Reconciling"

// StatusSchema says which of the fields the hub adds to a customized kind's status its schema takes. The
// zero value takes none (a kind without a schema the hub can read, such as a native kind).
type StatusSchema struct {
	// Conditions: status.conditions takes conditions with type, status, reason, message and lastTransitionTime.
	Conditions bool
	// ConditionUpdateTime: its conditions also have a lastUpdateTime (Argo Rollouts' require it).
	ConditionUpdateTime bool
	// ObservedGeneration: status.observedGeneration is an integer.
	ObservedGeneration bool
}

// conditionFields are the fields of a condition the hub writes; conditionUpdateField the one it adds where
// the schema has it.
var conditionFields = []string{"type", "status", "reason", "message", "lastTransitionTime"}

const conditionUpdateField = "lastUpdateTime"

// StatusSchemaOf reads what the status of a CRD's version takes; the zero StatusSchema when the version is
// not served or has no schema.
func StatusSchemaOf(crd *apiextensionsv1.CustomResourceDefinition, version string) StatusSchema {
	var root *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil {
			root = v.Schema.OpenAPIV3Schema
		}
	}
	if root == nil {
		return StatusSchema{}
	}
	status, free := property(root, "status")
	if status == nil {
		return StatusSchema{Conditions: free}
	}
	out := StatusSchema{}
	if og, _ := property(status, "observedGeneration"); og != nil && og.Type == "integer" {
		out.ObservedGeneration = true
	}
	conditions, free := property(status, "conditions")
	switch {
	case conditions == nil:
		out.Conditions = free
	case conditions.Type == "array" && conditions.Items != nil && conditions.Items.Schema != nil:
		item := conditions.Items.Schema
		out.Conditions = takes(item, conditionFields)
		if _, ok := item.Properties[conditionUpdateField]; ok && out.Conditions {
			out.ConditionUpdateTime = true
		}
		for _, r := range item.Required { // a condition missing a required field is refused
			out.Conditions = out.Conditions && (slices.Contains(conditionFields, r) || r == conditionUpdateField && out.ConditionUpdateTime)
		}
	}
	return out
}

// property returns the schema of an object's field; nil with free true when the object keeps fields its
// schema does not list.
func property(s *apiextensionsv1.JSONSchemaProps, name string) (*apiextensionsv1.JSONSchemaProps, bool) {
	if p, ok := s.Properties[name]; ok {
		return &p, false
	}
	return nil, s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// takes says whether an object schema keeps every one of fields.
func takes(s *apiextensionsv1.JSONSchemaProps, fields []string) bool {
	for _, f := range fields {
		if p, free := property(s, f); p == nil && !free {
			return false
		}
	}
	return true
}

// addFleetStatus adds the hub's fields to a customized kind's aggregated status, as far as schema allows.
func addFleetStatus(status map[string]any, template *unstructured.Unstructured, fleet Fleet) {
	previous, _, _ := unstructured.NestedMap(template.Object, "status")
	if fleet.Schema.ObservedGeneration {
		delete(status, "observedGeneration") // the members' generations are not the template's
		if fleet.CaughtUp {
			status["observedGeneration"] = template.GetGeneration()
		} else if og, ok := previous["observedGeneration"].(int64); ok {
			status["observedGeneration"] = og
		}
	}
	if !fleet.Schema.Conditions {
		return
	}
	p := propagated(template, fleet)
	reconciling := condition{ConditionReconciling, "True", p.Reason, p.Message}
	if p.Status == "True" {
		reconciling = condition{ConditionReconciling, "False", "Propagated", p.Message}
	}
	// The hub's conditions start from the template's, so that their timestamps move only when they change.
	list, _ := status["conditions"].([]any)
	list = slices.DeleteFunc(slices.Clone(list), func(c any) bool {
		m, _ := c.(map[string]any)
		return m != nil && (m["type"] == p.Type || m["type"] == ConditionReconciling)
	})
	for _, t := range []string{p.Type, ConditionReconciling} {
		if old := conditionIn(previous, t); old != nil {
			list = append(list, old)
		}
	}
	status["conditions"] = list
	updated := ""
	if fleet.Schema.ConditionUpdateTime {
		updated = conditionUpdateField
	}
	setConditions(status, updated, fleet.Now, p, reconciling)
}
