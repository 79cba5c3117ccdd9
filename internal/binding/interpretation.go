package binding

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// customizationEvents wakes the bindings of the kinds a changed InterpreterCustomization targets, or a
// changed InterpreterWebhookConfiguration's webhooks answer: what they render, report and aggregate may
// change with it. changed, when set, is called first, with every change.
func customizationEvents(c client.Client, namespaced bool, changed func()) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if changed != nil {
			changed()
		}
		var applies func(schema.GroupVersionKind) bool
		switch o := o.(type) {
		case *configv1alpha1.InterpreterCustomization:
			applies = func(gvk schema.GroupVersionKind) bool { return interpreter.Customizes(o.Spec.Target, gvk) }
		case *configv1alpha1.InterpreterWebhookConfiguration:
			applies = func(gvk schema.GroupVersionKind) bool { return interpreter.Answers(o, gvk) }
		default:
			return nil
		}
		list := listOf(namespaced)
		if err := c.List(ctx, list); err != nil {
			return nil
		}
		items, _ := meta.ExtractList(list)
		var out []reconcile.Request
		for _, item := range items {
			b, ok := item.(workv1alpha1.Binding)
			if !ok {
				continue
			}
			gv, err := schema.ParseGroupVersion(b.BindingSpec().Resource.APIVersion)
			if err == nil && applies(gv.WithKind(b.BindingSpec().Resource.Kind)) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			}
		}
		return out
	})
}

// RenderInterpreted is Render for one cluster with what the kind's customization says: the cluster's share of the
// replicas written where the customization says, and the fields members own listed in the manifest's
// retained-fields annotation. They are not removed here: the executor leaves them out only where the
// member object has them, and first hands over a field only Flotilla owned, which server-side apply would
// otherwise delete.
func RenderInterpreted(ctx context.Context, interp *interpreter.Interpreter, template *unstructured.Unstructured, target workv1alpha1.TargetCluster, division []workv1alpha1.TargetCluster) (*unstructured.Unstructured, error) {
	m := Render(template, target, division)
	if division != nil {
		if err := interp.ReviseReplicas(ctx, m, target.Replicas); err != nil {
			return nil, err
		}
	}
	retained, err := interp.RetainedFields(ctx, m)
	if err != nil {
		return nil, err
	}
	if len(retained) > 0 {
		annotations := m.GetAnnotations()
		annotations[workv1alpha1.AnnotationRetainedFields] = strings.Join(retained, ",")
		m.SetAnnotations(annotations)
	}
	return m, nil
}

// interpretationErrors runs every operation of the template's customization the way the detector and the
// render controller run them, and the status ones on each member's report, and returns the failures, one
// line each, and what was made of each Work's report (observed[i] of works[i]: each report is judged once
// per reconcile, as a webhook may take up to its timeout to answer). The other controllers keep their last
// good result when an operation fails and say nothing; this is where the binding is told why (the
// Interpreted condition), by the one controller that owns it.
func interpretationErrors(ctx context.Context, interp *interpreter.Interpreter, spec *workv1alpha1.ResourceBindingSpec, template *unstructured.Unstructured, works []workv1alpha1.Work) (errs []string, observed []observation, err error) {
	seen := map[string]bool{}
	var out []string
	note := func(err error) error {
		var failed *interpreter.Error
		if !errors.As(err, &failed) {
			return err
		}
		if msg := failed.Error(); !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
		return nil
	}
	if _, _, _, err := interp.Replicas(ctx, template); note(err) != nil {
		return nil, nil, err
	}
	if _, err := interp.Dependencies(ctx, template); note(err) != nil {
		return nil, nil, err
	}
	for _, target := range spec.Clusters {
		if _, err := RenderInterpreted(ctx, interp, template, target, Division(spec)); note(err) != nil {
			return nil, nil, err
		}
	}
	for i := range works {
		var o observation
		o.status, o.health, o.customized, o.err = observeWork(ctx, interp, &works[i])
		if note(o.err) != nil {
			return nil, nil, o.err
		}
		observed = append(observed, o)
	}
	sort.Strings(out)
	return out, observed, nil
}

// observation is what the interpreter made of one Work's report (observeWork).
type observation struct {
	status     map[string]any
	health     workv1alpha1.ResourceHealth
	customized bool
	err        error
}

// observeWork judges the template's object in a Work's cluster with the kind's customization: the object is
// the manifest the cluster got with the status its member reported. customized is false when no
// customization has a say (the agent's judgement stands).
func observeWork(ctx context.Context, interp *interpreter.Interpreter, w *workv1alpha1.Work) (status map[string]any, health workv1alpha1.ResourceHealth, customized bool, err error) {
	if len(w.Spec.Workload.Manifests) == 0 || len(w.Status.ManifestStatuses) == 0 || w.Status.ManifestStatuses[0].Status == nil {
		return nil, "", false, nil
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw); err != nil {
		return nil, "", false, nil
	}
	reported := map[string]any{}
	if err := utiljson.Unmarshal(w.Status.ManifestStatuses[0].Status.Raw, &reported); err != nil {
		return nil, "", false, nil
	}
	obj.Object["status"] = reported
	return interp.Observe(ctx, obj)
}

// interpretedCondition says whether every customization operation the binding needs works.
func interpretedCondition(generation int64, errs []string) metav1.Condition {
	c := metav1.Condition{Type: workv1alpha1.ConditionInterpreted, Status: metav1.ConditionTrue, Reason: "Interpreted",
		Message: "every customization and webhook of the template's kind works", ObservedGeneration: generation}
	if len(errs) > 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "CustomizationFailed", truncate(strings.Join(errs, "; "))
	}
	return c
}

// truncate keeps a condition message within what the API accepts (32 KiB) and readable.
func truncate(s string) string {
	const limit = 2048
	if len(s) <= limit {
		return s
	}
	return fmt.Sprintf("%s... (%d more bytes)", s[:limit], len(s)-limit)
}

// statusSchema reads what the template's status takes of the fields the hub adds to a customized kind's
// status, from the template's CRD; nothing for a kind no CRD defines (a native kind).
func statusSchema(ctx context.Context, c client.Client, template *unstructured.Unstructured) (interpreter.StatusSchema, error) {
	gvk := template.GroupVersionKind()
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return interpreter.StatusSchema{}, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err = c.Get(ctx, client.ObjectKey{Name: mapping.Resource.Resource + "." + gvk.Group}, crd)
	if apierrors.IsNotFound(err) {
		return interpreter.StatusSchema{}, nil
	}
	if err != nil {
		return interpreter.StatusSchema{}, err
	}
	return interpreter.StatusSchemaOf(crd, gvk.Version), nil
}
