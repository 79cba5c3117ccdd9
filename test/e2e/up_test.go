package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// applyFile creates every object of a multi-document YAML file, as kubectl apply -f would for new objects.
func applyFile(t *testing.T, env *testenv.Env, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("%s: creating %s %s: %v", path, obj.GetKind(), obj.GetName(), err)
		}
	}
}

// TestUpRunsTheExamples follows the README: flotilla up, then the examples, then Ctrl-C.
func TestUpRunsTheExamples(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	up := testenv.StartBinary(t, framework.Binary(t), "up", "up", "--data-dir", dir, "--hub-port", strconv.Itoa(ports[0]))
	testenv.Eventually(t, 3*time.Minute, "flotilla up is ready", func() error {
		if up.Exited() {
			t.Fatalf("flotilla up exited:\n%s", up.Output())
		}
		if !strings.Contains(up.Output(), "Ctrl-C stops the fleet") {
			return errors.New("not ready yet")
		}
		return nil
	})
	hub := testenv.Connect(t, filepath.Join(dir, "hub.kubeconfig"))
	member := func(name string) *framework.Cluster {
		return &framework.Cluster{Name: name, Env: testenv.Connect(t, filepath.Join(dir, "members", name+".kubeconfig"))}
	}
	m1, m2, m3 := member("member1"), member("member2"), member("member3")

	applyFile(t, hub, "../../examples/guestbook.yaml")
	applyFile(t, hub, "../../examples/karmada-nginx.yaml")
	applyFile(t, hub, "../../examples/rollout.yaml")
	testenv.Eventually(t, 2*time.Minute, "the guestbook runs 2+1 and the hub shows 3 ready", func() error {
		d, err := hub.Kube.AppsV1().Deployments("guestbook").Get(ctx, "guestbook", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ReadyReplicas != 3 {
			return fmt.Errorf("hub shows %d ready", d.Status.ReadyReplicas)
		}
		for c, want := range map[*framework.Cluster]int32{m1: 2, m2: 1} {
			md, err := c.Kube.AppsV1().Deployments("guestbook").Get(ctx, "guestbook", metav1.GetOptions{})
			if err != nil || md.Status.AvailableReplicas != want {
				return fmt.Errorf("%s: %v", c.Name, err)
			}
			if _, err := c.Kube.CoreV1().ConfigMaps("guestbook").Get(ctx, "guestbook-config", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s has no ConfigMap: %v", c.Name, err)
			}
		}
		if _, err := m3.Kube.CoreV1().Namespaces().Get(ctx, "guestbook", metav1.GetOptions{}); err == nil {
			return errors.New("member3 got the guestbook namespace though nothing of it goes there")
		}
		return nil
	})
	waitPlaced(t, metav1.NamespaceDefault, "nginx", map[*framework.Cluster]int32{m1: 1, m2: 1, m3: -1})
	waitPlaced(t, "rollout-demo", "web", map[*framework.Cluster]int32{m1: 2, m2: 2, m3: 2})
	waitRollout(t, hub.Client, "rollout-demo", "web", workv1alpha1.ConditionRolloutComplete, time.Minute)

	if err := up.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(time.Minute); err != nil {
		t.Fatalf("flotilla up did not stop cleanly: %v\n%s", err, up.Output())
	}
	if out, _ := exec.Command("pgrep", "-f", dir).Output(); len(out) > 0 {
		t.Fatalf("processes of the fleet outlived flotilla up: %s", out)
	}
}
