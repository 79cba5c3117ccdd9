package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/planecmd"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// diffPolicy is the policy of TestDiffPreviewsPlacementAndOverrides: the Deployment web of cli-diff, its
// replicas divided over clusters, tolerating the health taints of the agentless test clusters.
const diffPolicy = `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
  placement:
    clusterAffinity:
      clusterNames: [%s]
    clusterTolerations:
    - operator: Exists
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
`

// TestDiffPreviewsPlacementAndOverrides: with the Deployment web placed on diff-a by its policy, `flotilla diff
// -f` of the policy widened to diff-b and a new OverridePolicy says that diff-b gains the template and diff-a's
// share of the replicas halves, shows the override's label in each cluster's manifest, and says that a
// template of the file no policy selects is placed by none. Nothing on the hub changes: the policy, the
// template and the binding keep their resourceVersions, and no OverridePolicy or Work appears. The same
// file read from standard input (-f -) gives the same preview.
func TestDiffPreviewsPlacementAndOverrides(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-diff"
	createNamespace(t, ns)
	for _, name := range []string{"diff-a", "diff-b"} {
		placeableCluster(t, name, nil)
		updateClusterStatus(t, name, func(s *clusterv1alpha1.ClusterStatus) {
			s.APIEnablements = append(s.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: "apps/v1",
				Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}})
		})
	}
	labels := map[string]string{"app": "web"}
	create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(4)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}})
	policy := &policyv1alpha1.PropagationPolicy{}
	if err := yaml.Unmarshal([]byte(fmt.Sprintf(diffPolicy, "diff-a")), policy); err != nil {
		t.Fatal(err)
	}
	policy.Namespace = ns
	create(t, policy)
	dir := t.TempDir()
	deploymentKind := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	var b *workv1alpha1.ResourceBinding
	testenv.Eventually(t, hangGuard, "web placed on diff-a", func() error {
		var err error
		if b, err = binding(ctx, deploymentKind, ns, "web"); err != nil {
			return err
		}
		if len(b.Spec.Clusters) != 1 || b.Spec.Clusters[0].Name != "diff-a" || b.Spec.Clusters[0].Replicas != 4 {
			return fmt.Errorf("placed on %v", b.Spec.Clusters)
		}
		return nil
	})

	changed := filepath.Join(dir, "changed.yaml")
	writeFile(t, changed, fmt.Sprintf(diffPolicy, "diff-a, diff-b")+`---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata:
  name: gold
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
  overrideRules:
  - overriders:
      labelsOverrider:
      - operator: add
        value: {tier: gold}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: lonely
data: {a: b}
`)
	versions := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for name, obj := range map[string]client.Object{"policy": &policyv1alpha1.PropagationPolicy{}, "deployment": &appsv1.Deployment{},
			"binding": &workv1alpha1.ResourceBinding{}} {
			key := client.ObjectKey{Namespace: ns, Name: "web"}
			if name == "binding" {
				key.Name = b.Name
			}
			if err := env.Client.Get(ctx, key, obj); err != nil {
				t.Fatal(err)
			}
			// Not the resourceVersion: the hub's controllers write the policy's status meanwhile.
			out[name] = fmt.Sprint(obj.GetGeneration(), obj.GetLabels(), obj.GetAnnotations())
		}
		return out
	}
	before := versions()

	out, err := runFlotilla(ctx, "diff", "-f", changed, "-n", ns)
	if err != nil {
		t.Fatalf("flotilla diff: %v\n%s", err, out)
	}
	t.Logf("flotilla diff -f %s:\n%s", changed, out)
	for _, want := range []string{
		"Deployment cli-diff/web: placed by PropagationPolicy cli-diff/web",
		"+ cluster diff-b (replicas 2)",
		"~ cluster diff-a: replicas 4 -> 2",
		"+++ diff-a/Deployment cli-diff/web",
		"--- /dev/null",
		"+    tier: gold",
		"-  replicas: 4",
		"+  replicas: 2",
		"ConfigMap cli-diff/lonely: no policy places it",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("flotilla diff: want %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "- cluster") {
		t.Errorf("flotilla diff says a cluster loses the template:\n%s", out)
	}

	root := planecmd.NewRoot()
	data, err := os.ReadFile(changed)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	root.SetIn(bytes.NewReader(data))
	root.SetOut(&stdout)
	root.SetErr(&stdout)
	root.SetArgs([]string{"diff", "-f", "-", "-n", ns, "--kubeconfig", env.Kubeconfig})
	if err := root.ExecuteContext(ctx); err != nil || stdout.String() != out {
		t.Errorf("flotilla diff -f -: %v\n%s\nwant the preview of -f FILE", err, stdout.String())
	}

	if after := versions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("generation, labels and annotations after diff %v, before %v", after, before)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gold"}, &policyv1alpha1.OverridePolicy{}); !apierrors.IsNotFound(err) {
		t.Errorf("the OverridePolicy after diff: %v, want none", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lonely"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap after diff: %v, want none", err)
	}
	works := &workv1alpha1.WorkList{}
	if err := env.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ClusterNamespace("diff-b"))); err != nil || len(works.Items) > 0 {
		t.Errorf("Works of diff-b after diff: %v, %d", err, len(works.Items))
	}

	// The hub's refusal is the error, and a file of nothing is one.
	writeFile(t, changed, strings.Replace(fmt.Sprintf(diffPolicy, "diff-a"), "Divided", "Sometimes", 1))
	if out, err := runFlotilla(ctx, "diff", "-f", changed, "-n", ns); err == nil || !strings.Contains(err.Error(), "the hub refuses PropagationPolicy cli-diff/web") {
		t.Errorf("flotilla diff of an invalid policy: %v\n%s", err, out)
	}
	writeFile(t, changed, "# nothing\n")
	if out, err := runFlotilla(ctx, "diff", "-f", changed); err == nil || !strings.Contains(err.Error(), "no objects") {
		t.Errorf("flotilla diff of an empty file: %v\n%s", err, out)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
