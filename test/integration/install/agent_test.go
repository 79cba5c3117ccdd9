package install

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agent"
	"github.com/flotilla-io/flotilla/internal/helmchart"
	"github.com/flotilla-io/flotilla/internal/install"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestAgentInstalledInMember: `flotilla join --install` applies the agent chart's objects to a real member;
// the agent then runs as its pod would (in-cluster environment, a token of the chart's ServiceAccount, no
// kubeconfig, no data directory): it joins, deletes the token's Secret, carries the hub's proxy requests (the
// chart's impersonation rule), applies a Work, renews its certificate, keeps its credential in the chart's
// Secret, and after a restart without a token is the same agent. `flotilla unjoin --uninstall` then removes
// the chart's objects and nothing else.
func TestAgentInstalledInMember(t *testing.T) {
	ctx := context.Background()
	const name = "incluster"
	m := startMember(t, name)
	hubURL, token, hashes := joinArgs(t, name)
	run(t, "join-install", "join", hubURL, "--install", "--cluster-kubeconfig", m.kubeconfig, "--token", token,
		"--ca-cert-hash", strings.Join(hashes, ","), "--cluster-name", name, "--agent-image", "registry.local:5000/flotilla-agent:test")

	ns := install.DefaultAgentNamespace
	deploy, err := m.kube.AppsV1().Deployments(ns).Get(ctx, install.DefaultAgentRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("join --install made no Deployment: %v", err)
	}
	if image := deploy.Spec.Template.Spec.Containers[0].Image; image != "registry.local:5000/flotilla-agent:test" {
		t.Errorf("agent image %s", image)
	}
	// Something of the member's own in the namespace, which the uninstall must leave.
	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: ns, Labels: map[string]string{"app.kubernetes.io/name": "flotilla-agent"}}}
	if _, err := m.kube.CoreV1().Secrets(ns).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The pod's environment: the member's address, and a token of the agent's ServiceAccount with the
	// member's CA and the namespace, where the kubelet would mount them.
	saDir := t.TempDir()
	tr, err := m.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, install.DefaultAgentRelease,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": m.config.CAData, "namespace": []byte(ns)} {
		if err := os.WriteFile(filepath.Join(saDir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(m.config.Host)
	if err != nil {
		t.Fatal(err)
	}
	bootstrap, err := m.kube.CoreV1().Secrets(ns).Get(ctx, install.DefaultAgentRelease+"-bootstrap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podEnv := []string{"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port(),
		agent.ServiceAccountDirEnv + "=" + saDir, "HOME=/nonexistent"}
	// The arguments the chart gives the container, with a short certificate so that it renews within the test,
	// and the probes on a free port of this machine rather than the pod's 8081.
	chartArgs := append(deploy.Spec.Template.Spec.Containers[0].Args, "--health-probe-bind-address=127.0.0.1:0")
	if probe := deploy.Spec.Template.Spec.Containers[0].ReadinessProbe; probe == nil || probe.HTTPGet.Path != "/readyz" {
		t.Fatalf("the chart's agent has no readiness probe on /readyz: %+v", probe)
	}
	args := append(chartArgs, "--cert-ttl", "10m", "--renew-before", "9m50s", "--metrics-bind-address=127.0.0.1:0")
	agentProcess := testenv.StartProcessEnv(t, append(podEnv, "FLOTILLA_TOKEN="+string(bootstrap.Data["token"])), "agent", args...)
	waitOutput(t, agentProcess, time.Minute, "agent of cluster "+name+" reporting")
	waitReady(t, agentProcess)

	credential := func() *x509.Certificate {
		t.Helper()
		secret, err := m.kube.CoreV1().Secrets(ns).Get(ctx, install.DefaultAgentRelease+"-credential", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.Load(secret.Data[registration.CredentialSecretKey])
		if err != nil {
			t.Fatalf("the credential Secret holds no kubeconfig: %v", err)
		}
		certs, err := certutil.ParseCertsPEM(cfg.AuthInfos["agent"].ClientCertificateData)
		if err != nil {
			t.Fatal(err)
		}
		return certs[0]
	}
	first := credential()
	if _, err := m.kube.CoreV1().Secrets(ns).Get(ctx, bootstrap.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the token's Secret is still there once the agent joined: %v", err)
	}
	// The hub's admin reaches the member through the hub's proxy and the agent's tunnel, as themselves.
	testenv.Eventually(t, time.Minute, "the member through the hub's proxy", func() error {
		return env.Kube.Discovery().RESTClient().Get().AbsPath(proxyv1alpha1.ClusterProxyPath(name), "api/v1/namespaces/default").Do(ctx).Error()
	})
	waitWorkApplied(t, m, name, "before-restart")
	servesMetricsUnderHubNames(t, agentProcess)
	waitOutput(t, agentProcess, time.Minute, "hub certificate renewed")
	renewed := credential()
	if renewed.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the renewed certificate is not in the credential Secret")
	}
	agentProcess.Kill()

	// A new pod: the same arguments, no token (its Secret is gone), the same credential Secret; it is the
	// same agent.
	restarted := testenv.StartProcessEnv(t, podEnv, "agent-restarted", chartArgs...)
	waitOutput(t, restarted, time.Minute, "agent of cluster "+name+" reporting")
	waitReady(t, restarted)
	if user := credential().Subject.CommonName; user != first.Subject.CommonName {
		t.Fatalf("the restarted agent is %s, not %s", user, first.Subject.CommonName)
	}
	waitWorkApplied(t, m, name, "after-restart")
	restarted.Kill()

	out := run(t, "unjoin-uninstall", "unjoin", name, "--kubeconfig", env.Kubeconfig, "--uninstall", "--cluster-kubeconfig", m.kubeconfig)
	if !strings.Contains(out, "Deployment "+ns+"/"+install.DefaultAgentRelease) {
		t.Errorf("unjoin --uninstall does not say it deleted the Deployment:\n%s", out)
	}
	objs, err := helmchart.AgentObjects(install.DefaultAgentRelease, ns, install.AgentValues{HubURL: hubURL, CACertHashes: hashes, ClusterName: name, Token: token, CertTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	member, err := client.New(m.config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		testenv.Eventually(t, 30*time.Second, obj.GetKind()+" "+obj.GetName()+" is gone", func() error {
			if err := member.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy()); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			return nil
		})
	}
	if _, err := m.kube.CoreV1().Secrets(ns).Get(ctx, own.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the uninstall removed a Secret that is not the release's: %v", err)
	}
	if _, err := m.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the uninstall removed the namespace: %v", err)
	}
}

// servesMetricsUnderHubNames scrapes agent process p at the metrics address it printed: its build, and its
// Work execution's reconciles and queue under the names the hub serves its own controllers' (never
// controller-runtime's own names), so one dashboard query reads both.
func servesMetricsUnderHubNames(t *testing.T, p *testenv.Process) {
	t.Helper()
	m := regexp.MustCompile(`metrics served at (http://\S+)/metrics`).FindStringSubmatch(p.Output())
	if m == nil {
		t.Fatalf("the agent did not print where it serves its metrics:\n%s", p.Output())
	}
	testenv.Eventually(t, time.Minute, "the agent's metrics", func() error {
		resp, err := http.Get(m[1] + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		for _, want := range []string{"flotilla_build_info{", `flotilla_controller_reconcile_total{controller="execution"`, `flotilla_workqueue_depth{controller="execution"`, "rest_client_requests_total{"} {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("/metrics has no %s", want)
			}
		}
		if strings.Contains(string(body), "\ncontroller_runtime_") || strings.Contains(string(body), "\nworkqueue_") {
			return errors.New("/metrics serves controller-runtime's series under their own names")
		}
		return nil
	})
}

// waitReady waits until the agent process p answers its readiness probe, at the address it printed.
func waitReady(t *testing.T, p *testenv.Process) {
	t.Helper()
	probes := regexp.MustCompile(`health probes served at (http://\S+)/healthz`)
	testenv.Eventually(t, time.Minute, "the agent ready on /readyz", func() error {
		m := probes.FindStringSubmatch(p.Output())
		if m == nil {
			return errors.New("no probe address printed yet")
		}
		resp, err := http.Get(m[1] + "/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answers %s", resp.Status)
		}
		return nil
	})
}

// waitWorkApplied puts a Work with a ConfigMap named name into the cluster's namespace on the hub and waits
// for the ConfigMap in the member.
func waitWorkApplied(t *testing.T, m *member, cluster, name string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"k": "v"}}
	raw, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	// The Work's binding, which the hub's work sweeper would otherwise find missing. Its template does not
	// exist and its placement selects no cluster, so no controller writes or changes a Work for it.
	owner := &workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-configmap"},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: name + "-absent"},
			Placement: &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"nowhere"}}}}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, owner) })
	work := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterv1alpha1.ClusterNamespace(cluster),
			Labels: map[string]string{workv1alpha1.LabelBindingName: owner.Name}},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}
	testenv.Eventually(t, time.Minute, "the cluster's namespace on the hub", func() error {
		err := env.Client.Create(ctx, work)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	testenv.Eventually(t, time.Minute, "ConfigMap "+name+" applied in the member", func() error {
		_, err := m.kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return errors.New("not yet")
		}
		return err
	})
}
