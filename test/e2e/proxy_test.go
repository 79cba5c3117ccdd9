package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestProxyToPushMember: with the kubeconfig `flotilla kubeconfig m3` writes, an ordinary client reads,
// applies (server side), watches and deletes in the push member m3 through the hub, as the hub's user.
// The simulated nodes serve no kubelet API, so logs, exec and port-forward have nothing to reach; the
// streaming path is tested with a watch.
func TestProxyToPushMember(t *testing.T) {
	f := useFleet(t)
	ctx := context.Background()
	f.memberNamespace(t, f.m3)
	path := filepath.Join(t.TempDir(), "m3.kubeconfig")
	f.hub.Flotilla("kubeconfig", "m3", "--out", path)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	m3 := kubernetes.NewForConfigOrDie(cfg)

	review, err := m3.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hubUser, err := f.hub.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status.UserInfo.Username != hubUser.Status.UserInfo.Username {
		t.Fatalf("through the hub m3 saw %q, the hub's user is %q", review.Status.UserInfo.Username, hubUser.Status.UserInfo.Username)
	}

	w, err := m3.CoreV1().ConfigMaps(f.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=through-hub"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := m3.CoreV1().ConfigMaps(f.ns).Apply(ctx, corev1ac.ConfigMap("through-hub", f.ns).WithData(map[string]string{"k": "v"}),
		metav1.ApplyOptions{FieldManager: "e2e"}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.m3.Kube.CoreV1().ConfigMaps(f.ns).Get(ctx, "through-hub", metav1.GetOptions{}); err != nil || got.Data["k"] != "v" {
		t.Fatalf("the ConfigMap applied through the hub, read from m3: %v %v", got, err)
	}
	if err := m3.CoreV1().ConfigMaps(f.ns).Delete(ctx, "through-hub", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := map[watch.EventType]bool{}
	timeout := time.After(15 * time.Second)
	for !seen[watch.Added] || !seen[watch.Deleted] {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch through the hub ended; seen %v", seen)
			}
			seen[e.Type] = true
		case <-timeout:
			t.Fatalf("the watch through the hub saw only %v", seen)
		}
	}

	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Log("kubectl is not on PATH: flotilla kubectl not tried")
		return
	}
	// The hub's kubeconfig goes before "--": what follows is kubectl's.
	p := testenv.StartBinary(t, framework.Binary(t), "flotilla-kubectl", "kubectl", "m3", "--kubeconfig", f.hub.Kubeconfig, "--", "get", "namespace", f.ns, "-o", "name")
	if err := p.Wait(time.Minute); err != nil || !strings.Contains(p.Output(), "namespace/"+f.ns) {
		t.Fatalf("flotilla kubectl m3 -- get namespace: %v\n%s", err, p.Output())
	}
}
