package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// pushCluster registers the test hub itself as a Push member named name, with the given Secret data and
// Cluster spec changes.
func pushCluster(t *testing.T, name string, data map[string][]byte, change func(*clusterv1alpha1.ClusterSpec)) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + name, Namespace: clusterv1alpha1.SystemNamespace}, Data: data}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	// The member of these clusters is the test hub itself: the hub confirms the member answers with this ID.
	kubeSystem, err := env.Kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := clusterv1alpha1.ClusterSpec{
		SyncMode: clusterv1alpha1.Push, ID: string(kubeSystem.UID), APIEndpoint: env.Config.Host,
		SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: clusterv1alpha1.SystemNamespace, Name: secret.Name},
	}
	if change != nil {
		change(&spec)
	}
	if _, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}); err != nil {
		t.Fatal(err)
	}
}

// memberToken returns a bearer token of a cluster-admin service account of the test hub, the member of these
// Push clusters.
func memberToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "push-member", Namespace: "default"}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "push-member"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}
	for _, o := range []client.Object{sa, binding} {
		if err := env.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) { // a second test's push member
			t.Fatal(err)
		}
	}
	tr, err := env.Kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// connectProxy is an HTTP CONNECT proxy that counts the tunnels it opened.
func connectProxy(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var tunnels atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		upstream, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		tunnels.Add(1)
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() { _, _ = io.Copy(upstream, conn); upstream.Close() }()
		go func() { _, _ = io.Copy(conn, upstream); conn.Close() }()
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String(), &tunnels
}

func credentialsCondition(name string) (*metav1.Condition, *clusterv1alpha1.Cluster, error) {
	c := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		return nil, nil, err
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionCredentialsValid)
	if cond == nil {
		return nil, c, errors.New("no CredentialsValid condition yet")
	}
	return cond, c, nil
}

// TestPushCredentialsInTheSecretAndCluster: a Karmada-style push Secret (token and caBundle) with the
// address on the Cluster reaches the member for status and Works; insecureSkipTLSVerification and proxyURL
// take effect.
func TestPushCredentialsInTheSecretAndCluster(t *testing.T) {
	token := memberToken(t)
	proxy, tunnels := connectProxy(t)
	pushCluster(t, "push-token", map[string][]byte{"token": []byte(token), "caBundle": env.Config.CAData}, nil)
	pushCluster(t, "push-insecure", map[string][]byte{"token": []byte(token)}, func(s *clusterv1alpha1.ClusterSpec) {
		s.InsecureSkipTLSVerification = true
	})
	pushCluster(t, "push-proxied", map[string][]byte{"token": []byte(token), "caBundle": env.Config.CAData}, func(s *clusterv1alpha1.ClusterSpec) {
		s.ProxyURL = proxy
	})
	for _, name := range []string{"push-token", "push-insecure", "push-proxied"} {
		testenv.Eventually(t, time.Minute, name+" reported through its credentials", func() error {
			cond, c, err := credentialsCondition(name)
			if err != nil {
				return err
			}
			if cond.Status != metav1.ConditionTrue {
				return fmt.Errorf("CredentialsValid = %s: %s", cond.Status, cond.Message)
			}
			if c.Status.KubernetesVersion == "" {
				return errors.New("no status reported yet")
			}
			return nil
		})
	}
	if tunnels.Load() == 0 {
		t.Fatal("push-proxied was reached without its proxyURL")
	}

	// The executor applies Works with the same credentials.
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "pushed-with-a-token", Namespace: "default"}, Data: map[string]string{"a": "b"}}
	raw, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	work := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Name: "pushed", Namespace: clusterv1alpha1.ClusterNamespace("push-token"),
			Labels: ownedWorkLabels(t, clusterv1alpha1.ClusterNamespace("push-token"), "pushed", nil)},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}
	if err := env.Client.Create(context.Background(), work); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the Work applied with the token", func() error {
		return env.Client.Get(context.Background(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	})
}

