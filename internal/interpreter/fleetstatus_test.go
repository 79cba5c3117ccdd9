package interpreter

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

// The status schemas of the CRDs below are those of the projects' CRDs, cut to the fields these tests use.
const (
	// Argo Rollouts: observedGeneration is a string; a condition requires lastUpdateTime.
	rolloutSchema = `{"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},
		"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
		"status":{"type":"object","properties":{"observedGeneration":{"type":"string"},"phase":{"type":"string"},
			"replicas":{"type":"integer","format":"int32"},"updatedReplicas":{"type":"integer","format":"int32"},
			"readyReplicas":{"type":"integer","format":"int32"},"availableReplicas":{"type":"integer","format":"int32"},
			"conditions":{"type":"array","items":{"type":"object","required":["lastTransitionTime","lastUpdateTime","message","reason","status","type"],
				"properties":{"lastTransitionTime":{"type":"string","format":"date-time"},"lastUpdateTime":{"type":"string","format":"date-time"},
					"message":{"type":"string"},"reason":{"type":"string"},"status":{"type":"string"},"type":{"type":"string"}}}}}}}}`
	// OpenKruise: observedGeneration is an int64; a condition has no lastUpdateTime.
	cloneSetSchema = `{"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},
		"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
		"status":{"type":"object","properties":{"observedGeneration":{"type":"integer","format":"int64"},
			"replicas":{"type":"integer","format":"int32"},"updatedReplicas":{"type":"integer","format":"int32"},
			"updatedReadyReplicas":{"type":"integer","format":"int32"},"readyReplicas":{"type":"integer","format":"int32"},
			"availableReplicas":{"type":"integer","format":"int32"},
			"conditions":{"type":"array","items":{"type":"object","required":["status","type"],
				"properties":{"lastTransitionTime":{"type":"string","format":"date-time"},"message":{"type":"string"},
					"reason":{"type":"string"},"status":{"type":"string"},"type":{"type":"string"}}}}}}}}`
	// A user's Widget whose status keeps any field.
	widgetSchema = `{"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},
		"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
		"status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`
	// A user's Widget whose status has neither conditions nor observedGeneration.
	bareWidgetSchema = `{"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},
		"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
		"status":{"type":"object","properties":{"ready":{"type":"integer"},"clusters":{"type":"array","items":{"type":"string"}}}}}}`
)

func crdWith(t *testing.T, version, schema string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	props := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(schema), props); err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props}}}}}
}

// checkSchema fails when the API server would refuse obj or drop any of its fields under the CRD's schema.
func checkSchema(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, obj *unstructured.Unstructured) {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatal(err)
	}
	if errs := apiservervalidation.ValidateCustomResource(field.NewPath(""), obj.Object, validator); len(errs) > 0 {
		t.Errorf("the API server would refuse the status %v: %v", obj.Object["status"], errs)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	copied := runtime.DeepCopyJSONValue(obj.Object)
	if pruned := pruning.PruneWithOptions(copied, structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(pruned) > 0 {
		t.Errorf("the API server would drop %v from the status %v", pruned, obj.Object["status"])
	}
}

// customizedCase is one state of a fleet of a customized kind and what kstatus must make of the hub's template.
type customizedCase struct {
	name    string
	fleet   Fleet
	kstatus status.Status
}

// checkCustomizedGitOps aggregates a customized template's status as the hub does, with the hub's fields
// where the CRD's schema takes them, and checks it against the schema and kstatus. previous is the
// template's status before (the hub's last write).
func checkCustomizedGitOps(t *testing.T, i *Interpreter, crd *apiextensionsv1.CustomResourceDefinition, template string, previous map[string]any, cases []customizedCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			u := obj(t, template)
			if previous != nil {
				u.Object["status"] = runtime.DeepCopyJSONValue(previous)
			}
			fleet := tt.fleet
			fleet.Now, fleet.Schema = t0, StatusSchemaOf(crd, u.GroupVersionKind().Version)
			st, err := i.AggregateStatus(context.Background(), u, fleet)
			if err != nil {
				t.Fatal(err)
			}
			u.Object["status"] = st
			checkSchema(t, crd, u)
			if got := kstatus(t, u); got != tt.kstatus {
				t.Errorf("kstatus %s, want %s; status %v", got, tt.kstatus, st)
			}
		})
	}
}

