package registration

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	certutil "k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// LabelAddOnCredential marks the credential Secrets add-on credentials write in members, with the cluster's
// name: they are found by it when their ClusterAddOn is gone.
const LabelAddOnCredential = "addon.flotilla.io/credential-of"

// addOnCertificateWait bounds how long one reconcile waits for an add-on agent's certificate to be signed.
const addOnCertificateWait = time.Minute

// namespaceRetry is how soon a credential is looked at again while its install namespace does not exist
// in the member yet (the add-on's Work creates it).
const namespaceRetry = 5 * time.Second

// AddOnCredentials keeps the hub credentials of a cluster's add-on agents in the member: for each ClusterAddOn
// of the cluster whose status lists registrations, once the add-on's install namespace (status.namespace)
// exists in the member, it makes a key in memory, files a CSR for AgentUser(addon, cluster) with it, and
// writes the signed certificate and the key as a kubeconfig for the hub into the Secret
// CredentialSecretName(addon) of that namespace. It renews the certificate when a fifth of its life is left,
// as the agent renews its own, and deletes the Secret once the ClusterAddOn is gone, is being deleted or lists
// no registrations. The key exists only in this process and in the member's Secret.
//
// The agent of a Pull cluster runs it for its own cluster (internal/agent), the hub for Push clusters
// (addon_push.go): only Member differs.
type AddOnCredentials struct {
	// Hub reads the ClusterAddOns.
	Hub client.Reader
	// CSRs files the certificate requests, as the cluster's agent or as the hub.
	CSRs kubernetes.Interface
	// Member returns the client of cluster's member, or nil when its add-on credentials are not this one's
	// to keep.
	Member func(ctx context.Context, cluster string) (kubernetes.Interface, error)
	// HubEndpoint returns the hub's address and CA the credentials reach it with.
	HubEndpoint func(ctx context.Context) (url string, ca []byte, err error)
	// TTL is the lifetime asked for each certificate (AddOnCertTTL).
	TTL time.Duration
	// RenewBefore is how long before expiry a certificate is renewed; 0, or not less than its lifetime:
	// when a fifth of its life is left.
	RenewBefore time.Duration
	// Recorder records on the ClusterAddOn when its credential is issued or cannot be.
	Recorder events.EventRecorder
}

// Reasons of the events on a ClusterAddOn about its agent's credential.
const (
	ReasonCredentialIssued = "CredentialIssued"
	ReasonCredentialFailed = "CredentialFailed"
)

// Reconcile brings the credential of the add-on req.Name on the cluster of namespace req.Namespace to what its
// ClusterAddOn asks.
func (r *AddOnCredentials) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster, ok := clusterv1alpha1.ClusterOfNamespace(req.Namespace)
	if !ok {
		return ctrl.Result{}, nil
	}
	member, err := r.Member(ctx, cluster)
	if err != nil || member == nil {
		return ctrl.Result{}, err
	}
	enabled := &addonv1alpha1.ClusterAddOn{}
	err = r.Hub.Get(ctx, req.NamespacedName, enabled)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err // never taken for a disabled add-on
	}
	addon, user := req.Name, addonv1alpha1.AgentUser(req.Name, cluster)
	namespace := ""
	if err == nil && enabled.DeletionTimestamp == nil && slices.ContainsFunc(enabled.Status.Registrations, func(s addonv1alpha1.RegistrationStatus) bool {
		return s.User == user
	}) {
		namespace = enabled.Status.Namespace
	}
	if namespace == "" {
		return ctrl.Result{}, r.deleteOthers(ctx, member, cluster, addon, "")
	}
	ns, err := member.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil) {
		return ctrl.Result{RequeueAfter: namespaceRetry}, nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading namespace %s in the member: %w", namespace, err)
	}
	url, ca, err := r.HubEndpoint(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	secrets := member.CoreV1().Secrets(namespace)
	name := addonv1alpha1.CredentialSecretName(addon)
	secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading Secret %s/%s in the member: %w", namespace, name, err)
	}
	if err == nil {
		if renewAt, ok := currentCredential(secret.Data[addonv1alpha1.CredentialSecretKey], url, ca, user, r.RenewBefore); ok && time.Now().Before(renewAt) {
			return ctrl.Result{RequeueAfter: time.Until(renewAt)}, r.deleteOthers(ctx, member, cluster, addon, namespace)
		}
	} else {
		secret = nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, addOnCertificateWait)
	defer cancel()
	data, err := RequestAddOnCredential(waitCtx, r.CSRs, addon, cluster, url, ca, r.TTL)
	if err == nil {
		err = writeCredential(ctx, member, secret, namespace, name, cluster, addon, data)
	}
	if err != nil {
		r.event(enabled, corev1.EventTypeWarning, ReasonCredentialFailed, err.Error())
		return ctrl.Result{}, err
	}
	r.event(enabled, corev1.EventTypeNormal, ReasonCredentialIssued, fmt.Sprintf("the hub credential of %s is in Secret %s/%s of the member", user, namespace, name))
	renewAt, _ := currentCredential(data, url, ca, user, r.RenewBefore)
	// A credential left in a namespace the add-on moved from goes once the one in the new namespace is there.
	return ctrl.Result{RequeueAfter: time.Until(renewAt)}, r.deleteOthers(ctx, member, cluster, addon, namespace)
}

