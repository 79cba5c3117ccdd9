package admission

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// webhookConfiguration names the ValidatingWebhookConfiguration that sends an existing cluster's API server
// to the hub's checks.
const webhookConfiguration = "flotilla-checks"

// webhookRefresh is how often a serving hub puts its webhook configuration back (should someone change or
// delete it) and renews its serving certificate when a third of its life is left.
const webhookRefresh = 10 * time.Minute

// webhookOrphanCheck is how often a hub process looks whether the webhook configuration sends the API server
// to another process's URL that no longer answers (that process died), and takes the configuration over.
const webhookOrphanCheck = 5 * time.Second

// maxReview bounds the body of an AdmissionReview: an object and its old version, each at most the API
// server's 3 MiB, with room to spare.
const maxReview = 16 << 20

// WebhookOptions say where a hub over an existing cluster serves the checks, and how that cluster's API
// server reaches them.
type WebhookOptions struct {
	// BindAddress and Port are where the webhook listens; port 0 picks a free one.
	BindAddress string
	Port        int
	// Host is the name or IP at which the cluster's API server calls the webhook (https://Host:Port); empty:
	// this host's address on its route to that API server.
	Host string
	// Service, when set, is the Service in front of the hub inside the cluster: the API server calls the
	// webhook through it, at its port Port, instead of at Host.
	Service types.NamespacedName
}

// Webhook serves the checks to an existing cluster's API server.
type Webhook struct {
	// Address is where the cluster's API server calls the webhook: a URL, or the Service's address.
	Address string

	kube     kubernetes.Interface
	clientOf func(path string) admissionregistrationv1.WebhookClientConfig
	hosts    []string // the serving certificate's
	cert     atomic.Pointer[tls.Certificate]
	server   *http.Server
	ln       net.Listener
	stop     context.CancelFunc
	failed   chan error
	stopped  chan struct{}
}

// ServeWebhook listens, issues its serving certificate from the CA the hub keeps in the cluster, installs
// (or restores) the ValidatingWebhookConfiguration that sends the cluster's API server here, and serves
// until Stop, putting the configuration back and renewing the certificate every webhookRefresh. The system
// namespace must exist.
func ServeWebhook(ctx context.Context, cfg *rest.Config, o WebhookOptions) (_ *Webhook, err error) {
	w := &Webhook{failed: make(chan error, 1), stopped: make(chan struct{})}
	if w.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if w.ln, err = net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Port))); err != nil {
		return nil, fmt.Errorf("admission webhook: %w", err)
	}
	defer func() {
		if err != nil {
			_ = w.ln.Close()
		}
	}()
	port := int32(w.ln.Addr().(*net.TCPAddr).Port)
	if o.Service.Name != "" {
		svc := o.Service
		// The API server calls a Service's webhook by this name, and verifies it.
		w.hosts = []string{svc.Name + "." + svc.Namespace + ".svc"}
		w.Address = "service " + svc.String() + " port " + strconv.Itoa(int(port))
		w.clientOf = func(path string) admissionregistrationv1.WebhookClientConfig {
			return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: svc.Namespace, Name: svc.Name, Path: ptr.To(path), Port: ptr.To(port)}}
		}
	} else {
		host := o.Host
		if host == "" {
			if host, err = routeHost(cfg); err != nil {
				return nil, err
			}
		}
		w.hosts = []string{host}
		base := "https://" + net.JoinHostPort(host, strconv.Itoa(int(port)))
		w.Address = base
		w.clientOf = func(path string) admissionregistrationv1.WebhookClientConfig {
			return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path)}
		}
	}
	if err := w.refresh(ctx); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	reader, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	for _, c := range Checks {
		c.reader = reader
		mux.Handle(c.path(), c)
	}
	w.server = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return w.cert.Load(), nil },
		},
	}
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.stop = stop
	go w.serve(serveCtx)
	return w, nil
}

// serve serves until ctx ends, refreshing every webhookRefresh; it reports on Failed when serving fails.
func (w *Webhook) serve(ctx context.Context) {
	defer close(w.stopped)
	served := make(chan error, 1)
	go func() { served <- w.server.ServeTLS(w.ln, "", "") }()
	tick := time.NewTicker(webhookRefresh)
	defer tick.Stop()
	orphans := time.NewTicker(webhookOrphanCheck)
	defer orphans.Stop()
	for {
		select {
		case <-orphans.C:
			if w.orphaned(ctx) {
				if err := w.refresh(ctx); err != nil && ctx.Err() == nil {
					klog.Warningf("admission webhook: %v", err)
				}
			}
		case <-ctx.Done():
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = w.server.Shutdown(shutdown)
			return
		case err := <-served:
			w.failed <- fmt.Errorf("admission webhook: %w", err)
			return
		case <-tick.C:
			if err := w.refresh(ctx); err != nil && ctx.Err() == nil {
				// The configuration and certificate in place still serve; the next tick tries again.
				klog.Warningf("admission webhook: %v", err)
			}
		}
	}
}

