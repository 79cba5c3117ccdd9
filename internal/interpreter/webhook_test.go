package interpreter

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// answering is a webhook server answering each request with answer's response, after checking the request
// is a ResourceInterpreterContext of Karmada's version; the uid is copied back unless answer set one.
func answering(t *testing.T, answer func(req *configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := &configv1alpha1.ResourceInterpreterContext{}
		if err := json.NewDecoder(r.Body).Decode(in); err != nil || in.Request == nil || in.Request.UID == "" ||
			in.APIVersion != "config.karmada.io/v1alpha1" || in.Kind != "ResourceInterpreterContext" {
			http.Error(w, "not a ResourceInterpreterContext request", http.StatusBadRequest)
			return
		}
		resp := answer(in.Request)
		if resp == nil {
			return
		}
		if resp.UID == "" {
			resp.UID = in.Request.UID
		}
		in.Request, in.Response = nil, resp
		_ = json.NewEncoder(w).Encode(in)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hookConfig is a configuration with one webhook at srv (trusting its certificate) for kinds of group and
// the operations.
func hookConfig(srv *httptest.Server, name, group string, policy configv1alpha1.FailurePolicy, ops ...configv1alpha1.InterpreterOperation) *configv1alpha1.InterpreterWebhookConfiguration {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &configv1alpha1.InterpreterWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Webhooks: []configv1alpha1.InterpreterWebhook{{
			Name:                       name + ".example.io",
			ClientConfig:               admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/interpret"), CABundle: ca},
			Rules:                      []configv1alpha1.RuleWithOperations{{Operations: ops, APIGroups: []string{group}, APIVersions: []string{"*"}, Kinds: []string{"*"}}},
			TimeoutSeconds:             ptr.To[int32](1),
			InterpreterContextVersions: []string{"v1alpha1"},
			FailurePolicy:              &policy,
		}},
	}
}

func interpreterWith(t *testing.T, objs ...runtime.Object) *Interpreter {
	t.Helper()
	s := runtime.NewScheme()
	if err := configv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return New(fake.NewClientBuilder().WithScheme(s).WithRuntimeObjects(objs...).Build())
}

func workload(status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.io/v1", "kind": "Workload",
		"metadata": map[string]any{"name": "w", "namespace": "apps"}, "spec": map[string]any{"size": int64(6)}}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// TestWebhookAnswersEveryOperation: each operation sends the object and what the operation adds, and reads
// the webhook's answer as Karmada's protocol defines it.
func TestWebhookAnswersEveryOperation(t *testing.T) {
	patch := configv1alpha1.PatchTypeJSONPatch
	srv := answering(t, func(req *configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(req.Object.Raw); err != nil || req.Name != "w" || req.Namespace != "apps" || req.Kind.Kind != "Workload" {
			return &configv1alpha1.ResourceInterpreterResponse{Successful: false, Status: &configv1alpha1.RequestStatus{Message: "bad object", Code: 400}}
		}
		resp := &configv1alpha1.ResourceInterpreterResponse{Successful: true}
		switch req.Operation {
		case configv1alpha1.InterpreterOperationInterpretReplica:
			size, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size")
			resp.Replicas = ptr.To(int32(size))
			resp.ReplicaRequirements = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}
		case configv1alpha1.InterpreterOperationReviseReplica:
			resp.Patch, resp.PatchType = []byte(`[{"op":"replace","path":"/spec/size","value":`+jsonOf(*req.DesiredReplicas)+`}]`), &patch
		case configv1alpha1.InterpreterOperationInterpretStatus:
			ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "ready")
			resp.RawStatus = &runtime.RawExtension{Raw: []byte(`{"ready":` + jsonOf(ready) + `}`)}
		case configv1alpha1.InterpreterOperationInterpretHealth:
			ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "ready")
			resp.Healthy = ptr.To(ready >= 6)
		case configv1alpha1.InterpreterOperationAggregateStatus:
			var sum int64
			for _, item := range req.AggregatedStatus {
				var s struct{ Ready int64 }
				_ = json.Unmarshal(item.Status.Raw, &s)
				sum += s.Ready
			}
			resp.Patch, resp.PatchType = []byte(`[{"op":"add","path":"/status","value":{"ready":`+jsonOf(sum)+`,"clusters":`+jsonOf(len(req.AggregatedStatus))+`}}]`), &patch
		case configv1alpha1.InterpreterOperationInterpretDependency:
			resp.Dependencies = []configv1alpha1.DependentObjectReference{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "settings"}}
		}
		return resp
	})
	i := interpreterWith(t, hookConfig(srv, "workloads", "example.io", configv1alpha1.FailurePolicyFail, "*"))
	ctx := context.Background()

	n, req, ok, err := i.Requirements(ctx, workload(nil))
	if err != nil || !ok || n != 6 || req == nil || !req.ResourceRequest.Cpu().Equal(resource.MustParse("250m")) {
		t.Errorf("Requirements = %d, %+v, %v, %v; want 6 replicas of 250m cpu", n, req, ok, err)
	}
	revised := workload(nil)
	if err := i.ReviseReplicas(ctx, revised, 2); err != nil || revised.Object["spec"].(map[string]any)["size"] != int64(2) {
		t.Errorf("ReviseReplicas: %v, %v; want spec.size 2", revised.Object["spec"], err)
	}
	status, health, customized, err := i.Observe(ctx, workload(map[string]any{"ready": int64(4), "internal": "x"}))
	if err != nil || !customized || health != workv1alpha1.ResourceUnhealthy || len(status) != 1 || status["ready"] != int64(4) {
		t.Errorf("Observe = %v, %s, %v, %v; want status {ready: 4}, unhealthy", status, health, customized, err)
	}
	if _, health, _, err := i.Observe(ctx, workload(map[string]any{"ready": int64(6)})); err != nil || health != workv1alpha1.ResourceHealthy {
		t.Errorf("Observe of a ready workload = %s, %v; want healthy", health, err)
	}
	sum, err := i.AggregateStatus(ctx, workload(nil), Fleet{Members: []Member{
		{"m1", map[string]any{"ready": int64(2)}}, {"m2", map[string]any{"ready": int64(3)}}, {"m3", nil}}})
	if err != nil || sum["ready"] != int64(5) || sum["clusters"] != int64(2) {
		t.Errorf("AggregateStatus = %v, %v; want ready 5 from the 2 clusters that reported", sum, err)
	}
	deps, err := i.Dependencies(ctx, workload(nil))
	if err != nil || len(deps) != 1 || deps[0] != (Dependency{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}) {
		t.Errorf("Dependencies = %v, %v", deps, err)
	}
	if interprets, err := i.Interprets(ctx, workload(nil).GroupVersionKind()); err != nil || !interprets {
		t.Errorf("Interprets = %v, %v; want true", interprets, err)
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestWebhookPrecedence follows Karmada's order: a user's customization before a webhook, a webhook before
// a shipped customization (Argo Rollouts' Rollout ships one), the built-in rules last.
func TestWebhookPrecedence(t *testing.T) {
	srv := answering(t, func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
		return &configv1alpha1.ResourceInterpreterResponse{Successful: true, Replicas: ptr.To[int32](9)}
	})
	rollout := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "r"}, "spec": map[string]any{"replicas": int64(6)}}}
	hooks := hookConfig(srv, "rollouts", "argoproj.io", configv1alpha1.FailurePolicyFail, configv1alpha1.InterpreterOperationInterpretReplica)
	user := &configv1alpha1.InterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "my-rollouts", UID: "u1"},
		Spec: configv1alpha1.InterpreterCustomizationSpec{
			Target:         configv1alpha1.CustomizationTarget{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"},
			Customizations: configv1alpha1.CustomizationRules{ReplicaResource: &configv1alpha1.Expression{CEL: `{"replicas": 42}`}},
		},
	}
	for _, tc := range []struct {
		name string
		objs []runtime.Object
		want int32
	}{
		{"shipped customization", nil, 6},
		{"webhook before the shipped customization", []runtime.Object{hooks}, 9},
		{"user's customization before the webhook", []runtime.Object{hooks, user}, 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _, ok, err := interpreterWith(t, tc.objs...).Replicas(context.Background(), rollout)
			if err != nil || !ok || n != tc.want {
				t.Errorf("Replicas = %d, %v, %v; want %d", n, ok, err, tc.want)
			}
		})
	}
}