// TestGitOpsCustomizedRollout: the shipped Rollout customization, Duplicated over three clusters. Its
// statusAggregation alone says Healthy while the members still run the previous generation, and has nothing
// kstatus reads: the hub's Reconciling condition makes kstatus follow the fleet. Its observedGeneration is a
// string, which kstatus cannot read: the hub leaves it out.
func TestGitOpsCustomizedRollout(t *testing.T) {
	const rollout = `{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","metadata":{"name":"web","generation":4},"spec":{"replicas":3}}`
	member := func(phase string, available int) map[string]any {
		return obj(t, fmt.Sprintf(`{"observedGeneration":"4","phase":%q,"replicas":3,"updatedReplicas":3,"readyReplicas":%d,"availableReplicas":%d}`,
			phase, available, available)).Object
	}
	healthy := member("Healthy", 3)
	var i *Interpreter
	crd := crdWith(t, "v1alpha1", rolloutSchema)
	cases := []customizedCase{
		{"rolling out in one cluster", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet,
			Members: members(healthy, member("Progressing", 1), healthy)}, status.InProgressStatus},
		{"a cluster not on the new generation yet", Fleet{CaughtUp: false, Applied: yes, Healthy: yes,
			Members: members(healthy, healthy, healthy)}, status.InProgressStatus},
		{"not applied everywhere yet", Fleet{CaughtUp: false, Applied: notYet, Healthy: yes,
			Members: members(healthy, healthy)}, status.InProgressStatus},
		{"rolled out everywhere", Fleet{CaughtUp: true, Applied: yes, Healthy: yes,
			Members: members(healthy, healthy, healthy)}, status.CurrentStatus},
		{"one member degraded", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet,
			Members: members(healthy, member("Degraded", 2), healthy)}, status.InProgressStatus},
	}
	checkCustomizedGitOps(t, i, crd, rollout, nil, cases)
	// The previous write said Propagated: the hub's conditions turn, and the customization's Healthy phase
	// does not hide it.
	done := obj(t, rollout)
	st, err := i.AggregateStatus(context.Background(), done, Fleet{CaughtUp: true, Applied: yes, Healthy: yes, Now: t0,
		Schema: StatusSchemaOf(crd, "v1alpha1"), Members: members(healthy, healthy, healthy)})
	if err != nil {
		t.Fatal(err)
	}
	checkCustomizedGitOps(t, i, crd, rollout, st, cases[1:2])

	t.Run("the customization alone calls a rollout in progress Current", func(t *testing.T) {
		u := obj(t, rollout)
		st, err := i.AggregateStatus(context.Background(), u, Fleet{CaughtUp: false, Applied: yes, Healthy: yes, Now: t0,
			Members: members(healthy, healthy, healthy)}) // no schema: the hub adds nothing
		if err != nil {
			t.Fatal(err)
		}
		u.Object["status"] = st
		if got := kstatus(t, u); got != status.CurrentStatus {
			t.Fatalf("kstatus %s for %v: this test no longer shows what the hub's fields fix", got, st)
		}
	})
}

// TestGitOpsCustomizedCloneSet: the shipped CloneSet customization, Divided 1/2/3. Its observedGeneration is
// an integer: the hub writes the template's generation once every cluster observed it.
func TestGitOpsCustomizedCloneSet(t *testing.T) {
	const cloneSet = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":"web","generation":7},"spec":{"replicas":6}}`
	member := func(replicas, ready int) map[string]any {
		return obj(t, fmt.Sprintf(`{"observedGeneration":2,"replicas":%d,"updatedReplicas":%d,"updatedReadyReplicas":%d,"readyReplicas":%d,"availableReplicas":%d}`,
			replicas, replicas, ready, ready, ready)).Object
	}
	var i *Interpreter
	crd := crdWith(t, "v1alpha1", cloneSetSchema)
	checkCustomizedGitOps(t, i, crd, cloneSet, nil, []customizedCase{
		{"rolling out in one cluster", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: notYet,
			Members: members(member(1, 1), member(2, 0), member(3, 3))}, status.InProgressStatus},
		{"a cluster not on the new generation yet", Fleet{Divided: true, CaughtUp: false, Applied: yes, Healthy: yes,
			Members: members(member(1, 1), member(2, 2), member(3, 3))}, status.InProgressStatus},
		{"rolled out everywhere", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: yes,
			Members: members(member(1, 1), member(2, 2), member(3, 3))}, status.CurrentStatus},
		{"one member unhealthy", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: notYet,
			Members: members(member(1, 1), member(2, 1), member(3, 3))}, status.InProgressStatus},
	})

	t.Run("observedGeneration is the template's, once caught up", func(t *testing.T) {
		u := obj(t, cloneSet)
		fleet := Fleet{Divided: true, Applied: yes, Healthy: yes, Now: t0, Schema: StatusSchemaOf(crd, "v1alpha1"),
			Members: members(member(1, 1), member(2, 2), member(3, 3))}
		st, _ := i.AggregateStatus(context.Background(), u, fleet)
		if _, ok := st["observedGeneration"]; ok {
			t.Errorf("observedGeneration %v before the fleet caught up (the template never had one)", st["observedGeneration"])
		}
		u.Object["status"] = map[string]any{"observedGeneration": int64(6)}
		if st, _ = i.AggregateStatus(context.Background(), u, fleet); st["observedGeneration"] != int64(6) {
			t.Errorf("observedGeneration %v before the fleet caught up, want the previous 6", st["observedGeneration"])
		}
		fleet.CaughtUp = true
		if st, _ = i.AggregateStatus(context.Background(), u, fleet); st["observedGeneration"] != int64(7) {
			t.Errorf("observedGeneration %v once caught up, want 7", st["observedGeneration"])
		}
	})
}

