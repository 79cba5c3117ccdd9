package interpreter

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

// webhookOps are the Karmada operations that ask what each of Flotilla's operations asks.
var webhookOps = map[Operation]configv1alpha1.InterpreterOperation{
	OpReplicaResource:          configv1alpha1.InterpreterOperationInterpretReplica,
	OpReplicaRevision:          configv1alpha1.InterpreterOperationReviseReplica,
	OpRetention:                configv1alpha1.InterpreterOperationRetain,
	OpStatusReflection:         configv1alpha1.InterpreterOperationInterpretStatus,
	OpStatusAggregation:        configv1alpha1.InterpreterOperationAggregateStatus,
	OpHealthInterpretation:     configv1alpha1.InterpreterOperationInterpretHealth,
	OpDependencyInterpretation: configv1alpha1.InterpreterOperationInterpretDependency,
}

// WebhookOperations are the operations a webhook may answer, as its rules name them.
func WebhookOperations() []configv1alpha1.InterpreterOperation {
	out := make([]configv1alpha1.InterpreterOperation, 0, len(webhookOps))
	for _, op := range webhookOps {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

// maxWebhookResponse bounds a webhook's answer: an object's status or a patch of it, well within the API
// server's 3 MiB object limit. A larger answer fails the call rather than the hub's memory.
const maxWebhookResponse = 3 << 20

// defaultWebhookTimeout is a webhook's timeout when its configuration sets none (Karmada's default).
const defaultWebhookTimeout = 10 * time.Second

// Webhook is one webhook of an InterpreterWebhookConfiguration, ready to call.
type Webhook struct {
	// Config and Name are the configuration's name and the webhook's.
	Config, Name string
	// Ignore says a failed call lets the next interpreter answer (failurePolicy Ignore).
	Ignore  bool
	url     string
	timeout time.Duration
	client  *http.Client
	// broken says why the webhook cannot be called (a configuration written before admission checked it).
	broken error
}

// newWebhook prepares hook of the configuration named config: its URL (a Service's cluster DNS name when it
// names one) and an HTTPS client that trusts its CA bundle (the system roots without one).
func newWebhook(config string, hook *configv1alpha1.InterpreterWebhook) (*Webhook, error) {
	w := &Webhook{Config: config, Name: hook.Name, timeout: defaultWebhookTimeout,
		Ignore: hook.FailurePolicy != nil && *hook.FailurePolicy == configv1alpha1.FailurePolicyIgnore}
	if hook.TimeoutSeconds != nil {
		w.timeout = time.Duration(*hook.TimeoutSeconds) * time.Second
	}
	var err error
	if w.url, err = WebhookURL(hook); err != nil {
		return w, err
	}
	roots := (*x509.CertPool)(nil)
	if len(hook.ClientConfig.CABundle) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(hook.ClientConfig.CABundle) {
			return w, errors.New("clientConfig.caBundle holds no PEM certificate")
		}
	}
	// No proxy from the environment: the hub calls the webhook it was told to, and no other host sees the
	// objects it sends.
	w.client = &http.Client{Timeout: w.timeout, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return w, nil
}

// WebhookURL is where a webhook is called: its Service's cluster DNS name (https://NAME.NAMESPACE.svc:PORT/PATH,
// port 443 by default) when it names one, else its URL, which must be https.
func WebhookURL(hook *configv1alpha1.InterpreterWebhook) (string, error) {
	if s := hook.ClientConfig.Service; s != nil {
		port := int32(443)
		if s.Port != nil {
			port = *s.Port
		}
		path := ""
		if s.Path != nil {
			path = "/" + strings.TrimPrefix(*s.Path, "/")
		}
		return "https://" + s.Name + "." + s.Namespace + ".svc:" + strconv.Itoa(int(port)) + path, nil
	}
	if hook.ClientConfig.URL == nil {
		return "", errors.New("clientConfig names neither a url nor a service")
	}
	u, err := url.Parse(*hook.ClientConfig.URL)
	switch {
	case err != nil:
		return "", fmt.Errorf("clientConfig.url: %w", err)
	case u.Scheme != "https":
		return "", fmt.Errorf("clientConfig.url %q is not https: the hub sends objects only over TLS", *hook.ClientConfig.URL)
	case u.Host == "":
		return "", fmt.Errorf("clientConfig.url %q has no host", *hook.ClientConfig.URL)
	case u.User != nil || u.Fragment != "" || u.RawQuery != "":
		return "", fmt.Errorf("clientConfig.url %q may not hold user information, a query or a fragment", *hook.ClientConfig.URL)
	}
	return u.String(), nil
}

// describe names the webhook in errors: its configuration and its name.
func (w *Webhook) describe() string { return w.Config + " (webhook " + w.Name + ")" }

// call sends req (its uid and operation set here) and returns the webhook's successful response, or an
// *Error naming the webhook.
func (w *Webhook) call(ctx context.Context, op Operation, req *configv1alpha1.ResourceInterpreterRequest) (*configv1alpha1.ResourceInterpreterResponse, error) {
	req.UID, req.Operation = uuid.NewUUID(), webhookOps[op]
	resp, err := w.send(ctx, req)
	if err != nil {
		return nil, &Error{Webhook: w.describe(), Operation: op, Err: err}
	}
	return resp, nil
}

func (w *Webhook) send(ctx context.Context, req *configv1alpha1.ResourceInterpreterRequest) (*configv1alpha1.ResourceInterpreterResponse, error) {
	if w.broken != nil {
		return nil, w.broken
	}
	body, err := json.Marshal(&configv1alpha1.ResourceInterpreterContext{Request: req, TypeMeta: metav1.TypeMeta{
		APIVersion: configv1alpha1.InterpreterContextAPIVersion, Kind: configv1alpha1.InterpreterContextKind}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json")
	httpResp, err := w.client.Do(httpReq)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer within timeoutSeconds (%s)", w.timeout)
		}
		return nil, err
	}
	defer httpResp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(httpResp.Body, maxWebhookResponse+1))
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("no answer within timeoutSeconds (%s)", w.timeout)
	case err != nil:
		return nil, fmt.Errorf("reading the answer: %w", err)
	case len(data) > maxWebhookResponse:
		return nil, fmt.Errorf("the answer is larger than %d bytes", maxWebhookResponse)
	case httpResp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("HTTP %d: %s", httpResp.StatusCode, truncated(data))
	}
	return readResponse(data, req.UID)
}

