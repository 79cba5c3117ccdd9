package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/proxy"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// TestTunnel joins a member in pull mode (the hub holds no credential for it) and reaches it through the
// hub's proxy over the tunnel its agent opens; the agent of one cluster can neither open another's tunnel nor
// use the proxy; the TunnelConnected condition follows the agent.
func TestTunnel(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "tnm1")
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	testenv.StartProcess(t, "tnm1", "dev", "member", "--name", "tnm1", "--data-dir", dir, "--nodes", "1", "--secure-port", strconv.Itoa(ports[0]))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	testenv.Eventually(t, 3*time.Minute, "member tnm1 ready", func() error {
		_, err := os.Stat(kubeconfig)
		return err
	})
	memberConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	member := kubernetes.NewForConfigOrDie(memberConfig)
	memberProxy, err := tunnel.MemberProxy(memberConfig)
	if err != nil {
		t.Fatal(err)
	}
	_, cred1 := join(t, env, "tnm1", "id-tnm1")
	join(t, env, "tnm2", "id-tnm2")
	waitForProxyAPI(t)

	runAgent := func() context.CancelFunc {
		agentCtx, stop := context.WithCancel(ctx)
		go (&tunnel.Agent{Cluster: "tnm1", HubConfig: cred1.RESTConfig, Member: memberProxy}).Run(agentCtx)
		return stop
	}
	stopAgent := runAgent()
	t.Cleanup(func() { stopAgent() })
	waitTunnelCondition(t, "tnm1", metav1.ConditionTrue)

	dev := hubCaller(t, "tunnel-dev")
	grantProxy(t, "tunnel-tnm1", []string{"tnm1"}, "tunnel-dev")
	if _, err := member.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tunnel-dev"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccount:default:tunnel-dev"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("get, server-side apply, watch and delete in a pull member through the tunnel", func(t *testing.T) {
		c, _ := proxyThrough(t, "tnm1", dev)
		want, err := member.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err != nil || got.UID != want.UID {
			t.Fatalf("kube-system through the tunnel: %v (uid %v, want %v)", err, got, want.UID)
		}
		w, err := c.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=tunneled"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := c.CoreV1().ConfigMaps("default").Apply(ctx, corev1ac.ConfigMap("tunneled", "default").WithData(map[string]string{"k": "v"}),
			metav1.ApplyOptions{FieldManager: "tunnel-test"}); err != nil {
			t.Fatal(err)
		}
		stored, err := member.CoreV1().ConfigMaps("default").Get(ctx, "tunneled", metav1.GetOptions{})
		if err != nil || stored.Data["k"] != "v" {
			t.Fatalf("the applied ConfigMap on the member: %v, %v", stored, err)
		}
		// The member saw the hub's caller, by the impersonation the hub set and the agent kept.
		if m := stored.ManagedFields; len(m) == 0 || m[0].Manager != "tunnel-test" {
			t.Fatalf("managed fields %v", m)
		}
		if err := c.CoreV1().ConfigMaps("default").Delete(ctx, "tunneled", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		expectEvents(t, w, watch.Added, watch.Deleted)
	})

	t.Run("the member sees the hub's caller", func(t *testing.T) {
		c, _ := proxyThrough(t, "tnm1", dev)
		_, err := c.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		outsider := hubCaller(t, "tunnel-guest")
		grantProxy(t, "tunnel-guest", []string{"tnm1"}, "tunnel-guest")
		g, _ := proxyThrough(t, "tnm1", outsider)
		_, err = g.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:serviceaccount:default:tunnel-guest"`) {
			t.Fatalf("want the member's 403 for tunnel-guest (not the agent's rights), got %v", err)
		}
	})

	t.Run("a fleet list reads a pull member through its tunnel, as the caller", func(t *testing.T) {
		want, err := member.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet-list-tunnel-dev"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: proxy.FleetListRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "tunnel-dev"}}})
		cfg := rest.AnonymousClientConfig(env.Config)
		cfg.BearerToken = dev
		var list *proxyv1alpha1.FleetList
		testenv.Eventually(t, 30*time.Second, "tunnel-dev's fleet list role in effect", func() error {
			list, err = fleetList(ctx, cfg, "/api/v1/namespaces", map[string]string{"clusters": "tnm1", "fieldSelector": "metadata.name=kube-system"})
			return err
		})
		if got := fleetItems(list); len(got) != 1 || got[0] != "tnm1/kube-system" || list.Items[0]["metadata"].(map[string]any)["uid"] != string(want.UID) {
			t.Fatalf("the fleet list over tnm1: %v, %v (want the member's kube-system, uid %s)", got, list.Clusters, want.UID)
		}
	})

	t.Run("an agent cannot open another cluster's tunnel", func(t *testing.T) {
		_, err := (&tunnel.Agent{Cluster: "tnm2", HubConfig: cred1.RESTConfig, Member: memberProxy}).Dial(ctx)
		if err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("the agent of tnm1 opened tnm2's tunnel: %v", err)
		}
		if cond := tunnelCondition(t, "tnm2"); cond == nil || cond.Status != metav1.ConditionFalse {
			t.Fatalf("tnm2's TunnelConnected: %v", cond)
		}
	})

	t.Run("an agent cannot use the proxy", func(t *testing.T) {
		cfg, err := cred1.RESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		for _, cluster := range []string{"tnm2", "tnm1"} {
			cfg.Host = proxyURL(cluster)
			_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "clusters/proxy") {
				t.Fatalf("the agent of tnm1 used the proxy to %s: %v", cluster, err)
			}
		}
		// Nor a fleet list: agents are in none of the fleet's user groups.
		agent, err := cred1.RESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		if list, err := fleetList(ctx, agent, "/api/v1/namespaces", map[string]string{"clusters": "tnm1,tnm2"}); !apierrors.IsForbidden(err) {
			t.Fatalf("the agent of tnm1 asked for a fleet list: %v, %v", list, err)
		}
	})

	t.Run("the tunnel follows an agent restart", func(t *testing.T) {
		stopAgent()
		waitTunnelCondition(t, "tnm1", metav1.ConditionFalse)
		c, _ := proxyThrough(t, "tnm1", dev)
		if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("with the agent stopped: %v, want 503", err)
		}
		stopAgent = runAgent()
		waitTunnelCondition(t, "tnm1", metav1.ConditionTrue)
		testenv.Eventually(t, 10*time.Second, "the proxy through the new tunnel", func() error {
			_, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			return err
		})
	})
}

func tunnelCondition(t *testing.T, cluster string) *metav1.Condition {
	t.Helper()
	c := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: cluster}, c); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionTunnelConnected)
}

func waitTunnelCondition(t *testing.T, cluster string, status metav1.ConditionStatus) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%s TunnelConnected=%s", cluster, status), func() error {
		if cond := tunnelCondition(t, cluster); cond == nil || cond.Status != status {
			return fmt.Errorf("TunnelConnected: %v", cond)
		}
		return nil
	})
}

// expectEvents waits until w has delivered events of every type in types.
func expectEvents(t *testing.T, w watch.Interface, types ...watch.EventType) {
	t.Helper()
	seen := map[watch.EventType]bool{}
	timeout := time.After(20 * time.Second)
	for {
		missing := false
		for _, ty := range types {
			missing = missing || !seen[ty]
		}
		if !missing {
			return
		}
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended; seen %v", seen)
			}
			seen[e.Type] = true
		case <-timeout:
			t.Fatalf("the watch saw only %v", seen)
		}
	}
}