// TestGitOpsCustomizedWidget: a user's CRD whose status keeps any field, customized by the user; and one whose
// status has neither conditions nor observedGeneration, where the hub adds nothing (the API server would
// drop it) and so cannot tell kstatus of a rollout.
func TestGitOpsCustomizedWidget(t *testing.T) {
	s := runtime.NewScheme()
	if err := configv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ic := widgetIC(t, widgetCustomization)
	ic.UID = "w"
	i := New(fake.NewClientBuilder().WithScheme(s).WithObjects(ic).Build())
	const widget = `{"apiVersion":"example.io/v1","kind":"Widget","metadata":{"name":"w","generation":3},"spec":{"size":2}}`
	ready := func(n int) map[string]any { return map[string]any{"ready": int64(n)} }
	cases := []customizedCase{
		{"rolling out in one cluster", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet, Members: members(ready(2), ready(1))}, status.InProgressStatus},
		{"a cluster not on the new generation yet", Fleet{CaughtUp: false, Applied: yes, Healthy: yes, Members: members(ready(2), ready(2))}, status.InProgressStatus},
		{"rolled out everywhere", Fleet{CaughtUp: true, Applied: yes, Healthy: yes, Members: members(ready(2), ready(2))}, status.CurrentStatus},
		{"one member unhealthy", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet, Members: members(ready(0), ready(2))}, status.InProgressStatus},
	}
	checkCustomizedGitOps(t, i, crdWith(t, "v1", widgetSchema), widget, nil, cases)
	checkCustomizedGitOps(t, i, crdWith(t, "v1", bareWidgetSchema), widget, nil, []customizedCase{
		{"bare schema: rolled out everywhere", cases[2].fleet, status.CurrentStatus},
		{"bare schema: nothing added during a rollout", cases[1].fleet, status.CurrentStatus},
	})
}

func TestStatusSchemaOf(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         StatusSchema
	}{
		{"Rollout", rolloutSchema, StatusSchema{Conditions: true, ConditionUpdateTime: true}},
		{"CloneSet", cloneSetSchema, StatusSchema{Conditions: true, ObservedGeneration: true}},
		{"free status", widgetSchema, StatusSchema{Conditions: true}},
		{"no conditions", bareWidgetSchema, StatusSchema{}},
		{"no status", `{"type":"object","properties":{"spec":{"type":"object"}}}`, StatusSchema{}},
		{"conditions requiring a field the hub does not write", `{"type":"object","properties":{"status":{"type":"object","properties":{
			"conditions":{"type":"array","items":{"type":"object","required":["type","severity"],"properties":{"type":{"type":"string"},
			"status":{"type":"string"},"reason":{"type":"string"},"message":{"type":"string"},"lastTransitionTime":{"type":"string"},
			"severity":{"type":"string"}}}}}}}}`, StatusSchema{}},
		{"conditions without a message", `{"type":"object","properties":{"status":{"type":"object","properties":{
			"conditions":{"type":"array","items":{"type":"object","properties":{"type":{"type":"string"},"status":{"type":"string"}}}}}}}}`, StatusSchema{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StatusSchemaOf(crdWith(t, "v1", tc.schema), "v1"); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got := StatusSchemaOf(crdWith(t, "v1", tc.schema), "v2"); got != (StatusSchema{}) {
				t.Errorf("for a version the CRD does not have: %+v", got)
			}
		})
	}
}
