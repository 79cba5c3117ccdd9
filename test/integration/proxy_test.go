package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/planecmd"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/members"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// startProxyMember runs a member cluster in a child process, joins it to the test hub in push mode with its
// admin kubeconfig and returns a cluster-admin client of the member.
func startProxyMember(t *testing.T, name string) (kubernetes.Interface, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	testenv.StartProcess(t, name, "dev", "member", "--name", name, "--data-dir", dir, "--nodes", "1", "--secure-port", strconv.Itoa(ports[0]))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	testenv.Eventually(t, 3*time.Minute, "member "+name+" ready", func() error {
		_, err := os.Stat(kubeconfig)
		return err
	})
	join := testenv.StartProcess(t, "join-"+name, "join", "--mode", "push", "--cluster-name", name,
		"--cluster-kubeconfig", kubeconfig, "--kubeconfig", env.Kubeconfig)
	if err := join.Wait(time.Minute); err != nil {
		t.Fatalf("push join of %s: %v\n%s", name, err, join.Output())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg), kubeconfig
}

// waitForProxyAPI waits until the hub's aggregator serves the proxy group.
func waitForProxyAPI(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "the proxy API served", func() error {
		return env.Kube.Discovery().RESTClient().Get().AbsPath("/apis", proxyv1alpha1.GroupName, "v1alpha1").Do(context.Background()).Error()
	})
}

// hubCaller returns the bearer token of a new service account of the hub: a hub user as the proxy sees
// callers, authenticated by the hub's kube-apiserver.
func hubCaller(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := env.Kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// grantProxy lets the service accounts use clusters/proxy on the named clusters of the hub.
func grantProxy(t *testing.T, name string, clusters []string, accounts ...string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{proxyv1alpha1.GroupName}, Resources: []string{"clusters/proxy"}, ResourceNames: clusters,
			Verbs: []string{"get", "create", "update", "patch", "delete"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	for _, a := range accounts {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: a, Namespace: "default"})
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The hub's RBAC authorizer reads from its informers: wait until the grant is seen.
	testenv.Eventually(t, 10*time.Second, "the proxy grant in effect", func() error {
		for _, a := range accounts {
			review, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, proxyAccessReview(a, clusters[0]), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if !review.Status.Allowed {
				return fmt.Errorf("%s may not proxy to %s yet", a, clusters[0])
			}
		}
		return nil
	})
}

func proxyURL(cluster string) string {
	return strings.TrimSuffix(env.Config.Host, "/") + proxyv1alpha1.ClusterProxyPath(cluster)
}

func proxyAccessReview(account, cluster string) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:default:" + account,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: proxyv1alpha1.GroupName, Resource: "clusters", Subresource: "proxy", Name: cluster, Verb: "get"},
	}}
}

// proxyThrough is a client of a member through the hub's proxy, as the caller holding token.
func proxyThrough(t *testing.T, cluster, token string) (kubernetes.Interface, *rest.Config) {
	t.Helper()
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.Host = proxyURL(cluster)
	cfg.BearerToken = token
	return kubernetes.NewForConfigOrDie(cfg), cfg
}

