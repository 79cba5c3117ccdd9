package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// flotilla runs a short flotilla command to its end and returns its output and exit error.
func flotilla(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	p := testenv.StartProcess(t, name, args...)
	err := p.Wait(2 * time.Minute)
	return p.Output(), err
}

// TestHubSnapshotSaveRestore backs a running hub up with `flotilla hub snapshot save`, stops it, wipes its etcd
// data and restores the snapshot with `flotilla hub snapshot restore`: the restarted hub serves the objects of
// the snapshot, a Secret included (read back through the encryption key in DATA_DIR/pki), and not the object
// created after it. A restore while the hub runs, or over etcd data without --force, is refused. The hub runs
// with --log-format json, and its log file holds JSON lines.
func TestHubSnapshotSaveRestore(t *testing.T) {
	ctx := context.Background()
	dir, port := filepath.Join(t.TempDir(), "hub"), freePort(t)
	first, h := startHub(t, "hub-backed-up", dir, port, "--log-format", "json")
	if err := h.Client.Create(ctx, samplePolicy("kept")); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password", Namespace: "default"}, Data: map[string][]byte{"password": []byte("s3cret")}}
	if _, err := h.Kube.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(t.TempDir(), "hub.db")
	if out, err := flotilla(t, "snapshot-save", "hub", "snapshot", "save", file, "--data-dir", dir); err != nil || !strings.Contains(out, "snapshot saved to "+file) {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	if err := h.Client.Create(ctx, samplePolicy("after-snapshot")); err != nil {
		t.Fatal(err)
	}
	if out, err := flotilla(t, "restore-while-running", "hub", "snapshot", "restore", file, "--data-dir", dir, "--force"); err == nil || !strings.Contains(out, "is used by another process") {
		t.Fatalf("a restore into the directory of a running hub: %v\n%s", err, out)
	}
	assertJSONLog(t, filepath.Join(dir, "hub.log"))

	if err := first.Stop(time.Minute); err != nil {
		t.Fatalf("hub did not stop: %v", err)
	}
	if out, err := flotilla(t, "restore-over-data", "hub", "snapshot", "restore", file, "--data-dir", dir); err == nil || !strings.Contains(out, "already holds etcd data") {
		t.Fatalf("a restore over etcd data without --force: %v\n%s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if out, err := flotilla(t, "snapshot-restore", "hub", "snapshot", "restore", file, "--data-dir", dir); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}

	_, h = startHub(t, "hub-restored", dir, port)
	if err := h.Client.Get(ctx, client.ObjectKey{Name: "kept"}, &policyv1alpha1.ClusterPropagationPolicy{}); err != nil {
		t.Fatalf("policy of the snapshot: %v", err)
	}
	got, err := h.Kube.CoreV1().Secrets("default").Get(ctx, "db-password", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret of the snapshot: %v", err)
	}
	if string(got.Data["password"]) != "s3cret" {
		t.Fatalf("Secret restored as %q", got.Data["password"])
	}
	err = h.Client.Get(ctx, client.ObjectKey{Name: "after-snapshot"}, &policyv1alpha1.ClusterPropagationPolicy{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("policy created after the snapshot: %v, want not found", err)
	}
}

// assertJSONLog checks that the log file has lines, each a JSON object with a message.
func assertJSONLog(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for ; s.Scan(); lines++ {
		var line struct {
			Msg string `json:"msg"`
		}
		if err := json.Unmarshal(s.Bytes(), &line); err != nil || line.Msg == "" {
			t.Fatalf("%s line %d is not a JSON log line (%v):\n%s", path, lines+1, err, s.Text())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if lines == 0 {
		t.Fatalf("%s is empty", path)
	}
}
