package registration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// MaxPendingJoinsPerToken is how many join requests of one token may wait for `flotilla accept` at once;
// more are denied, so a token holder cannot fill the hub with requests nobody will look at.
const MaxPendingJoinsPerToken = 3

// annotationAwaiting marks a join request the approver left for `flotilla accept`, with the reason.
const annotationAwaiting = "flotilla.io/awaiting-acceptance"

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-client,verbs=approve
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=secrets,verbs=get;delete

// Approver decides on agents' CertificateSigningRequests, and on those of add-on agents (addon_approver.go). A join (filed with a Flotilla bootstrap token) is
// approved when its token allows it and the cluster name is free, after the cluster's objects exist; a join
// for a registered name, or any join with RequireApproval, waits for `flotilla accept`. A renewal (filed by
// the agent's own certificate) is approved only for the Cluster's current agent user. Anything else about
// the request that is wrong is denied with a reason the agent prints.
type Approver struct {
	Client client.Client
	// Reader reads Clusters and token Secrets from the API server, not a cache: decisions must not rest on
	// a copy that lags behind a racing join or a deleted token.
	Reader          client.Reader
	Recorder        events.EventRecorder
	RequireApproval bool
	// MaxCertTTL is the longest certificate lifetime an agent may ask for.
	MaxCertTTL time.Duration
	// HubUser is the hub's own user, the one that requests the certificates of add-on agents on Push
	// clusters (addon_approver.go).
	HubUser string

	waiting sync.Mutex // held while counting and marking waiting requests
}

// SetupApprover registers the approver with the manager.
func SetupApprover(mgr ctrl.Manager, requireApproval bool, maxCertTTL time.Duration) error {
	hubUser, err := selfUser(mgr.GetConfig())
	if err != nil {
		return err
	}
	a := &Approver{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-registration"),
		RequireApproval: requireApproval, MaxCertTTL: maxCertTTL, HubUser: hubUser}
	return ctrl.NewControllerManagedBy(mgr).Named("registration").For(&certificatesv1.CertificateSigningRequest{}).Complete(a)
}

// Reconcile handles one CSR.
func (a *Approver) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := a.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r, err := parseAddOnCSR(csr); !errors.Is(err, errNotAddOnCSR) {
		return ctrl.Result{}, a.addOn(ctx, csr, r, err)
	}
	join := isJoin(csr)
	r, err := parseAgentCSR(csr)
	if errors.Is(err, errNotAgentCSR) {
		if !join {
			return ctrl.Result{}, nil // somebody else's request
		}
		err = errors.New("a Flotilla bootstrap token may only request an agent's client certificate")
	}
	approved, denied := decided(csr)
	switch {
	case denied:
		return ctrl.Result{}, nil
	case approved:
		// An approved join only ever spends its token here: the Cluster was created before the approval,
		// and one that is gone since was unjoined, never to be re-created from an old request.
		if join {
			if err := spendToken(ctx, a.Client, a.Reader, csr.Spec.Username); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, a.recordExpiry(ctx, csr, r)
	case err != nil:
		return ctrl.Result{}, a.decide(ctx, csr, false, "InvalidRequest", err.Error())
	}
	if err := a.checkLifetime(csr); err != nil {
		return ctrl.Result{}, a.decide(ctx, csr, false, "CertificateLifetime", err.Error())
	}
	if join {
		return ctrl.Result{}, a.join(ctx, csr, r)
	}
	return ctrl.Result{}, a.renew(ctx, csr, r)
}

// recordExpiry notes on the Cluster when the certificate signed for its current agent expires, so that
// `flotilla describe cluster` can say an agent must join again. Certificates of other agents are ignored.
func (a *Approver) recordExpiry(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, r joinRequest) error {
	if len(csr.Status.Certificate) == 0 || r.cluster == "" {
		return nil // not signed yet: the signer's status update brings the request back
	}
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	cluster := &clusterv1alpha1.Cluster{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: r.cluster}, cluster); err != nil {
		return client.IgnoreNotFound(err)
	}
	expires := cert.NotAfter.UTC().Format(time.RFC3339)
	current, _ := time.Parse(time.RFC3339, cluster.Annotations[clusterv1alpha1.AnnotationAgentCertificateExpires])
	if cert.Subject.CommonName != CurrentAgentUser(cluster) || !cert.NotAfter.After(current) {
		return nil
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, clusterv1alpha1.AnnotationAgentCertificateExpires, expires)
	return client.IgnoreNotFound(a.Client.Patch(ctx, cluster, patch, client.FieldOwner(fieldManager)))
}

