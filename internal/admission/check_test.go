package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserveradmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// object reads a YAML manifest.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const (
	policyHead = "apiVersion: policy.flotilla.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: web, namespace: default}\n" +
		"spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n"
	customizationHead = "apiVersion: config.flotilla.io/v1alpha1\nkind: InterpreterCustomization\nmetadata: {name: widget}\n" +
		"spec:\n  target: {apiVersion: example.io/v1, kind: Widget}\n  customizations:\n"
	placementHead  = "apiVersion: cluster.flotilla.io/v1alpha1\nkind: Placement\nmetadata: {name: web, namespace: default}\nspec:\n"
	clusterSetHead = "apiVersion: cluster.flotilla.io/v1alpha1\nkind: ClusterSet\nmetadata: {name: prod}\n" +
		"spec:\n  clusterSelector:\n    selectorType: LabelSelector\n"
	clusterHead = "apiVersion: cluster.flotilla.io/v1alpha1\nkind: Cluster\nmetadata: {name: member1}\nspec:\n  syncMode: Pull\n  resourceModels:\n"
)

// reviews are objects each check accepts or refuses, with what the refusal must name.
var reviews = []struct {
	name        string
	resource    string // resource.group
	subresource string
	manifest    string
	want        []string // nil: accepted
}{
	{"policy without failover", "propagationpolicies.policy.flotilla.io", "", policyHead, nil},
	{"policy whose statePreservation parses", "propagationpolicies.policy.flotilla.io", "",
		policyHead + "  failover:\n    cluster:\n      statePreservation:\n        rules: [{aliasLabelName: phase, jsonPath: '{.phase}'}]\n", nil},
	{"policy whose application jsonPath does not parse", "propagationpolicies.policy.flotilla.io", "",
		policyHead + "  failover:\n    application:\n      decisionConditions: {tolerationSeconds: 60}\n      statePreservation:\n        rules: [{aliasLabelName: checkpoint, jsonPath: '{.checkpoint'}]\n",
		[]string{`PropagationPolicy.policy.flotilla.io "web" is invalid`, "spec.failover.application.statePreservation.rules[0].jsonPath", "not a JSONPath client-go can read"}},
	{"cluster policy whose label name is not one", "clusterpropagationpolicies.policy.flotilla.io", "",
		strings.Replace(policyHead, "kind: PropagationPolicy", "kind: ClusterPropagationPolicy", 1) +
			"  failover:\n    cluster:\n      statePreservation:\n        rules: [{aliasLabelName: 'not a label', jsonPath: '{.phase}'}]\n",
		[]string{`ClusterPropagationPolicy.policy.flotilla.io "web" is invalid`, "spec.failover.cluster.statePreservation.rules[0].aliasLabelName"}},
	{"status of a bad policy: not checked", "propagationpolicies.policy.flotilla.io", "status",
		policyHead + "  failover:\n    cluster:\n      statePreservation:\n        rules: [{aliasLabelName: x, jsonPath: '{.x'}]\n", nil},
	{"policy that follows a Placement", "propagationpolicies.policy.flotilla.io", "",
		policyHead + "  placementRef: {name: web}\n  placement: {clusterTolerations: []}\n", nil},
	{"policy with placementRef and placement", "propagationpolicies.policy.flotilla.io", "",
		policyHead + "  placementRef: {name: web}\n  placement:\n    clusterAffinity: {clusterNames: [member1]}\n",
		[]string{"spec.placement: Forbidden: placement and placementRef are mutually exclusive"}},
	{"policy with a placementRef without a name", "propagationpolicies.policy.flotilla.io", "",
		policyHead + "  placementRef: {}\n", []string{"spec.placementRef.name: Required value"}},
	{"cluster policy with a placementRef", "clusterpropagationpolicies.policy.flotilla.io", "",
		strings.Replace(policyHead, "kind: PropagationPolicy", "kind: ClusterPropagationPolicy", 1) + "  placementRef: {name: web}\n",
		[]string{`ClusterPropagationPolicy.policy.flotilla.io "web" is invalid`, "spec.placementRef: Forbidden: a ClusterPropagationPolicy cannot follow a Placement"}},
	{"placement whose expressions compile", "placements.cluster.flotilla.io", "",
		placementHead + "  predicates:\n    - requiredClusterSelector:\n        celSelector:\n          celExpressions: ['cluster.metadata.labels[\"env\"] == \"prod\"']\n", nil},
	{"placement with an expression that does not compile", "placements.cluster.flotilla.io", "",
		placementHead + "  predicates:\n    - requiredClusterSelector:\n        celSelector:\n          celExpressions: ['true', 'cluster.spec.taints.exists(t, t.key ==']\n",
		[]string{`Placement.cluster.flotilla.io "web" is invalid`, "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[1]", "ERROR: <input>:1:"}},
	{"customization that compiles", "interpretercustomizations.config.flotilla.io", "",
		customizationHead + "    healthInterpretation: {cel: 'true'}\n", nil},
	{"customization whose CEL does not parse", "interpretercustomizations.config.flotilla.io", "",
		customizationHead + "    healthInterpretation: {cel: 'object.status.ready >='}\n",
		[]string{`InterpreterCustomization.config.flotilla.io "widget" is invalid`, "spec.customizations.healthInterpretation.cel", "ERROR: <input>:1:"}},
	{"customization whose Lua does not parse", "interpretercustomizations.config.flotilla.io", "",
		customizationHead + "    healthInterpretation:\n      luaScript: |\n        function InterpretHealth(observedObj)\n          return observedObj.status. >= 1\n        end\n",
		[]string{"spec.customizations.healthInterpretation.luaScript", "luaScript line:2"}},
	{"cluster set whose selector parses", "clustersets.cluster.flotilla.io", "",
		clusterSetHead + "    labelSelector: {matchExpressions: [{key: tier, operator: In, values: [gold]}]}\n", nil},
	{"cluster set whose selector operator is not one", "clustersets.cluster.flotilla.io", "",
		clusterSetHead + "    labelSelector: {matchExpressions: [{key: tier, operator: Within, values: [gold]}]}\n",
		[]string{`ClusterSet.cluster.flotilla.io "prod" is invalid`, "spec.clusterSelector.labelSelector.matchExpressions[0].operator", `"Within"`}},
	{"cluster set whose selector key is not a label key", "clustersets.cluster.flotilla.io", "",
		clusterSetHead + "    labelSelector: {matchLabels: {'not a key': x}}\n",
		[]string{"spec.clusterSelector.labelSelector.matchLabels", "not a key"}},
	{"cluster without resource models", "clusters.cluster.flotilla.io", "", strings.TrimSuffix(clusterHead, "  resourceModels:\n"), nil},
	{"cluster with two grades of CPU and GPUs", "clusters.cluster.flotilla.io", "", clusterHead +
		"  - {grade: 0, ranges: [{name: cpu, min: '0', max: '32'}, {name: nvidia.com/gpu, min: '0', max: '1'}]}\n" +
		"  - {grade: 1, ranges: [{name: cpu, min: '32', max: 1e9}, {name: nvidia.com/gpu, min: '1', max: '1e9'}]}\n", nil},
	{"cluster whose grades are out of order", "clusters.cluster.flotilla.io", "", clusterHead +
		"  - {grade: 1, ranges: [{name: cpu, min: '0', max: '32'}]}\n  - {grade: 0, ranges: [{name: cpu, min: '32', max: 1e9}]}\n",
		[]string{`Cluster.cluster.flotilla.io "member1" is invalid`, "spec.resourceModels[0].grade", "want 0", "spec.resourceModels[1].grade"}},
	{"cluster whose ranges leave a gap", "clusters.cluster.flotilla.io", "", clusterHead +
		"  - {grade: 0, ranges: [{name: cpu, min: '0', max: '16'}]}\n  - {grade: 1, ranges: [{name: cpu, min: '32', max: 1e9}]}\n",
		[]string{"spec.resourceModels[1].ranges[0].min", "must be the previous grade's max (16)"}},
	{"cluster whose first grade does not start at 0", "clusters.cluster.flotilla.io", "", clusterHead +
		"  - {grade: 0, ranges: [{name: cpu, min: '1', max: '16'}]}\n",
		[]string{"spec.resourceModels[0].ranges[0].min", "the first grade starts at 0"}},
	{"cluster whose range is empty", "clusters.cluster.flotilla.io", "", clusterHead +
		"  - {grade: 0, ranges: [{name: cpu, min: '0', max: '0'}]}\n",
		[]string{"spec.resourceModels[0].ranges[0].max", "must be more than min (0)"}},
	{"cluster whose grades name other resources", "clusters.cluster.flotilla.io", "", clusterHead +
		"  - {grade: 0, ranges: [{name: cpu, min: '0', max: '16'}]}\n  - {grade: 1, ranges: [{name: memory, min: '16', max: 1e9}]}\n",
		[]string{"spec.resourceModels[1].ranges[0].name", "the same resources in the same order as grade 0"}},
	{"cluster whose grade names a resource twice", "clusters.cluster.flotilla.io", "", clusterHead +
		"  - {grade: 0, ranges: [{name: cpu, min: '0', max: '16'}, {name: cpu, min: '0', max: '16'}]}\n",
		[]string{"spec.resourceModels[0].ranges[1].name", "Duplicate value"}},
	{"cluster whose grade has fewer resources", "clusters.cluster.flotilla.io", "", clusterHead +
		"  - {grade: 0, ranges: [{name: cpu, min: '0', max: '16'}, {name: memory, min: '0', max: 1Gi}]}\n  - {grade: 1, ranges: [{name: cpu, min: '16', max: 1e9}]}\n",
		[]string{"spec.resourceModels[1].ranges", "every grade names the same 2 resources"}},
	{"cluster set In without values", "clustersets.cluster.flotilla.io", "",
		clusterSetHead + "    labelSelector: {matchExpressions: [{key: tier, operator: In}]}\n",
		[]string{"spec.clusterSelector.labelSelector.matchExpressions[0].values", "must be specified when `operator` is 'In' or 'NotIn'"}},
}