// RequestAddOnCredential files, with csrs, the CSR of add-on addon's agent on cluster for a certificate of
// lifetime ttl, with a key made here, waits for the certificate and returns the credential: a kubeconfig for
// the hub at url, trusting ca.
func RequestAddOnCredential(ctx context.Context, csrs kubernetes.Interface, addon, cluster, url string, ca []byte, ttl time.Duration) ([]byte, error) {
	certPEM, key, err := requestCertificate(ctx, csrs, addOnCertificate(addon, cluster), ttl, func(string) {})
	if err != nil {
		return nil, fmt.Errorf("the hub certificate of add-on %s on cluster %s: %w", addon, cluster, err)
	}
	return hubKubeconfig(url, ca, certPEM, key)
}

// addOnCertificate is the request for the certificate of add-on addon's agent on cluster.
func addOnCertificate(addon, cluster string) certificateRequest {
	return certificateRequest{user: addonv1alpha1.AgentUser(addon, cluster), cluster: cluster,
		namePrefix: "flotilla-addon-" + addon + "-" + cluster, groups: []string{addonv1alpha1.AgentGroup(addon)},
		labels: map[string]string{LabelClusterName: cluster, addonv1alpha1.LabelAddOn: addon}}
}

// currentCredential reports whether kubeconfig is a credential of user for the hub at url with ca, and when
// it is to be renewed: renewBefore its expiry, or with a fifth of its life left when renewBefore is 0 or not
// less than its life.
func currentCredential(kubeconfig []byte, url string, ca []byte, user string, renewBefore time.Duration) (time.Time, bool) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil || cfg.Host != url || !bytes.Equal(cfg.CAData, ca) {
		return time.Time{}, false
	}
	certs, err := certutil.ParseCertsPEM(cfg.CertData)
	if err != nil || len(certs) == 0 || certs[0].Subject.CommonName != user {
		return time.Time{}, false
	}
	cert := certs[0]
	life := cert.NotAfter.Sub(cert.NotBefore)
	if renewBefore <= 0 || renewBefore >= life {
		renewBefore = life / 5
	}
	return cert.NotAfter.Add(-renewBefore), true
}

// writeCredential creates the credential Secret, or updates secret (nil: there is none).
func writeCredential(ctx context.Context, member kubernetes.Interface, secret *corev1.Secret, namespace, name, cluster, addon string, data []byte) error {
	secrets := member.CoreV1().Secrets(namespace)
	var err error
	if secret == nil {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
				Labels: map[string]string{addonv1alpha1.LabelAddOn: addon, LabelAddOnCredential: cluster}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{addonv1alpha1.CredentialSecretKey: data},
		}
		_, err = secrets.Create(ctx, secret, metav1.CreateOptions{})
	} else {
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[addonv1alpha1.LabelAddOn], secret.Labels[LabelAddOnCredential] = addon, cluster
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[addonv1alpha1.CredentialSecretKey] = data
		_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing Secret %s/%s in the member: %w", namespace, name, err)
	}
	return nil
}

// deleteOthers deletes the credential Secrets of addon on cluster in the member that are not in namespace
// (empty: all of them): those of a disabled add-on, or of an install namespace it left.
func (r *AddOnCredentials) deleteOthers(ctx context.Context, member kubernetes.Interface, cluster, addon, namespace string) error {
	selector := labels.SelectorFromSet(labels.Set{addonv1alpha1.LabelAddOn: addon, LabelAddOnCredential: cluster}).String()
	list, err := member.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing the credential Secrets of add-on %s in the member: %w", addon, err)
	}
	for _, s := range list.Items {
		if s.Namespace == namespace || s.Name != addonv1alpha1.CredentialSecretName(addon) {
			continue
		}
		err := member.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s/%s in the member: %w", s.Namespace, s.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("add-on credential deleted", "addon", addon, "cluster", cluster, "secret", s.Namespace+"/"+s.Name)
	}
	return nil
}

// CredentialsInMember lists the add-ons whose credential Secrets of cluster are in member, as requests of
// AddOnCredentials: looked at once when it starts, a Secret whose ClusterAddOn went meanwhile is deleted.
func CredentialsInMember(ctx context.Context, member kubernetes.Interface, cluster string) ([]ctrl.Request, error) {
	selector := labels.SelectorFromSet(labels.Set{LabelAddOnCredential: cluster}).String()
	list, err := member.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing add-on credential Secrets in the member: %w", err)
	}
	var reqs []ctrl.Request
	for _, s := range list.Items {
		if addon := s.Labels[addonv1alpha1.LabelAddOn]; addon != "" {
			req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: addon}}
			if !slices.Contains(reqs, req) {
				reqs = append(reqs, req)
			}
		}
	}
	return reqs, nil
}

func (r *AddOnCredentials) event(enabled *addonv1alpha1.ClusterAddOn, eventType, reason, message string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(enabled, nil, eventType, reason, "KeepCredential", "%s", message)
	}
}