// renew approves a renewal by the cluster's current agent, and denies one by an agent of an earlier
// registration or of another cluster.
func (a *Approver) renew(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, r joinRequest) error {
	if !slices.Contains(csr.Spec.Groups, AgentGroup) {
		return nil // an administrator's own request for an agent certificate is theirs to decide
	}
	if csr.Spec.Username != r.user {
		return a.decide(ctx, csr, false, "NotOwnIdentity", fmt.Sprintf("%s may renew only its own certificate, not one for %s", csr.Spec.Username, r.user))
	}
	cluster := &clusterv1alpha1.Cluster{}
	err := a.Reader.Get(ctx, client.ObjectKey{Name: r.cluster}, cluster)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil || cluster.DeletionTimestamp != nil {
		return a.decide(ctx, csr, false, "ClusterNotRegistered",
			fmt.Sprintf("cluster %s is no longer registered with the hub; join it again with a new token", r.cluster))
	}
	if CurrentAgentUser(cluster) != r.user {
		return a.decide(ctx, csr, false, "RegistrationReplaced", fmt.Sprintf(
			"this certificate belongs to an earlier registration of cluster %s (unjoined or re-registered since); join it again with a new token", r.cluster))
	}
	return a.decide(ctx, csr, true, "AgentRenewal", "the agent of cluster "+r.cluster+" renews its certificate")
}

// join decides on a join request: what its token allows, whether the name is free, and what the Cluster may
// carry.
func (a *Approver) join(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, r joinRequest) error {
	grant, err := readGrant(ctx, a.Reader, csr.Spec.Username)
	if errors.Is(err, errTokenGone) {
		return a.decide(ctx, csr, false, "TokenGone", fmt.Sprintf("%v: it was deleted, expired or already used; create a new one with flotilla token create", err))
	} else if err != nil {
		return err
	}
	if grant.ClusterName != "" && grant.ClusterName != r.cluster {
		return a.decide(ctx, csr, false, "TokenBoundToOtherName", fmt.Sprintf("this token joins only cluster %s, not %s", grant.ClusterName, r.cluster))
	}
	if grant.SingleUse {
		if spent, err := a.spent(ctx, csr); err != nil {
			return err
		} else if spent {
			return a.decide(ctx, csr, false, "TokenGone", "this single-use token was already used by another join")
		}
	}
	existing := &clusterv1alpha1.Cluster{}
	err = a.Reader.Get(ctx, client.ObjectKey{Name: r.cluster}, existing)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	exists := err == nil
	// registered: this very request registered the Cluster already (objects or approval not all written);
	// it is finished below, register being idempotent. It is the only fast path, and it comes after the
	// hub's --require-approval: an accept that stopped halfway is finished by running accept again.
	registered := exists && r.registered(existing)
	sameMember := exists && existing.Spec.ID != "" && existing.Spec.ID == r.csr.Annotations[AnnotationClusterID] && existing.Spec.SyncMode == clusterv1alpha1.Pull
	switch {
	case exists && existing.DeletionTimestamp != nil:
		return a.decide(ctx, csr, false, "ClusterUnjoining", fmt.Sprintf("cluster %s is being unjoined; join again once it is gone", r.cluster))
	case exists && !registered && CurrentAgentUser(existing) == r.user:
		return a.decide(ctx, csr, false, "AgentUserTaken", fmt.Sprintf(
			"%s is the identity of cluster %s's registered agent, and this request did not register it; a join asks for an identity of its own "+
				"(flotilla join picks a new one), and a registered name changes hands only by flotilla accept", r.user, r.cluster))
	case exists && !registered && !sameMember:
		return a.decide(ctx, csr, false, "ClusterNameTaken", fmt.Sprintf(
			"cluster name %q is already registered to another cluster (id %q, mode %s); choose another --cluster-name or unjoin %s first",
			r.cluster, existing.Spec.ID, existing.Spec.SyncMode, r.cluster))
	case exists && !registered:
		return a.wait(ctx, csr, fmt.Sprintf("cluster %s is already registered; a join for a registered name is approved only by flotilla accept %s "+
			"(the cluster ID it presents is not secret, so it proves nothing); the registered agent keeps its identity until then", r.cluster, r.cluster))
	case a.RequireApproval:
		return a.wait(ctx, csr, fmt.Sprintf("this hub requires flotilla accept %s for every join", r.cluster))
	}

	desired := r.desired()
	dropped := grant.narrow(desired)
	if dropped != "" {
		desired.Annotations[clusterv1alpha1.AnnotationJoinDropped] = dropped
	}
	cluster, err := register(ctx, a.Client, a.Reader, r, desired, false)
	if errors.Is(err, errNameTaken) {
		return a.decide(ctx, csr, false, "ClusterNameTaken", err.Error())
	} else if err != nil {
		return err
	}
	if dropped != "" && a.Recorder != nil {
		a.Recorder.Eventf(cluster, csr, corev1.EventTypeWarning, "JoinRequestNarrowed", "Registered",
			"the join asked for %s, which its token does not allow; set them on the Cluster, or allow them with flotilla token create --labels/--provider/--region/--zones", dropped)
	}
	return a.decide(ctx, csr, true, "AutoApproved", "cluster "+r.cluster+" joined with a valid bootstrap token")
}