// TestPushCredentialsThatRunOrReadAreRefused: Secrets whose kubeconfig would make the hub run a command or
// read a file turn CredentialsValid False with the reason, and the command never runs; so do credentials
// that reach a member other than the one the Cluster's ID names.
func TestPushCredentialsThatRunOrReadAreRefused(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "exec-ran")
	kubeconfig := func(user *clientcmdapi.AuthInfo, cluster *clientcmdapi.Cluster) []byte {
		cfg := clientcmdapi.NewConfig()
		cluster.Server = env.Config.Host
		cfg.Clusters["m"], cfg.AuthInfos["m"] = cluster, user
		cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
		cfg.CurrentContext = "m"
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, env.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data map[string][]byte
		want string
	}{
		{"push-exec", map[string][]byte{"kubeconfig": kubeconfig(&clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			Command: "/bin/sh", Args: []string{"-c", "touch " + ran}, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}}, &clientcmdapi.Cluster{CertificateAuthorityData: env.Config.CAData})}, `runs the command "/bin/sh" (exec)`},
		{"push-auth-provider", map[string][]byte{"kubeconfig": kubeconfig(&clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}},
			&clientcmdapi.Cluster{CertificateAuthorityData: env.Config.CAData})}, `uses the auth-provider "oidc"`},
		{"push-ca-file", map[string][]byte{"kubeconfig": kubeconfig(&clientcmdapi.AuthInfo{Token: "x"},
			&clientcmdapi.Cluster{CertificateAuthority: caFile})}, "names the file certificate-authority"},
		{"push-token-file", map[string][]byte{"kubeconfig": kubeconfig(&clientcmdapi.AuthInfo{TokenFile: caFile},
			&clientcmdapi.Cluster{CertificateAuthorityData: env.Config.CAData})}, "names the file tokenFile"},
		{"push-no-credentials", map[string][]byte{"caBundle": env.Config.CAData}, "neither key kubeconfig nor key token"},
	}
	for _, tt := range tests {
		pushCluster(t, tt.name, tt.data, nil)
	}
	// Valid credentials that lead to another cluster than the Cluster's ID are not used either.
	elsewhere := struct {
		name string
		data map[string][]byte
		want string
	}{"push-elsewhere", map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, "not id-of-another-member (spec.id)"}
	pushCluster(t, elsewhere.name, elsewhere.data, func(s *clusterv1alpha1.ClusterSpec) { s.ID = "id-of-another-member" })
	tests = append(tests, elsewhere)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testenv.Eventually(t, time.Minute, "CredentialsValid=False", func() error {
				cond, _, err := credentialsCondition(tt.name)
				if err != nil {
					return err
				}
				if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, tt.want) {
					return fmt.Errorf("CredentialsValid = %s: %s", cond.Status, cond.Message)
				}
				return nil
			})
		})
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the hub ran the exec command of a push credential")
	}
}

// TestPushExecutorFollowsTheSyncMode: the hub's executor leaves a Pull cluster's Works to its agent, takes
// them up when the cluster is switched to Push (no event of the Work's own comes then), and lets them be
// again when it is switched back.
func TestPushExecutorFollowsTheSyncMode(t *testing.T) {
	ctx := context.Background()
	const name = "push-later"
	pushCluster(t, name, map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, func(s *clusterv1alpha1.ClusterSpec) {
		s.SyncMode = clusterv1alpha1.Pull
	})
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "pushed-once-push", Namespace: "default"}, Data: map[string]string{"a": "b"}}
	manifests := func() []workv1alpha1.Manifest {
		raw, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		return []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	}
	namespace := clusterv1alpha1.ClusterNamespace(name)
	work := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Name: "pushed-later", Namespace: namespace, Labels: ownedWorkLabels(t, namespace, "pushed-later", nil)},
		Spec:       workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: manifests()}},
	}
	if err := env.Client.Create(ctx, work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, cm) })
	setMode := func(mode clusterv1alpha1.ClusterSyncMode) {
		t.Helper()
		c := &clusterv1alpha1.Cluster{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			t.Fatal(err)
		}
		base := c.DeepCopy()
		c.Spec.SyncMode = mode
		// A patch, not an update: the hub's controllers write the Cluster meanwhile.
		if err := env.Client.Patch(ctx, c, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	// Applied by the time a Push cluster's Work would be (the other push tests take a few seconds at most).
	time.Sleep(3 * time.Second)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the hub applied a Pull cluster's Work (or the read failed): %v", err)
	}

	setMode(clusterv1alpha1.Push)
	testenv.Eventually(t, time.Minute, "the Work applied once its cluster is pushed to", func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	})

	// Back to Pull: a change of the Work is its agent's to apply.
	setMode(clusterv1alpha1.Pull)
	time.Sleep(2 * time.Second) // the Cluster's update reaches the executor's informer
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(work), work); err != nil {
		t.Fatal(err)
	}
	base := work.DeepCopy()
	cm.Data = map[string]string{"a": "changed"}
	work.Spec.Workload.Manifests = manifests()
	if err := env.Client.Patch(ctx, work, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	got := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil || got.Data["a"] != "b" {
		t.Fatalf("the hub applied the Work of a cluster switched back to Pull: %v %v", got.Data, err)
	}
}
