package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// controllersConfig reaches the hub with the client certificate the hub issued its controllers.
func controllersConfig(t *testing.T) *rest.Config {
	t.Helper()
	pki := controlplane.PKI{Dir: env.DataDir + "/pki"}
	return &rest.Config{Host: env.Config.Host, TLSClientConfig: rest.TLSClientConfig{
		CAFile: pki.CACert(), CertFile: pki.ClientCert(hub.ControllersUser), KeyFile: pki.ClientKey(hub.ControllersUser)}}
}

// dispatched reads, from the hub's metrics, how many requests API Priority and Fairness dispatched through
// flowSchema into priorityLevel.
func dispatched(ctx context.Context, t *testing.T, flowSchema, priorityLevel string) float64 {
	t.Helper()
	raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, m := range families["apiserver_flowcontrol_dispatched_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["flow_schema"] == flowSchema && labels["priority_level"] == priorityLevel {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// TestControllersRunUnderTheirOwnPriority: the hub's controllers reach its API server as a user of their own,
// not in system:masters, and their requests go through a FlowSchema and priority level of their own, with
// fewer shares than the level users fall in and no borrowing; their leader Lease goes through the
// leader-election level. (As the admin, they were exempt from API Priority and Fairness, and a burst of their
// writes slowed users' requests several times over.)
func TestControllersRunUnderTheirOwnPriority(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The running controllers' requests are dispatched at their own level, their Lease renewals at
	// leader-election. Read before this test makes requests as their user itself.
	testenv.Eventually(t, time.Minute, "the controllers' requests dispatched at their priority level", func() error {
		if n := dispatched(ctx, t, hub.ControllersPriorityLevel, hub.ControllersPriorityLevel); n == 0 {
			return fmt.Errorf("no request through FlowSchema %s", hub.ControllersPriorityLevel)
		}
		if n := dispatched(ctx, t, hub.ControllersLeaderElection, "leader-election"); n == 0 {
			return fmt.Errorf("no request through FlowSchema %s", hub.ControllersLeaderElection)
		}
		return nil
	})

	cfg := controllersConfig(t)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if user := review.Status.UserInfo; user.Username != hub.ControllersUser || slices.Contains(user.Groups, "system:masters") {
		t.Fatalf("controllers authenticate as %s in %v, want %s outside system:masters", user.Username, user.Groups, hub.ControllersUser)
	}

	flowSchemas := env.Kube.FlowcontrolV1().FlowSchemas()
	levels := env.Kube.FlowcontrolV1().PriorityLevelConfigurations()
	own, err := levels.Get(ctx, hub.ControllersPriorityLevel, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	users, err := levels.Get(ctx, "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if own.Spec.Limited == nil || users.Spec.Limited == nil ||
		ptr.Deref(own.Spec.Limited.NominalConcurrencyShares, 30) >= ptr.Deref(users.Spec.Limited.NominalConcurrencyShares, 30) ||
		ptr.Deref(own.Spec.Limited.BorrowingLimitPercent, 100) != 0 {
		t.Fatalf("controllers' level %+v is not below global-default %+v without borrowing", own.Spec.Limited, users.Spec.Limited)
	}

	// Every request of the controllers' user names their FlowSchema and level in its response headers; the
	// exempt level of system:masters would answer with the exempt ones.
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for path, schema := range map[string]string{
		"/api/v1/namespaces": hub.ControllersPriorityLevel,
		"/apis/coordination.k8s.io/v1/namespaces/" + clusterv1alpha1.SystemNamespace + "/leases/" + hub.LeaderLease: hub.ControllersLeaderElection,
	} {
		fs, err := flowSchemas.Get(ctx, schema, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		level, err := levels.Get(ctx, fs.Spec.PriorityLevelConfiguration.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s as the controllers: %s", path, resp.Status)
		}
		gotSchema := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
		gotLevel := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
		if gotSchema != string(fs.UID) || gotLevel != string(level.UID) {
			t.Errorf("GET %s as the controllers went through FlowSchema %s, level %s; want %s (%s), %s (%s)",
				path, gotSchema, gotLevel, fs.UID, fs.Name, level.UID, level.Name)
		}
	}
}
