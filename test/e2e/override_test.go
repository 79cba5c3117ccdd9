package e2e

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestOverridePolicyAdaptsPerClusterAllOrNothing: an override policy changes the manifest for one cluster;
// a rule that cannot apply is reported and changes nothing; without the policy the template goes as it is.
func TestOverridePolicyAdaptsPerClusterAllOrNothing(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "tuned", 1))
	f.createPolicy(t, "tuned", deploymentSelector("tuned"), placementOn("m1", "m3"))
	op := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "tuned", Namespace: f.ns},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{deploymentSelector("tuned")},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}},
				Overriders: policyv1alpha1.Overriders{
					ImageOverrider: []policyv1alpha1.ImageOverrider{{Component: "Registry", Operator: "replace", Value: "mirror.eu"}},
					Plaintext:      []policyv1alpha1.PlaintextOverrider{{Path: "/spec/replicas", Operator: "replace", Value: &apiextensionsv1.JSON{Raw: []byte("3")}}},
				},
			}},
		},
	}
	if err := f.hub.Client.Create(ctx, op); err != nil {
		t.Fatal(err)
	}
	imageIn := func(c *framework.Cluster) string {
		_, d, _ := replicasIn(ctx, c, f.ns, "tuned")
		if d == nil {
			return "absent"
		}
		return fmt.Sprintf("%s x%d", d.Spec.Template.Spec.Containers[0].Image, ptr.Deref(d.Spec.Replicas, 1))
	}
	testenv.Eventually(t, time.Minute, "m1 gets the override, m3 does not", func() error {
		if a, b := imageIn(f.m1), imageIn(f.m3); a != "mirror.eu/nginx x3" || b != "nginx x1" {
			return fmt.Errorf("m1 %s, m3 %s", a, b)
		}
		return nil
	})
	// The per-cluster rows come from the binding's aggregated status, which follows the members.
	testenv.Eventually(t, time.Minute, "status shows the override on m1", func() error {
		if out := f.hub.Flotilla("status", "deployment/tuned", "-n", f.ns); !strings.Contains(out, "OverridePolicy/"+f.ns+"/tuned") {
			return fmt.Errorf("status does not show the override:\n%s", out)
		}
		return nil
	})

	// A rule that cannot apply is reported on the binding; m1 keeps its last good manifest.
	update(t, f.hub, op, func(op *policyv1alpha1.OverridePolicy) {
		op.Spec.OverrideRules[0].Overriders.Plaintext = append(op.Spec.OverrideRules[0].Overriders.Plaintext,
			policyv1alpha1.PlaintextOverrider{Path: "/spec/nothing/here", Operator: "replace", Value: &apiextensionsv1.JSON{Raw: []byte("1")}})
		op.Spec.OverrideRules[0].Overriders.ImageOverrider[0].Value = "mirror.other"
	})
	testenv.Eventually(t, time.Minute, "the binding says the override fails", func() error {
		rb := &workv1alpha1.ResourceBinding{}
		if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "tuned-deployment"}, rb); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionOverridden)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "/spec/nothing/here") {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if got := imageIn(f.m1); got != "mirror.eu/nginx x3" {
		t.Fatalf("m1 runs %s: a failing override must not half-apply", got)
	}

	if err := f.hub.Client.Delete(ctx, op); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "without the policy m1 runs the template as is", func() error {
		if got := imageIn(f.m1); got != "nginx x1" {
			return fmt.Errorf("m1 %s", got)
		}
		return nil
	})
}

// TestFieldOverriderChangesOneValueInsideYAML: a fieldOverrider changes one value inside a ConfigMap's YAML
// on one cluster and keeps the rest.
func TestFieldOverriderChangesOneValueInsideYAML(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: f.ns},
		Data: map[string]string{"config.yaml": "log:\n  level: info\nport: 8080\n"}}
	if _, err := f.hub.Kube.CoreV1().ConfigMaps(f.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	selector := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "app-config"}
	f.createPolicy(t, "app-config", selector, placementOn("m1", "m2"))
	op := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: f.ns},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{selector},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}},
				Overriders: policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{{
					FieldPath: "/data/config.yaml",
					YAML: []policyv1alpha1.JSONPatchOperation{{SubPath: "/log/level", Operator: "replace",
						Value: &apiextensionsv1.JSON{Raw: []byte(`"debug"`)}}},
				}}},
			}},
		},
	}
	if err := f.hub.Client.Create(ctx, op); err != nil {
		t.Fatal(err)
	}
	configIn := func(c *framework.Cluster) (map[string]any, error) {
		got, err := c.Kube.CoreV1().ConfigMaps(f.ns).Get(ctx, "app-config", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		config := map[string]any{}
		return config, yaml.Unmarshal([]byte(got.Data["config.yaml"]), &config)
	}
	testenv.Eventually(t, time.Minute, "m2's config says debug, m1's info, both keep the port", func() error {
		for c, level := range map[*framework.Cluster]string{f.m1: "info", f.m2: "debug"} {
			config, err := configIn(c)
			if err != nil {
				return err
			}
			if want := map[string]any{"log": map[string]any{"level": level}, "port": float64(8080)}; !reflect.DeepEqual(config, want) {
				return fmt.Errorf("%s holds %v, want %v", c.Name, config, want)
			}
		}
		return nil
	})
}
