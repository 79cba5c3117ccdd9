package registration

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Decide approves (accept) or denies the pending join requests of a cluster, for hubs that run with
// --require-approval. It returns how many requests it decided.
func Decide(ctx context.Context, c client.Client, cluster string, accept bool, message string) (int, error) {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := c.List(ctx, list, client.MatchingLabels{LabelClusterName: cluster}); err != nil {
		return 0, err
	}
	decidedCount := 0
	for i := range list.Items {
		csr := &list.Items[i]
		if approved, denied := decided(csr); approved || denied || !isJoin(csr) {
			continue
		}
		name, err := parseAgentCSR(csr)
		if err != nil || name != cluster {
			continue
		}
		reason := "DeniedByAdmin"
		if accept {
			if why, taken, err := NameTaken(ctx, c, cluster, csr.Annotations[AnnotationClusterID], clusterv1alpha1.Pull); err != nil {
				return decidedCount, err
			} else if taken {
				return decidedCount, fmt.Errorf("cannot accept: %s", why)
			}
			reason = "AcceptedByAdmin"
		}
		if err := decide(ctx, c, nil, csr, accept, reason, message); err != nil {
			return decidedCount, err
		}
		decidedCount++
	}
	if decidedCount == 0 {
		return 0, fmt.Errorf("no pending join request for cluster %s", cluster)
	}
	return decidedCount, nil
}
