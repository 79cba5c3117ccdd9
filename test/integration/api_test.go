// Package integration tests the hub against a real kube-apiserver started once for the package (testenv), and
// hub processes started, killed and restarted by the tests.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func TestCRDsEstablished(t *testing.T) {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := env.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"clusters.cluster.flotilla.io":                  {"fc", "fcluster"},
		"propagationpolicies.policy.flotilla.io":        {"pp"},
		"clusterpropagationpolicies.policy.flotilla.io": {"cpp"},
		"overridepolicies.policy.flotilla.io":           {"op"},
		"clusteroverridepolicies.policy.flotilla.io":    {"cop"},
		"resourcebindings.work.flotilla.io":             {"rb"},
		"clusterresourcebindings.work.flotilla.io":      {"crb"},
		"works.work.flotilla.io":                        nil,
		"rebalancers.work.flotilla.io":                  {"rebal"},
		"federatedresourcequotas.policy.flotilla.io":    {"frq"},
		// The SIG-Multicluster kinds share one group: the inventory's and the multi-cluster services'.
		"clusterprofiles.multicluster.x-k8s.io": nil,
		"serviceexports.multicluster.x-k8s.io":  {"svcex", "svcexport"},
		"serviceimports.multicluster.x-k8s.io":  {"svcim", "svcimport"},
	}
	found := 0
	for _, crd := range list.Items {
		shortNames, ok := want[crd.Name]
		if !ok {
			continue
		}
		found++
		if strings.Join(crd.Spec.Names.ShortNames, ",") != strings.Join(shortNames, ",") {
			t.Errorf("%s short names = %v, want %v", crd.Name, crd.Spec.Names.ShortNames, shortNames)
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		if !established {
			t.Errorf("%s is not Established", crd.Name)
		}
	}
	if found != len(want) {
		t.Fatalf("found %d of the %d Flotilla CRDs", found, len(want))
	}
}

// TestValidObjectsAccepted creates one realistic object of every kind, and the README's example policy.
func TestValidObjectsAccepted(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../examples/cluster-propagation-policy.yaml")
	kinds := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			obj := readObject(t, f)
			kinds[obj.GetKind()] = true
			if err := env.Client.Create(context.Background(), obj); err != nil {
				t.Fatalf("creating %s: %v", f, err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
		})
	}
	for _, k := range []string{"Cluster", "PropagationPolicy", "ClusterPropagationPolicy", "OverridePolicy",
		"ClusterOverridePolicy", "ResourceBinding", "ClusterResourceBinding", "Work", "Rebalancer", "FederatedResourceQuota"} {
		if !kinds[k] {
			t.Errorf("no valid %s in testdata/valid", k)
		}
	}
}

func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseObject(t, string(data))
}

func parseObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("bad test object: %v\n%s", err, doc)
	}
	return obj
}

// createDryRun submits obj through the whole admission chain without storing it.
func createDryRun(obj client.Object) error {
	return env.Client.Create(context.Background(), obj, client.DryRunAll)
}

func policy(kind, spec string) string {
	ns := ""
	if kind == "PropagationPolicy" || kind == "OverridePolicy" {
		ns = "\n  namespace: default"
	}
	return fmt.Sprintf("apiVersion: policy.flotilla.io/v1alpha1\nkind: %s\nmetadata:\n  name: x%s\nspec:\n%s", kind, ns, spec)
}
