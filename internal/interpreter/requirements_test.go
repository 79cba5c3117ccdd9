package interpreter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// podTemplate is a pod template that asks for 2 CPUs on a GPU node of zone a, tolerating the GPU taint.
const podTemplate = `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"2"}}}],
	"nodeSelector":{"pool":"gpu"},
	"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}],
	"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
		{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}}}`

// wantClaimed is what podTemplate's replica needs.
var wantClaimed = &workv1alpha1.ReplicaRequirements{
	ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	NodeClaim: &workv1alpha1.NodeClaim{
		NodeSelector: map[string]string{"pool": "gpu"},
		Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}},
	},
}

// TestRequirementsClaimNodes: a replica's requirements carry where its pod template lets it run, from the
// built-in rule, a CEL customization and a Lua one (Karmada's kube.accuratePodRequirements) alike.
func TestRequirementsClaimNodes(t *testing.T) {
	d := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2,"template":`+podTemplate+`}}`)
	if n, req, ok := Requirements(d); !ok || n != 2 || !equality.Semantic.DeepEqual(req, wantClaimed) {
		t.Fatalf("Deployment: %d %+v %v, want 2 with %+v", n, req, ok, wantClaimed)
	}
	if _, req, _ := Requirements(obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"a"}]}}}}`)); req != nil {
		t.Fatalf("a template that asks nothing: %+v, want no requirements", req)
	}

	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.io/v1", "kind": "Widget", "spec": map[string]any{"size": int64(3)}}}
	w.Object["spec"].(map[string]any)["template"] = obj(t, podTemplate).Object
	for name, rule := range map[string]configv1alpha1.Expression{
		"cel": {CEL: `{"replicas": object.spec.size, "requests": {"cpu": "2"}, "nodeClaim": {"nodeSelector": object.spec.template.spec.nodeSelector,
			"tolerations": object.spec.template.spec.tolerations,
			"hardNodeAffinity": object.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution}}`},
		"lua": {LuaScript: `
function GetReplicas(desiredObj)
  return desiredObj.spec.size, kube.accuratePodRequirements(desiredObj.spec.template)
end`},
	} {
		ic := widgetIC(t, widgetCustomization)
		ic.Spec.Customizations = configv1alpha1.CustomizationRules{ReplicaResource: &rule}
		c, errs := Compile(ic)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if n, req, err := c.Requirements(w); err != nil || n != 3 || !equality.Semantic.DeepEqual(req, wantClaimed) {
			t.Errorf("%s: %d %+v %v, want 3 with %+v", name, n, req, err, wantClaimed)
		}
	}

	ic := widgetIC(t, widgetCustomization)
	ic.Spec.Customizations = configv1alpha1.CustomizationRules{ReplicaResource: &configv1alpha1.Expression{CEL: `{"replicas": 1, "nodeClaim": "gpu"}`}}
	c, errs := Compile(ic)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, _, err := c.Requirements(w); err == nil {
		t.Error("a nodeClaim that is not a map was accepted")
	}
}