// wait leaves a join for `flotilla accept`, saying why, unless its token already has too many waiting. A
// waiting request is marked (annotationAwaiting), and marks are counted under a lock from the API server,
// not the cache, so a burst of requests cannot all slip under the limit.
func (a *Approver) wait(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, why string) error {
	if csr.Annotations[annotationAwaiting] != "" {
		return nil // said so already
	}
	a.waiting.Lock()
	defer a.waiting.Unlock()
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := a.Reader.List(ctx, list); err != nil {
		return err
	}
	waiting := 0
	for i := range list.Items {
		other := &list.Items[i]
		approved, denied := decided(other)
		if other.Name != csr.Name && other.Spec.Username == csr.Spec.Username && other.Annotations[annotationAwaiting] != "" && !approved && !denied {
			waiting++
		}
	}
	if waiting >= MaxPendingJoinsPerToken {
		return a.decide(ctx, csr, false, "TooManyPendingRequests", fmt.Sprintf(
			"%s already has %d join requests waiting for flotilla accept (at most %d); wait for a decision on those", csr.Spec.Username, waiting, MaxPendingJoinsPerToken))
	}
	patch := client.MergeFrom(csr.DeepCopy())
	if csr.Annotations == nil {
		csr.Annotations = map[string]string{}
	}
	csr.Annotations[annotationAwaiting] = why
	if err := a.Client.Patch(ctx, csr, patch, client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("marking CSR %s as waiting: %w", csr.Name, err)
	}
	log.FromContext(ctx).Info("join waits for flotilla accept", "csr", csr.Name, "requester", csr.Spec.Username, "why", why)
	if a.Recorder != nil {
		a.Recorder.Eventf(csr, nil, corev1.EventTypeNormal, "AwaitingAcceptance", "Wait", why)
	}
	return nil
}

// spent reports whether another join filed with the same token was approved already.
func (a *Approver) spent(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (bool, error) {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := a.Client.List(ctx, list); err != nil {
		return false, err
	}
	for i := range list.Items {
		other := &list.Items[i]
		if approved, _ := decided(other); approved && other.Name != csr.Name && other.Spec.Username == csr.Spec.Username {
			return true, nil
		}
	}
	return false, nil
}

// checkLifetime refuses a request without a lifetime or longer than the hub grants: the signer would cap it
// on an embedded hub, but not on an existing cluster (--kubeconfig), and the agent should know.
func (a *Approver) checkLifetime(csr *certificatesv1.CertificateSigningRequest) error {
	if a.MaxCertTTL <= 0 {
		return nil
	}
	if csr.Spec.ExpirationSeconds == nil {
		return fmt.Errorf("the request names no lifetime (spec.expirationSeconds); the hub grants agent certificates of at most %s", a.MaxCertTTL)
	}
	if asked := time.Duration(*csr.Spec.ExpirationSeconds) * time.Second; asked > a.MaxCertTTL {
		return fmt.Errorf("the request asks for a certificate valid %s; the hub grants at most %s (--max-agent-cert-ttl): use a shorter --cert-ttl", asked, a.MaxCertTTL)
	}
	return nil
}

func (a *Approver) decide(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, approve bool, reason, message string) error {
	return decide(ctx, a.Client, a.Recorder, csr, approve, reason, message)
}

// decide approves or denies csr and records an event about it.
func decide(ctx context.Context, c client.Client, recorder events.EventRecorder, csr *certificatesv1.CertificateSigningRequest,
	approve bool, reason, message string) error {
	condition := certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastUpdateTime: metav1.Now(),
	}
	eventType := corev1.EventTypeWarning
	if approve {
		condition.Type, eventType = certificatesv1.CertificateApproved, corev1.EventTypeNormal
	}
	// A request changes while it is decided (the approver marks one waiting while an administrator accepts
	// it): on a conflict the decision is made again on the request as it is now, unless it was decided.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		csr.Status.Conditions = append(csr.Status.Conditions, condition)
		err := c.SubResource("approval").Update(ctx, csr)
		if !apierrors.IsConflict(err) {
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(csr), csr); err != nil {
			return err
		}
		if approved, denied := decided(csr); approved || denied {
			return errors.New("it was decided meanwhile")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("recording %s on CSR %s: %w", condition.Type, csr.Name, err)
	}
	if recorder != nil {
		recorder.Eventf(csr, nil, eventType, reason, string(condition.Type), message)
	}
	return nil
}