func TestProxy(t *testing.T) {
	ctx := context.Background()
	member, memberKubeconfig := startProxyMember(t, "pxm")
	waitForProxyAPI(t)

	outsider := hubCaller(t, "proxy-outsider")
	guest, dev := hubCaller(t, "proxy-guest"), hubCaller(t, "proxy-dev")
	grantProxy(t, "proxy-pxm", []string{"pxm"}, "proxy-guest", "proxy-dev")
	// On the member, only proxy-dev may do anything: member RBAC decides there.
	if _, err := member.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "proxy-dev"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccount:default:proxy-dev"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("the group lists the hub's clusters", func(t *testing.T) {
		raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/apis", proxyv1alpha1.GroupName, "v1alpha1", "clusters").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `"name":"pxm"`) {
			t.Fatalf("clusters of the proxy group do not include pxm: %s", raw)
		}
	})

	t.Run("without clusters/proxy on the cluster the hub answers 403", func(t *testing.T) {
		c, _ := proxyThrough(t, "pxm", outsider)
		_, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "clusters/proxy") {
			t.Fatalf("a hub user without clusters/proxy reached the member: %v", err)
		}
	})

	t.Run("the member's RBAC denial shows through, naming the caller", func(t *testing.T) {
		c, _ := proxyThrough(t, "pxm", guest)
		_, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:serviceaccount:default:proxy-guest"`) {
			t.Fatalf("want the member's 403 for proxy-guest, got %v", err)
		}
	})

	t.Run("a caller-supplied Impersonate-User header is refused", func(t *testing.T) {
		_, cfg := proxyThrough(t, "pxm", dev)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:admin", Groups: []string{"system:masters"}}
		c := kubernetes.NewForConfigOrDie(cfg)
		_, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "impersonate") {
			t.Fatalf("a caller chose whom the proxy impersonates: %v", err)
		}
	})

	t.Run("get, server-side apply, watch and delete through the proxy", func(t *testing.T) {
		c, _ := proxyThrough(t, "pxm", dev)
		if _, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		w, err := c.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=proxied"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		applied, err := c.CoreV1().ConfigMaps("default").Apply(ctx, corev1ac.ConfigMap("proxied", "default").WithData(map[string]string{"k": "v"}),
			metav1.ApplyOptions{FieldManager: "proxy-test"})
		if err != nil {
			t.Fatal(err)
		}
		// The member recorded the caller, not the hub's credential, as the manager's user.
		stored, err := member.CoreV1().ConfigMaps("default").Get(ctx, "proxied", metav1.GetOptions{})
		if err != nil || stored.Data["k"] != "v" || applied.UID != stored.UID {
			t.Fatalf("the applied ConfigMap on the member: %v, %v", stored, err)
		}
		if err := c.CoreV1().ConfigMaps("default").Delete(ctx, "proxied", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		seen := map[watch.EventType]bool{}
		timeout := time.After(20 * time.Second)
		for !seen[watch.Added] || !seen[watch.Deleted] {
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("the watch through the proxy ended; seen %v", seen)
				}
				seen[e.Type] = true
			case <-timeout:
				t.Fatalf("the watch through the proxy saw only %v", seen)
			}
		}
	})

	t.Run("the member sees the caller by impersonation", func(t *testing.T) {
		c, _ := proxyThrough(t, "pxm", dev)
		review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := review.Status.UserInfo.Username; got != "system:serviceaccount:default:proxy-dev" {
			t.Fatalf("the member saw %q", got)
		}
		// The hub's system:serviceaccounts groups mean nothing in the member: only system:authenticated
		// passes (the test hub passes system:masters too, as flotilla up does).
		if got := review.Status.UserInfo.Groups; !slices.Equal(got, []string{"system:authenticated"}) {
			t.Fatalf("the member saw proxy-dev in groups %v, want only system:authenticated", got)
		}
	})

	t.Run("clusters/proxy on one cluster reaches no other", func(t *testing.T) {
		pushCluster(t, "pxother", map[string][]byte{members.SecretKeyToken: []byte(memberToken(t))}, func(s *clusterv1alpha1.ClusterSpec) {
			s.InsecureSkipTLSVerification = true
		})
		c, _ := proxyThrough(t, "pxother", dev)
		_, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "clusters/proxy") {
			t.Fatalf("proxy-dev, allowed only pxm, reached pxother: %v", err)
		}
	})

	t.Run("flotilla kubeconfig and kubectl reach the member as the caller", func(t *testing.T) {
		hubKubeconfig := callerKubeconfig(t, dev)
		out := filepath.Join(t.TempDir(), "pxm.kubeconfig")
		if output, err := runFlotillaAs(ctx, hubKubeconfig, "kubeconfig", "pxm", "--out", out); err != nil {
			t.Fatalf("flotilla kubeconfig: %v\n%s", err, output)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", out)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != proxyURL("pxm") {
			t.Fatalf("server %s, want %s", cfg.Host, proxyURL("pxm"))
		}
		review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil || review.Status.UserInfo.Username != "system:serviceaccount:default:proxy-dev" {
			t.Fatalf("through the kubeconfig the member saw %v (%v)", review, err)
		}
		if _, err := exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl is not on PATH")
		}
		output, err := runFlotillaAs(ctx, hubKubeconfig, "kubectl", "pxm", "--", "get", "namespace", "kube-system", "-o", "name")
		if err != nil || strings.TrimSpace(output) != "namespace/kube-system" {
			t.Fatalf("flotilla kubectl: %v\n%s", err, output)
		}
	})

	t.Run("a push join whose credentials may not impersonate is refused, saying what is missing", func(t *testing.T) {
		kubeconfig := memberViewer(t, member, memberKubeconfig)
		join := testenv.StartProcess(t, "join-pxlimited", "join", "--mode", "push", "--cluster-name", "pxlimited",
			"--cluster-kubeconfig", kubeconfig, "--kubeconfig", env.Kubeconfig)
		err := join.Wait(time.Minute)
		want := "may not impersonate users, impersonate groups, impersonate serviceaccounts, impersonate uids.authentication.k8s.io, impersonate userextras.authentication.k8s.io"
		if err == nil || !strings.Contains(join.Output(), want) {
			t.Fatalf("want the join refused with %q: %v\n%s", want, err, join.Output())
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "pxlimited"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the refused join left a Cluster: %v", err)
		}
	})

	t.Run("a pull member without a tunnel answers 503 naming the cluster", func(t *testing.T) {
		if _, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "pxpull"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-pxpull"},
		}); err != nil {
			t.Fatal(err)
		}
		admin := rest.CopyConfig(env.Config)
		admin.Host = proxyURL("pxpull")
		c := kubernetes.NewForConfigOrDie(admin)
		testenv.Eventually(t, 10*time.Second, "503 from the proxy for pxpull", func() error {
			_, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "no tunnel for cluster pxpull") {
				return fmt.Errorf("want 503 naming pxpull, got %v", err)
			}
			return nil
		})
	})

	t.Run("fleet list", func(t *testing.T) { testFleetList(t, member, dev) })
}

// callerKubeconfig is the test hub's admin kubeconfig with the user replaced by a bearer token.
func callerKubeconfig(t *testing.T, token string) string {
	t.Helper()
	return withToken(t, env.Kubeconfig, token)
}

// withToken writes a copy of kubeconfig whose users are the bearer token.
func withToken(t *testing.T, kubeconfig, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range cfg.AuthInfos {
		*user = clientcmdapi.AuthInfo{Token: token}
	}
	path := filepath.Join(t.TempDir(), "caller.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runFlotillaAs runs the flotilla command line in this process with a hub kubeconfig.
func runFlotillaAs(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	root := planecmd.NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	// The flag goes before the arguments: after "--" they are kubectl's.
	root.SetArgs(append([]string{args[0], "--kubeconfig", kubeconfig}, args[1:]...))
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// memberViewer writes a kubeconfig of the member for a service account that may only read (ClusterRole
// view): enough to join, not to impersonate.
func memberViewer(t *testing.T, member kubernetes.Interface, kubeconfig string) string {
	t.Helper()
	ctx := context.Background()
	sa, err := member.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := member.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := member.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return withToken(t, kubeconfig, tr.Status.Token)
}
