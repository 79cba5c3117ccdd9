package registration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// +kubebuilder:rbac:groups=addon.flotilla.io,resources=addons;clusteraddons,verbs=get;list;watch

// MaxAddOnCertTTL is the longest lifetime of an add-on agent's hub certificate, whatever the hub grants its own
// agents. A certificate cannot be recalled: disabling an add-on takes its rights away (its RoleBindings go),
// and the certificate itself still authenticates, with no rights, until it expires. A day bounds how long a
// copy of an add-on's credential names a valid user; renewing one a day per add-on per cluster costs the hub
// one CSR per add-on and cluster every 19 hours or so.
const MaxAddOnCertTTL = 24 * time.Hour

// addOnRequest is what an add-on agent's CSR asks for.
type addOnRequest struct {
	addon, cluster, user string
}

var errNotAddOnCSR = errors.New("not a Flotilla add-on CSR")

// parseAddOnCSR reads the add-on and cluster of an add-on agent's CSR (common name AgentUser(addon,
// cluster)) and checks that it asks for exactly such a client certificate: organization AgentGroup(addon),
// no alternative names, client usages only. errNotAddOnCSR says the request is not one.
func parseAddOnCSR(csr *certificatesv1.CertificateSigningRequest) (addOnRequest, error) {
	var r addOnRequest
	req := clientCertificateRequest(csr)
	if req == nil {
		return r, errNotAddOnCSR
	}
	addon, cluster, ok := addonv1alpha1.ParseAgentUser(req.Subject.CommonName)
	if !ok {
		return r, errNotAddOnCSR
	}
	r = addOnRequest{addon: addon, cluster: cluster, user: req.Subject.CommonName}
	if err := ValidateClusterName(cluster); err != nil {
		return r, err
	}
	return r, checkClientCertificate(csr, req, addonv1alpha1.AgentGroup(addon), "an add-on agent's certificate")
}

// addOn decides on an add-on agent's CSR (parsed into r, or refused with invalid). It is approved only when
// filed by the cluster's own requester (the current agent of a Pull cluster, the hub itself for a Push
// cluster) for an add-on enabled on the cluster (its ClusterAddOn exists and is not being deleted) whose AddOn
// has a registration. Everything else is denied with the reason.
func (a *Approver) addOn(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, r addOnRequest, invalid error) error {
	if approved, denied := decided(csr); approved || denied {
		return nil
	}
	if invalid != nil {
		return a.decide(ctx, csr, false, "InvalidRequest", invalid.Error())
	}
	if err := a.checkAddOnLifetime(csr); err != nil {
		return a.decide(ctx, csr, false, "CertificateLifetime", err.Error())
	}
	cluster := &clusterv1alpha1.Cluster{}
	err := a.Reader.Get(ctx, client.ObjectKey{Name: r.cluster}, cluster)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil || cluster.DeletionTimestamp != nil {
		return a.decide(ctx, csr, false, "ClusterNotRegistered", fmt.Sprintf("cluster %s is not registered with the hub", r.cluster))
	}
	if reason, ok := a.filedForCluster(csr, cluster); !ok {
		return a.decide(ctx, csr, false, "NotClusterRequester", reason)
	}
	ns := clusterv1alpha1.ClusterNamespace(r.cluster)
	enabled := &addonv1alpha1.ClusterAddOn{}
	err = a.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.addon}, enabled)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil || enabled.DeletionTimestamp != nil {
		return a.decide(ctx, csr, false, "AddOnNotEnabled", fmt.Sprintf("add-on %s is not enabled on cluster %s (no ClusterAddOn %s/%s)", r.addon, r.cluster, ns, r.addon))
	}
	addon := &addonv1alpha1.AddOn{}
	err = a.Reader.Get(ctx, client.ObjectKey{Name: r.addon}, addon)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil || addon.DeletionTimestamp != nil {
		return a.decide(ctx, csr, false, "AddOnNotFound", fmt.Sprintf("add-on %s does not exist", r.addon))
	}
	if addon.Spec.Registration == nil {
		return a.decide(ctx, csr, false, "NoRegistration", fmt.Sprintf("add-on %s has no registration: its agents get no hub identity", r.addon))
	}
	return a.decide(ctx, csr, true, "AddOnAgent", fmt.Sprintf("the hub identity of add-on %s's agent on cluster %s", r.addon, r.cluster))
}

// filedForCluster reports whether csr was filed by the one who requests add-on certificates for cluster: its
// current agent for a Pull cluster, the hub itself (HubUser) for a Push cluster; otherwise it says why not.
func (a *Approver) filedForCluster(csr *certificatesv1.CertificateSigningRequest, cluster *clusterv1alpha1.Cluster) (string, bool) {
	switch cluster.Spec.SyncMode {
	case clusterv1alpha1.Pull:
		if csr.Spec.Username == CurrentAgentUser(cluster) && slices.Contains(csr.Spec.Groups, AgentGroup) {
			return "", true
		}
		return fmt.Sprintf("%s is not the agent of cluster %s: only it requests the certificates of add-on agents there", csr.Spec.Username, cluster.Name), false
	case clusterv1alpha1.Push:
		if a.HubUser != "" && csr.Spec.Username == a.HubUser {
			return "", true
		}
		return fmt.Sprintf("%s is not the hub: the hub requests the certificates of add-on agents on Push cluster %s", csr.Spec.Username, cluster.Name), false
	}
	return fmt.Sprintf("cluster %s has no sync mode", cluster.Name), false
}

// checkAddOnLifetime refuses a request without a lifetime, or longer than MaxAddOnCertTTL or the hub's cap
// for agents.
func (a *Approver) checkAddOnLifetime(csr *certificatesv1.CertificateSigningRequest) error {
	limit := MaxAddOnCertTTL
	if a.MaxCertTTL > 0 {
		limit = min(limit, a.MaxCertTTL)
	}
	if csr.Spec.ExpirationSeconds == nil {
		return fmt.Errorf("the request names no lifetime (spec.expirationSeconds); the hub grants add-on agents certificates of at most %s", limit)
	}
	if asked := time.Duration(*csr.Spec.ExpirationSeconds) * time.Second; asked > limit {
		return fmt.Errorf("the request asks for a certificate valid %s; the hub grants add-on agents at most %s", asked, limit)
	}
	return nil
}

// AddOnCertTTL is the lifetime asked for an add-on agent's certificate by a requester whose own certificates
// last ownTTL (0: unknown): MaxAddOnCertTTL, or ownTTL when shorter, since the hub grants that.
func AddOnCertTTL(ownTTL time.Duration) time.Duration {
	if ownTTL > 0 {
		return min(MaxAddOnCertTTL, ownTTL)
	}
	return MaxAddOnCertTTL
}

// selfUser returns the user name the hub's API server knows cfg by.
func selfUser(cfg *rest.Config) (string, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("who the hub is (SelfSubjectReview): %w", err)
	}
	return review.Status.UserInfo.Username, nil
}
