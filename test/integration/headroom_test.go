package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/headroom"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// slowWebhook admits every request after delay: it makes a user's writes slow, as a busy hub does.
func slowWebhook(t *testing.T, delay time.Duration) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		time.Sleep(delay)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// controllersWriteLimit reads flotilla_controllers_write_limit from the hub's metrics.
func controllersWriteLimit(t *testing.T) float64 {
	t.Helper()
	limit, found := sample(scrape(t), "flotilla_controllers_write_limit", nil)
	if !found {
		t.Fatal("no flotilla_controllers_write_limit in the hub's metrics")
	}
	return limit
}

// TestControllersMakeRoomForSlowUserWrites: while a user's writes to the hub are slow (here an admission
// webhook holds each for 300 ms, as a busy hub's CPU would), the controllers may have at most two writes in
// flight; they still place a burst of templates under that bound, and the bound grows again as their
// held-back writes are answered.
func TestControllersMakeRoomForSlowUserWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	slowNS, burstNS := "headroom-slow", "headroom-burst"
	createNamespace(t, slowNS)
	createNamespace(t, burstNS)

	srv := slowWebhook(t, 300*time.Millisecond)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "headroom-slow"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "slow.headroom.example.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: slowNS}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
	create(t, webhook)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), webhook) })

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "headroom-user", Groups: []string{"system:masters"}}
	user, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if limit := controllersWriteLimit(t); limit < headroom.MinLimit || limit > headroom.MaxLimit {
		t.Fatalf("flotilla_controllers_write_limit %v, want within [%d, %d]", limit, headroom.MinLimit, headroom.MaxLimit)
	}
	i := 0
	testenv.Eventually(t, hangGuard, "the controllers' write limit at its minimum while the user's writes are slow", func() error {
		i++
		if _, err := user.CoreV1().ConfigMaps(slowNS).Create(ctx, configMap(slowNS, fmt.Sprintf("slow-%d", i), nil), metav1.CreateOptions{}); err != nil {
			return err
		}
		if limit := controllersWriteLimit(t); limit != headroom.MinLimit {
			return fmt.Errorf("limit %v", limit)
		}
		return nil
	})

	// A burst of the controllers' own, set off by one write: a policy that places twenty templates, each on
	// two clusters.
	placeableCluster(t, "headroom-a", nil)
	placeableCluster(t, "headroom-b", nil)
	const templates = 20
	for i := range templates {
		create(t, configMap(burstNS, fmt.Sprintf("cm-%d", i), nil))
	}
	policy := tolerantPolicy(burstNS, "all", []string{"headroom-a", "headroom-b"})
	policy.Spec.ResourceSelectors[0].Name = ""
	create(t, policy)
	for i := range templates {
		waitPlaced(t, burstNS, fmt.Sprintf("cm-%d", i), "headroom-a", "headroom-b")
	}
	testenv.Eventually(t, hangGuard, "the controllers' write limit grown again", func() error {
		if limit := controllersWriteLimit(t); limit <= headroom.MinLimit {
			return fmt.Errorf("limit %v", limit)
		}
		return nil
	})
	// The clusters leave before the next test counts the hub's clusters.
	for _, name := range []string{"headroom-a", "headroom-b"} {
		cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Client.Delete(ctx, cluster); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyGone(t, env.Client, cluster, hangGuard)
	}
}