// TestWebhookFailures: a webhook that cannot answer fails the operation with an error naming it
// (failurePolicy Fail), or lets the built-in rule answer (Ignore); an answer that lacks what the operation
// needs fails whatever the policy.
func TestWebhookFailures(t *testing.T) {
	deployment := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "apps"}, "spec": map[string]any{"replicas": int64(3)}}}
	ok := func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
		return &configv1alpha1.ResourceInterpreterResponse{Successful: true, Replicas: ptr.To[int32](7)}
	}
	for _, tc := range []struct {
		name    string
		answer  func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse
		handler http.HandlerFunc // instead of answer
		trust   bool             // the configuration's caBundle holds the server's certificate
		want    string           // the Fail error; "" when the call succeeds
		ignored bool             // Ignore falls back to the built-in rule
	}{
		{name: "answers", answer: ok, trust: true},
		{name: "sleeps past its timeout", trust: true, want: "no answer within timeoutSeconds (1s)", ignored: true,
			handler: func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(3 * time.Second):
				}
			}},
		{name: "not successful", trust: true, want: "not successful (code 503): busy", ignored: true,
			answer: func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
				return &configv1alpha1.ResourceInterpreterResponse{Status: &configv1alpha1.RequestStatus{Message: "busy", Code: 503}}
			}},
		{name: "answers another request", trust: true, want: `the answer is to request "other"`, ignored: true,
			answer: func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
				return &configv1alpha1.ResourceInterpreterResponse{UID: "other", Successful: true, Replicas: ptr.To[int32](7)}
			}},
		{name: "HTTP error", trust: true, want: "HTTP 500", ignored: true,
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }},
		{name: "answer too large", trust: true, want: "larger than", ignored: true,
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(strings.Repeat(" ", maxWebhookResponse+10)))
			}},
		{name: "certificate not trusted", answer: ok, want: "certificate", ignored: true},
		{name: "answer without replicas", trust: true, want: "the answer has no replicas",
			answer: func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
				return &configv1alpha1.ResourceInterpreterResponse{Successful: true}
			}},
	} {
		for _, policy := range []configv1alpha1.FailurePolicy{configv1alpha1.FailurePolicyFail, configv1alpha1.FailurePolicyIgnore} {
			t.Run(tc.name+"/"+string(policy), func(t *testing.T) {
				var srv *httptest.Server
				if tc.handler != nil {
					srv = httptest.NewTLSServer(tc.handler)
					t.Cleanup(srv.Close)
				} else {
					srv = answering(t, tc.answer)
				}
				cfg := hookConfig(srv, "deployments", "apps", policy, configv1alpha1.InterpreterOperationInterpretReplica)
				if !tc.trust {
					cfg.Webhooks[0].ClientConfig.CABundle = nil
				}
				n, _, _, err := interpreterWith(t, cfg).Replicas(context.Background(), deployment)
				var failed *Error
				switch {
				case tc.want == "":
					if err != nil || n != 7 {
						t.Errorf("Replicas = %d, %v; want the webhook's 7", n, err)
					}
				case policy == configv1alpha1.FailurePolicyIgnore && tc.ignored:
					if err != nil || n != 3 {
						t.Errorf("Replicas = %d, %v; want the built-in rule's 3", n, err)
					}
				case !errors.As(err, &failed) || failed.Webhook == "" || !strings.Contains(err.Error(), tc.want) ||
					!strings.Contains(err.Error(), "InterpreterWebhookConfiguration deployments (webhook deployments.example.io): InterpretReplica"):
					t.Errorf("Replicas = %d, %v; want an *Error naming the webhook and saying %q", n, err, tc.want)
				}
			})
		}
	}
}