var errNotAgentCSR = errors.New("not a Flotilla agent CSR")

// parseAgentCSR reads the cluster and agent user an agent CSR is for and checks that it asks for exactly an
// agent's client certificate.
func parseAgentCSR(csr *certificatesv1.CertificateSigningRequest) (joinRequest, error) {
	r := joinRequest{csr: csr}
	req := clientCertificateRequest(csr)
	if req == nil {
		return r, errNotAgentCSR
	}
	cluster, registration, ok := ParseAgentUser(req.Subject.CommonName)
	if !ok {
		return r, errNotAgentCSR
	}
	r.cluster, r.user = cluster, req.Subject.CommonName
	r.key = PublicKeyHash(req.RawSubjectPublicKeyInfo)
	if err := ValidateClusterName(cluster); err != nil {
		return r, err
	}
	if isJoin(csr) && (len(registration) < minRegistrationLength || strings.Trim(registration, "0123456789abcdefghijklmnopqrstuvwxyz") != "") {
		return r, fmt.Errorf("the agent user name %q needs a registration suffix of at least %d lowercase letters and digits: update the agent",
			r.user, minRegistrationLength)
	}
	if err := checkClientCertificate(csr, req, AgentGroup, "an agent certificate"); err != nil {
		return r, err
	}
	if isJoin(csr) && csr.Labels[LabelClusterName] != cluster {
		return r, fmt.Errorf("label %s=%q does not match the certificate's cluster %q", LabelClusterName, csr.Labels[LabelClusterName], cluster)
	}
	return r, nil
}

// clientCertificateRequest is the certificate request of a CSR for the kube-apiserver-client signer, or nil
// when the CSR is for another signer or its request does not parse.
func clientCertificateRequest(csr *certificatesv1.CertificateSigningRequest) *x509.CertificateRequest {
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil
	}
	return req
}

// checkClientCertificate checks that a request asks for exactly a client certificate of one group: that
// organization only, no subject alternative names, client usages only. what names the certificate in errors.
func checkClientCertificate(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, group, what string) error {
	if !slices.Equal(req.Subject.Organization, []string{group}) {
		return fmt.Errorf("%s must have organization %s, not %v", what, group, req.Subject.Organization)
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return fmt.Errorf("%s carries no subject alternative names", what)
	}
	for _, u := range csr.Spec.Usages {
		if u != certificatesv1.UsageClientAuth && u != certificatesv1.UsageDigitalSignature && u != certificatesv1.UsageKeyEncipherment {
			return fmt.Errorf("%s is for client authentication only, not %q", what, u)
		}
	}
	return nil
}

// isJoin reports whether a CSR was filed with a Flotilla bootstrap token.
func isJoin(csr *certificatesv1.CertificateSigningRequest) bool {
	return slices.Contains(csr.Spec.Groups, BootstrapGroup)
}

func decided(csr *certificatesv1.CertificateSigningRequest) (approved, denied bool) {
	for _, c := range csr.Status.Conditions {
		approved = approved || (c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue)
		denied = denied || ((c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status == corev1.ConditionTrue)
	}
	return approved, denied
}