// readResponse reads a webhook's answer to the request with uid: a ResourceInterpreterContext whose response
// carries the uid back and is successful.
func readResponse(data []byte, uid types.UID) (*configv1alpha1.ResourceInterpreterResponse, error) {
	answer := &configv1alpha1.ResourceInterpreterContext{}
	if err := json.Unmarshal(data, answer); err != nil {
		return nil, fmt.Errorf("the answer is not a ResourceInterpreterContext: %w", err)
	}
	resp := answer.Response
	switch {
	case resp == nil:
		return nil, errors.New("the answer has no response")
	case resp.UID != uid:
		return nil, fmt.Errorf("the answer is to request %q, not %q", resp.UID, uid)
	case !resp.Successful:
		msg := "not successful"
		if resp.Status != nil {
			msg = fmt.Sprintf("not successful (code %d): %s", resp.Status.Code, resp.Status.Message)
		}
		return nil, errors.New(msg)
	case len(resp.Patch) > 0 && (resp.PatchType == nil || *resp.PatchType != configv1alpha1.PatchTypeJSONPatch):
		return nil, errors.New("the answer's patch is not of patchType JSONPatch")
	}
	return resp, nil
}

// truncated is the start of a body, for an error message.
func truncated(data []byte) string {
	const limit = 256
	if len(data) > limit {
		return string(data[:limit]) + "..."
	}
	return string(data)
}

// matchesRules says whether any rule names the kind and operation.
func matchesRules(rules []configv1alpha1.RuleWithOperations, gvk schema.GroupVersionKind, op configv1alpha1.InterpreterOperation) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, "*") || slices.Contains(list, v) }
	for _, r := range rules {
		if (slices.Contains(r.Operations, configv1alpha1.InterpreterOperationAll) || slices.Contains(r.Operations, op)) &&
			has(r.APIGroups, gvk.Group) && has(r.APIVersions, gvk.Version) && has(r.Kinds, gvk.Kind) {
			return true
		}
	}
	return false
}

// Answers says whether any webhook of cfg answers any operation for gvk.
func Answers(cfg *configv1alpha1.InterpreterWebhookConfiguration, gvk schema.GroupVersionKind) bool {
	for _, hook := range cfg.Webhooks {
		for op := range webhookOps {
			if matchesRules(hook.Rules, gvk, webhookOps[op]) {
				return true
			}
		}
	}
	return false
}

// webhook returns the webhook that answers op for gvk: the first matching webhook of the configuration
// whose name sorts first; nil when none matches. An error reading the configurations is returned, never
// read as "there is none".
func (r *Registry) webhook(ctx context.Context, gvk schema.GroupVersionKind, op Operation) (*Webhook, error) {
	if r == nil || r.Reader == nil {
		return nil, nil
	}
	list := &configv1alpha1.InterpreterWebhookConfigurationList{}
	if err := r.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("reading InterpreterWebhookConfigurations: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b configv1alpha1.InterpreterWebhookConfiguration) int { return strings.Compare(a.Name, b.Name) })
	for i := range list.Items {
		cfg := &list.Items[i]
		if cfg.DeletionTimestamp != nil {
			continue
		}
		for j := range cfg.Webhooks {
			if matchesRules(cfg.Webhooks[j].Rules, gvk, webhookOps[op]) {
				return r.prepared(cfg, j), nil
			}
		}
	}
	return nil, nil
}

// prepared returns a configuration's webhook ready to call, from the registry's memory when the configuration
// did not change, so that calls reuse their connections. A webhook that cannot be prepared (written before
// admission checked it) fails every call with the reason.
func (r *Registry) prepared(cfg *configv1alpha1.InterpreterWebhookConfiguration, i int) *Webhook {
	key := string(cfg.UID) + "/" + cfg.ResourceVersion + "/" + strconv.Itoa(i)
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.webhooks[key]; ok {
		return w
	}
	w, err := newWebhook(cfg.Name, &cfg.Webhooks[i])
	if err != nil {
		w.broken = err
	}
	if r.webhooks == nil || len(r.webhooks) > 64 {
		for _, old := range r.webhooks {
			if old.client != nil {
				old.client.CloseIdleConnections()
			}
		}
		r.webhooks = map[string]*Webhook{}
	}
	r.webhooks[key] = w
	return w
}