// inProcess runs the check as the embedded hub's API server does: through its admission plugin.
func inProcess(t *testing.T, c Check, gr schema.GroupResource, subresource string, op apiserveradmission.Operation, u *unstructured.Unstructured) error {
	t.Helper()
	plugin, err := c.Plugin().New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !plugin.Handles(op) {
		return nil
	}
	gvk := u.GroupVersionKind()
	attrs := apiserveradmission.NewAttributesRecord(u, nil, gvk, u.GetNamespace(), u.GetName(), gr.WithVersion(gvk.Version), subresource, op, nil, false, nil)
	return plugin.(apiserveradmission.ValidationInterface).Validate(context.Background(), attrs, nil)
}

// throughWebhook runs the check as an existing cluster's API server does: an AdmissionReview to its path.
func throughWebhook(t *testing.T, c Check, gr schema.GroupResource, subresource string, op admissionv1.Operation, u *unstructured.Unstructured) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	gvk := u.GroupVersionKind()
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "42", Kind: metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Resource: metav1.GroupVersionResource{Group: gr.Group, Version: gvk.Version, Resource: gr.Resource},
			Name:     u.GetName(), Namespace: u.GetNamespace(), SubResource: subresource, Operation: op,
			Object: runtime.RawExtension{Raw: raw},
		},
	}
	body, _ := json.Marshal(review)
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, c.path(), bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("webhook answered %d: %s", rec.Code, rec.Body)
	}
	answer := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), answer); err != nil {
		t.Fatal(err)
	}
	if answer.APIVersion != "admission.k8s.io/v1" || answer.Kind != "AdmissionReview" || answer.Response == nil || answer.Response.UID != "42" {
		t.Fatalf("not an answer to the review: %s", rec.Body)
	}
	return answer.Response
}