// TestWebhookURL: a Service is called at its cluster DNS name; a URL must be https.
func TestWebhookURL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config admissionregistrationv1.WebhookClientConfig
		want   string // or the error
	}{
		{"service", admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "tools", Name: "interp", Path: ptr.To("interpret")}},
			"https://interp.tools.svc:443/interpret"},
		{"service before url", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://a.example.io"), Service: &admissionregistrationv1.ServiceReference{Namespace: "tools", Name: "interp", Port: ptr.To[int32](8443)}},
			"https://interp.tools.svc:8443"},
		{"https url", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://a.example.io:8443/x")}, "https://a.example.io:8443/x"},
		{"http url", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("http://a.example.io/x")}, "is not https"},
		{"url with a query", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://a.example.io/x?y=1")}, "may not hold"},
		{"neither", admissionregistrationv1.WebhookClientConfig{}, "neither a url nor a service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WebhookURL(&configv1alpha1.InterpreterWebhook{ClientConfig: tc.config})
			if got != tc.want && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("WebhookURL = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestWebhookIgnoreKeepsTheUsersChoice: a webhook with failurePolicy Ignore that fails falls back past the
// shipped customization when the user customized the kind (for other operations): the user's customization
// replaces the shipped one, webhook or not.
func TestWebhookIgnoreKeepsTheUsersChoice(t *testing.T) {
	srv := answering(t, func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
		return &configv1alpha1.ResourceInterpreterResponse{Status: &configv1alpha1.RequestStatus{Message: "down", Code: 503}}
	})
	rollout := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "r"}, "spec": map[string]any{"replicas": int64(6)}}}
	hooks := hookConfig(srv, "rollouts", "argoproj.io", configv1alpha1.FailurePolicyIgnore, configv1alpha1.InterpreterOperationInterpretReplica)
	if n, _, ok, err := interpreterWith(t, hooks).Replicas(context.Background(), rollout); err != nil || !ok || n != 6 {
		t.Errorf("without a user customization: Replicas = %d, %v, %v; want the shipped customization's 6", n, ok, err)
	}
	user := &configv1alpha1.InterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "my-rollouts", UID: "u1"},
		Spec: configv1alpha1.InterpreterCustomizationSpec{
			Target:         configv1alpha1.CustomizationTarget{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"},
			Customizations: configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.Expression{CEL: `true`}},
		},
	}
	if _, _, ok, err := interpreterWith(t, hooks, user).Replicas(context.Background(), rollout); err != nil || ok {
		t.Errorf("with a user customization: Replicas ok = %v, %v; want the built-in rule (no replicas for a Rollout)", ok, err)
	}
}
