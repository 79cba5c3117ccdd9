package registration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-client,verbs=approve

// Approver decides on agents' CertificateSigningRequests. A join (filed with a Flotilla bootstrap token) is
// approved when the cluster name is free or already registered to the same cluster ID, after the cluster's
// objects exist; with RequireApproval it waits for `flotilla accept`. A renewal (filed by the agent's own
// certificate) is approved while the cluster is registered. Anything else about the request that is wrong
// is denied with a reason the agent prints.
type Approver struct {
	Client          client.Client
	Recorder        events.EventRecorder
	RequireApproval bool
}

// SetupApprover registers the approver with the manager.
func SetupApprover(mgr ctrl.Manager, requireApproval bool) error {
	a := &Approver{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("flotilla-registration"), RequireApproval: requireApproval}
	return ctrl.NewControllerManagedBy(mgr).Named("registration").For(&certificatesv1.CertificateSigningRequest{}).Complete(a)
}

// Reconcile handles one CSR.
func (a *Approver) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := a.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return ctrl.Result{}, nil
	}
	cluster, err := parseAgentCSR(csr)
	if errors.Is(err, errNotAgentCSR) {
		return ctrl.Result{}, nil
	}
	approved, denied := decided(csr)
	switch {
	case denied:
		return ctrl.Result{}, nil
	case approved:
		if isJoin(csr) && err == nil {
			_, err := EnsureClusterObjects(ctx, a.Client, desiredCluster(csr, cluster))
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, decide(ctx, a.Client, a.Recorder, csr, false, "InvalidRequest", err.Error())
	}

	switch {
	case csr.Spec.Username == AgentUser(cluster):
		existing := &clusterv1alpha1.Cluster{}
		if err := a.Client.Get(ctx, client.ObjectKey{Name: cluster}, existing); apierrors.IsNotFound(err) {
			return ctrl.Result{}, decide(ctx, a.Client, a.Recorder, csr, false, "ClusterNotRegistered",
				fmt.Sprintf("cluster %s is no longer registered with the hub; join it again with a new token", cluster))
		} else if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, decide(ctx, a.Client, a.Recorder, csr, true, "AgentRenewal", "the agent of cluster "+cluster+" renews its certificate")
	case isJoin(csr):
		if reason, taken, err := NameTaken(ctx, a.Client, cluster, csr.Annotations[AnnotationClusterID], clusterv1alpha1.Pull); err != nil {
			return ctrl.Result{}, err
		} else if taken {
			return ctrl.Result{}, decide(ctx, a.Client, a.Recorder, csr, false, "ClusterNameTaken", reason)
		}
		if a.RequireApproval {
			log.FromContext(ctx).Info("join waits for flotilla accept", "cluster", cluster, "csr", csr.Name)
			return ctrl.Result{}, nil
		}
		if _, err := EnsureClusterObjects(ctx, a.Client, desiredCluster(csr, cluster)); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, decide(ctx, a.Client, a.Recorder, csr, true, "AutoApproved", "cluster "+cluster+" joined with a valid bootstrap token")
	}
	return ctrl.Result{}, nil
}

// NameTaken reports whether cluster is registered to a different member (another cluster ID) or in another
// sync mode, and says why.
func NameTaken(ctx context.Context, c client.Client, cluster, clusterID string, mode clusterv1alpha1.ClusterSyncMode) (string, bool, error) {
	existing := &clusterv1alpha1.Cluster{}
	err := c.Get(ctx, client.ObjectKey{Name: cluster}, existing)
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if existing.Spec.ID != "" && existing.Spec.ID == clusterID && existing.Spec.SyncMode == mode {
		return "", false, nil
	}
	return fmt.Sprintf("cluster name %q is already registered to another cluster (id %q, mode %s); choose another --cluster-name or unjoin %s first",
		cluster, existing.Spec.ID, existing.Spec.SyncMode, cluster), true, nil
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
	csr.Status.Conditions = append(csr.Status.Conditions, condition)
	if err := c.SubResource("approval").Update(ctx, csr); err != nil {
		return fmt.Errorf("recording %s on CSR %s: %w", condition.Type, csr.Name, err)
	}
	if recorder != nil {
		recorder.Eventf(csr, nil, eventType, reason, string(condition.Type), message)
	}
	return nil
}

var errNotAgentCSR = errors.New("not a Flotilla agent CSR")

// parseAgentCSR returns the cluster an agent CSR is for and checks that it asks for exactly an agent's
// client certificate.
func parseAgentCSR(csr *certificatesv1.CertificateSigningRequest) (string, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return "", errNotAgentCSR
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return "", errNotAgentCSR
	}
	cluster, ok := ClusterOfUser(req.Subject.CommonName)
	if !ok {
		return "", errNotAgentCSR
	}
	if msgs := validation.IsDNS1123Label(cluster); len(msgs) > 0 {
		return cluster, fmt.Errorf("cluster name %q is invalid: %s", cluster, strings.Join(msgs, "; "))
	}
	if !slices.Equal(req.Subject.Organization, []string{AgentGroup}) {
		return cluster, fmt.Errorf("an agent certificate must have organization %s, not %v", AgentGroup, req.Subject.Organization)
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return cluster, errors.New("an agent certificate carries no subject alternative names")
	}
	for _, u := range csr.Spec.Usages {
		if u != certificatesv1.UsageClientAuth && u != certificatesv1.UsageDigitalSignature && u != certificatesv1.UsageKeyEncipherment {
			return cluster, fmt.Errorf("an agent certificate is for client authentication only, not %q", u)
		}
	}
	if isJoin(csr) && csr.Labels[LabelClusterName] != cluster {
		return cluster, fmt.Errorf("label %s=%q does not match the certificate's cluster %q", LabelClusterName, csr.Labels[LabelClusterName], cluster)
	}
	return cluster, nil
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

// desiredCluster is the Cluster a join CSR asks for.
func desiredCluster(csr *certificatesv1.CertificateSigningRequest, name string) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{
			SyncMode: clusterv1alpha1.Pull,
			ID:       csr.Annotations[AnnotationClusterID],
			Provider: csr.Annotations[AnnotationProvider],
			Region:   csr.Annotations[AnnotationRegion],
		},
	}
	if zones := csr.Annotations[AnnotationZones]; zones != "" {
		c.Spec.Zones = strings.Split(zones, ",")
	}
	if l, err := labels.ConvertSelectorToLabelsMap(csr.Annotations[AnnotationLabels]); err == nil && len(l) > 0 {
		c.Labels = l
	}
	return c
}
