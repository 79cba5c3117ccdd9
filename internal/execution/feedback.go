package execution

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// maxFeedbackJSON is the largest list or object a feedback value returns as JSON: a Work's status must stay
// small whatever a member object holds (statusBudget).
const maxFeedbackJSON = 1024

// feedback sets the manifest status's feedback values from the member object, as the rules of its manifest
// config name them, and the StatusFeedbackSynced condition; without rules, it clears both.
func feedback(ms *workv1alpha1.ManifestStatus, obj *unstructured.Unstructured, config *workv1alpha1.ManifestConfig) {
	if config == nil || len(config.FeedbackRules) == 0 {
		ms.Feedback = nil
		meta.RemoveStatusCondition(&ms.Conditions, workv1alpha1.ManifestConditionFeedbackSynced)
		return
	}
	values, err := feedbackValues(obj, config.FeedbackRules)
	ms.Feedback = values
	synced := metav1.Condition{Type: workv1alpha1.ManifestConditionFeedbackSynced, Status: metav1.ConditionTrue,
		Reason: "Synced", Message: fmt.Sprintf("%d values returned", len(values))}
	if err != nil {
		synced.Status, synced.Reason, synced.Message = metav1.ConditionFalse, "FeedbackFailed", err.Error()
	}
	meta.SetStatusCondition(&ms.Conditions, synced)
}

// feedbackValues evaluates feedback rules on an object's status (only its status, as OCM does): a
// WellKnownStatus rule its kind's well-known fields (workv1alpha1.WellKnownFeedback), a JSONPaths rule its
// paths. A path to a missing field returns no value;
// one to a scalar returns it as Integer, String or Boolean; anything else (a list, an object, several
// matches, a fraction) returns its JSON, up to maxFeedbackJSON bytes. The values found are returned with
// an error naming the rules that could not be evaluated.
func feedbackValues(obj *unstructured.Unstructured, rules []workv1alpha1.FeedbackRule) ([]workv1alpha1.FeedbackValue, error) {
	var (
		values []workv1alpha1.FeedbackValue
		errs   []error
	)
	for _, rule := range rules {
		paths := rule.JSONPaths
		if rule.Type == workv1alpha1.FeedbackWellKnownStatus {
			gvk := obj.GroupVersionKind()
			if paths = workv1alpha1.WellKnownFeedback[gvk.Group+"/"+gvk.Kind]; paths == nil {
				errs = append(errs, fmt.Errorf("%s has no well-known status fields", gvk.Kind))
				continue
			}
		}
		for _, p := range paths {
			v, err := feedbackValue(obj, p)
			switch {
			case err != nil:
				errs = append(errs, err)
			case v != nil:
				values = append(values, *v)
			}
		}
	}
	return values, errors.Join(errs...)
}

func feedbackValue(obj *unstructured.Unstructured, p workv1alpha1.JSONPath) (*workv1alpha1.FeedbackValue, error) {
	jp := jsonpath.New(p.Name).AllowMissingKeys(true)
	if err := jp.Parse("{" + p.Path + "}"); err != nil {
		return nil, fmt.Errorf("%s: path %s: %w", p.Name, p.Path, err)
	}
	status, ok := obj.Object["status"].(map[string]any)
	if !ok {
		return nil, nil // no status: nothing to return
	}
	results, err := jp.FindResults(status)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	var found []any
	for _, r := range results {
		for _, v := range r {
			if v.IsValid() && v.CanInterface() && v.Interface() != nil {
				found = append(found, v.Interface())
			}
		}
	}
	var value any
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		value = found[0]
	default:
		value = found
	}
	out := &workv1alpha1.FeedbackValue{Name: p.Name}
	switch v := value.(type) {
	case int64:
		out.Value = workv1alpha1.FieldValue{Type: workv1alpha1.FeedbackInteger, Integer: &v}
	case string:
		out.Value = workv1alpha1.FieldValue{Type: workv1alpha1.FeedbackString, String: &v}
	case bool:
		out.Value = workv1alpha1.FieldValue{Type: workv1alpha1.FeedbackBoolean, Boolean: &v}
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		if len(raw) > maxFeedbackJSON {
			return nil, fmt.Errorf("%s: the value's JSON is %d bytes, more than the %d a feedback value holds", p.Name, len(raw), maxFeedbackJSON)
		}
		s := string(raw)
		out.Value = workv1alpha1.FieldValue{Type: workv1alpha1.FeedbackJSONRaw, JSONRaw: &s}
	}
	return out, nil
}
