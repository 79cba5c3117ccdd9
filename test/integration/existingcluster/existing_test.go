// Package existingcluster tests `flotilla hub --kubeconfig`: a hub that adopts a plain Kubernetes cluster,
// started here in-process without any Flotilla part.
package existingcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.MainCluster(m, &env) }

// TestHubAdoptsExistingCluster runs the hub against a cluster that has never seen Flotilla: the CRDs appear
// and become Established, the hub leads its controllers there, serves its metrics and probes on a port of its
// own, and a restarted hub repairs a changed CRD.
func TestHubAdoptsExistingCluster(t *testing.T) {
	ctx := context.Background()
	crdNames := []string{}
	crds, err := hub.CRDs(true, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		crdNames = append(crdNames, crd.Name)
		if err := env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{}); err == nil {
			t.Fatalf("the existing cluster already has %s before the hub ran", crd.Name)
		}
	}

	// The cluster publishes its own cluster-info (kubeadm does); the hub must leave it alone.
	hostInfo := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: "kube-public"}, Data: map[string]string{"kubeconfig": "the host's own"}}
	if err := env.Client.Create(ctx, hostInfo); err != nil {
		t.Fatal(err)
	}

	p := startAdoptingHub(t)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(hostInfo), hostInfo); err != nil || hostInfo.Data["kubeconfig"] != "the host's own" {
		t.Fatalf("the hub changed the host cluster's kube-public/cluster-info: %v %v", err, hostInfo.Data)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: registration.ClusterInfoNamespace, Name: registration.ClusterInfoName}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the hub did not publish its own %s for agents: %v", registration.ClusterInfoName, err)
	}
	for _, name := range crdNames {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatalf("CRD %s not installed: %v", name, err)
		}
	}
	testenv.Eventually(t, time.Minute, "the hub leads its controllers", func() error {
		lease, err := env.Kube.CoordinationV1().Leases(clusterv1alpha1.SystemNamespace).Get(ctx, hub.LeaderLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return errors.New("lease has no holder")
		}
		return nil
	})

	servesMetricsAndProbes(t, p)

	// This API server has no AgentAuthorizer: a Pull agent's rights on its own Cluster are RBAC's.
	pull, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "adopted-pull"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}})
	if err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "flotilla:agent:adopted-pull"}, binding); err != nil {
		t.Fatalf("no ClusterRoleBinding for the agent of a Pull cluster on a hub without its own authorizer: %v", err)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Name != registration.CurrentAgentUser(pull) {
		t.Fatalf("the agent's ClusterRoleBinding binds %v, want %s", binding.Subjects, registration.CurrentAgentUser(pull))
	}
	p.Kill()

	// Somebody edits a Flotilla CRD; the next hub start puts the embedded definition back.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "works.work.flotilla.io"}, crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Names.ShortNames = []string{"changed"}
	if err := env.Client.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	startAdoptingHub(t)
	if err := env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Names.ShortNames) != 0 {
		t.Fatalf("hub did not upgrade the edited CRD: short names %v", crd.Spec.Names.ShortNames)
	}
}

func startAdoptingHub(t *testing.T) *testenv.Process {
	p := testenv.StartProcess(t, "hub", "hub", "--kubeconfig", env.Kubeconfig)
	testenv.Eventually(t, 2*time.Minute, "hub on the existing cluster is ready", func() error {
		if p.Exited() {
			t.Fatalf("hub exited:\n%s", p.Output())
		}
		if !strings.Contains(p.Output(), "hub ready on the cluster of") {
			return errors.New("not ready yet")
		}
		return nil
	})
	return p
}

// servesMetricsAndProbes scrapes the metrics of hub process p at the address it printed: flotilla_build_info,
// the fleet's gauges and controller-runtime's series under Flotilla's names, and a ready /readyz.
func servesMetricsAndProbes(t *testing.T, p *testenv.Process) {
	t.Helper()
	m := regexp.MustCompile(`metrics at (http://\S+)/metrics`).FindStringSubmatch(p.Output())
	if m == nil {
		t.Fatalf("the hub did not print where it serves its metrics:\n%s", p.Output())
	}
	testenv.Eventually(t, time.Minute, "the hub's metrics and probes", func() error {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body := httpGet(m[1] + path); code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", path, code, body)
			}
		}
		code, body := httpGet(m[1] + "/metrics")
		if code != http.StatusOK {
			return fmt.Errorf("/metrics: %d %s", code, body)
		}
		for _, want := range []string{"flotilla_build_info{", `flotilla_clusters{ready="True"}`, "flotilla_controller_reconcile_total{", "flotilla_workqueue_depth{"} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("/metrics has no %s", want)
			}
		}
		if strings.Contains(body, "\ncontroller_runtime_") || strings.Contains(body, "\nworkqueue_") {
			return errors.New("/metrics serves controller-runtime's series under their own names too")
		}
		return nil
	})
}

// httpGet returns the status and body of url, or 0 and the error.
func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