// orphaned says whether the webhook configuration sends the API server to a URL other than this process's
// that does not accept a connection: the hub process that wrote it last is gone, and until another writes
// its own, the checked kinds cannot be written. (Replicas behind a Service share one address: never orphaned.)
func (w *Webhook) orphaned(ctx context.Context) bool {
	got, err := w.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhookConfiguration, metav1.GetOptions{})
	if err != nil || len(got.Webhooks) == 0 || got.Webhooks[0].ClientConfig.URL == nil {
		return false
	}
	mine := w.clientOf(Checks[0].path()).URL
	configured := *got.Webhooks[0].ClientConfig.URL
	if mine != nil && *mine == configured {
		return false
	}
	u, err := url.Parse(configured)
	if err != nil {
		return true
	}
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return ctx.Err() == nil
	}
	_ = conn.Close()
	return false
}

// refresh renews the serving certificate when it is no longer current and writes the webhook configuration
// as it should be.
func (w *Webhook) refresh(ctx context.Context) error {
	ca, err := ensureWebhookCA(ctx, w.kube)
	if err != nil {
		return err
	}
	if cert := w.cert.Load(); cert == nil || !controlplane.ServingCertCurrent(cert.Leaf, ca.cert, w.hosts) {
		if cert, err = ca.servingCert(w.hosts); err != nil {
			return fmt.Errorf("admission webhook serving certificate: %w", err)
		}
		w.cert.Store(cert)
	}
	return installWebhookConfiguration(ctx, w.kube, webhookConfigurationFor(w.clientOf, ca.pem))
}

// Failed delivers an error when the webhook stops serving on its own.
func (w *Webhook) Failed() <-chan error { return w.failed }

// Stop stops serving; the webhook configuration stays, so while no hub serves, the checked kinds cannot be
// written (failurePolicy Fail).
func (w *Webhook) Stop() {
	w.stop()
	<-w.stopped
}

// routeHost returns this host's address on its route to the API server of cfg: where that API server can
// most likely reach it.
func routeHost(cfg *rest.Config) (string, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", err
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	// A UDP "connection" sends nothing: the kernel only picks the route, and with it the local address.
	conn, err := net.Dial("udp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return "", fmt.Errorf("finding this host's address towards %s (give --webhook-host): %w", cfg.Host, err)
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// path is where the webhook serves the check.
func (c Check) path() string { return "/" + strings.ToLower(c.Name) }

// ServeHTTP answers an AdmissionReview with the check's review of its object.
func (c Check) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(http.MaxBytesReader(rw, r.Body, maxReview)).Decode(review); err != nil || review.Request == nil {
		http.Error(rw, "want an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	warnings, err := c.admit(r.Context(), review.Request)
	response.Warnings = warnings
	if err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			status = apierrors.NewInternalError(err)
		}
		response.Allowed, response.Result = false, ptr.To(status.Status())
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: response})
}

// admit reviews the object of a request, as the in-process plugin does, and returns the check's warnings
// about an object it accepts.
func (c Check) admit(ctx context.Context, req *admissionv1.AdmissionRequest) ([]string, error) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return nil, nil
	}
	if !c.handles(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}, req.SubResource) {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(req.Object.Raw); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if c.Admit != nil {
		r := Request{Resource: schema.GroupVersionResource(req.Resource), Subresource: req.SubResource,
			Kind: schema.GroupVersionKind(req.Kind), Namespace: req.Namespace, Name: req.Name, Object: u}
		if len(req.OldObject.Raw) > 0 {
			r.OldObject = &unstructured.Unstructured{}
			if err := r.OldObject.UnmarshalJSON(req.OldObject.Raw); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		}
		return nil, c.admitRequest(ctx, r)
	}
	if err := c.review(schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}, req.Name, u); err != nil {
		return nil, err
	}
	return c.warnings(ctx, u), nil
}

// webhookConfigurationFor sends the checks' resources to the webhook, through clientOf(path) with caBundle.
// A check that cannot be called refuses (failurePolicy Fail): nothing is written unchecked.
func webhookConfigurationFor(clientOf func(path string) admissionregistrationv1.WebhookClientConfig, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookConfiguration}}
	for _, c := range Checks {
		client := clientOf(c.path())
		client.CABundle = caBundle
		var rules []admissionregistrationv1.RuleWithOperations
		for _, r := range c.Resources {
			resources := []string{r.Resource}
			for _, sub := range c.Subresources {
				resources = append(resources, r.Resource+"/"+sub)
			}
			rules = append(rules, admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{r.Group}, APIVersions: []string{"*"}, Resources: resources},
			})
		}
		// A check that only warns is no reason to refuse an object while the hub is away.
		failure := admissionregistrationv1.Fail
		if c.Validate == nil && c.Admit == nil {
			failure = admissionregistrationv1.Ignore
		}
		vwc.Webhooks = append(vwc.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name:                    c.webhookName(),
			ClientConfig:            client,
			Rules:                   rules,
			FailurePolicy:           ptr.To(failure),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return vwc
}

// installWebhookConfiguration creates want or puts its webhooks back.
func installWebhookConfiguration(ctx context.Context, kube kubernetes.Interface, want *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	configs := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	// Another hub process may write it at the same time: read again and retry.
	raced := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, raced, func() error {
		got, err := configs.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = configs.Create(ctx, want, metav1.CreateOptions{})
			return err
		} else if err != nil {
			return err
		}
		got.Webhooks = want.Webhooks
		_, err = configs.Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("admission webhook configuration %s: %w", want.Name, err)
	}
	return nil
}