// TestPluginAndWebhookAgree: the in-process plugin and the webhook accept and refuse the same objects, with
// the same status, reason and message, naming the field.
func TestPluginAndWebhookAgree(t *testing.T) {
	for _, tt := range reviews {
		t.Run(tt.name, func(t *testing.T) {
			u := object(t, tt.manifest)
			gr := schema.ParseGroupResource(tt.resource)
			var check *Check
			for i := range Checks {
				if Checks[i].handles(gr, "") {
					check = &Checks[i]
				}
			}
			if check == nil {
				t.Fatalf("no check handles %s", gr)
			}
			err := inProcess(t, *check, gr, tt.subresource, apiserveradmission.Create, u)
			response := throughWebhook(t, *check, gr, tt.subresource, admissionv1.Create, u)
			if tt.want == nil {
				if err != nil || !response.Allowed {
					t.Fatalf("refused: in process %v, webhook %+v", err, response.Result)
				}
				return
			}
			if err == nil || response.Allowed {
				t.Fatalf("accepted: in process %v, webhook allowed %v", err, response.Allowed)
			}
			status, ok := err.(apierrors.APIStatus)
			if !ok || !apierrors.IsInvalid(err) {
				t.Fatalf("in process: not Invalid: %v", err)
			}
			if got, want := *response.Result, status.Status(); got.Message != want.Message || got.Code != want.Code || got.Reason != want.Reason || len(got.Details.Causes) != len(want.Details.Causes) {
				t.Fatalf("the webhook refuses otherwise:\n webhook    %+v\n in process %+v", got, want)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal does not name %q: %v", want, err)
				}
			}
		})
	}
}

// TestChecksLeaveOtherRequestsAlone: neither path looks at a deletion or at a resource it does not check.
func TestChecksLeaveOtherRequestsAlone(t *testing.T) {
	bad := object(t, policyHead+"  failover:\n    cluster:\n      statePreservation:\n        rules: [{aliasLabelName: x, jsonPath: '{.x'}]\n")
	policies := schema.GroupResource{Group: "policy.flotilla.io", Resource: "propagationpolicies"}
	if err := inProcess(t, propagationPolicyCheck, policies, "", apiserveradmission.Delete, bad); err != nil {
		t.Errorf("in process, a deletion is checked: %v", err)
	}
	if r := throughWebhook(t, propagationPolicyCheck, policies, "", admissionv1.Delete, bad); !r.Allowed {
		t.Errorf("through the webhook, a deletion is checked: %+v", r.Result)
	}
	overrides := schema.GroupResource{Group: "policy.flotilla.io", Resource: "overridepolicies"}
	if err := inProcess(t, propagationPolicyCheck, overrides, "", apiserveradmission.Create, bad); err != nil {
		t.Errorf("in process, another resource is checked: %v", err)
	}
	if r := throughWebhook(t, propagationPolicyCheck, overrides, "", admissionv1.Create, bad); !r.Allowed {
		t.Errorf("through the webhook, another resource is checked: %+v", r.Result)
	}
}

// TestWebhookConfiguration: every check is called on the creation and update of each of its resources (and
// the subresources it names), at its own path, and a check that cannot be called refuses, unless it only warns.
func TestWebhookConfiguration(t *testing.T) {
	vwc := webhookConfigurationFor(func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://hub:9443" + path)}
	}, []byte("CA"))
	if len(vwc.Webhooks) != len(Checks) {
		t.Fatalf("%d webhooks for %d checks", len(vwc.Webhooks), len(Checks))
	}
	for i, c := range Checks {
		w := vwc.Webhooks[i]
		if w.Name != c.webhookName() || *w.ClientConfig.URL != "https://hub:9443"+c.path() || string(w.ClientConfig.CABundle) != "CA" {
			t.Errorf("webhook %s: name %s, URL %s, caBundle %q", c.Name, w.Name, *w.ClientConfig.URL, w.ClientConfig.CABundle)
		}
		failure := admissionregistrationv1.Fail
		if c.Validate == nil && c.Admit == nil {
			failure = admissionregistrationv1.Ignore
		}
		if *w.FailurePolicy != failure || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("webhook %s: failurePolicy %s, sideEffects %s", w.Name, *w.FailurePolicy, *w.SideEffects)
		}
		if len(w.Rules) != len(c.Resources) {
			t.Fatalf("webhook %s: %d rules for %d resources", w.Name, len(w.Rules), len(c.Resources))
		}
		for j, r := range c.Resources {
			rule := w.Rules[j]
			if rule.APIGroups[0] != r.Group || rule.Resources[0] != r.Resource ||
				len(rule.Operations) != 2 || rule.Operations[0] != admissionregistrationv1.Create || rule.Operations[1] != admissionregistrationv1.Update {
				t.Errorf("webhook %s: rule %+v for %s", w.Name, rule, r)
			}
			for k, sub := range c.Subresources {
				if rule.Resources[k+1] != r.Resource+"/"+sub {
					t.Errorf("webhook %s: rule %+v does not send %s/%s", w.Name, rule, r.Resource, sub)
				}
			}
		}
	}
}
