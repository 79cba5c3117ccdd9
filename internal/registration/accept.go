package registration

import (
	"context"
	"errors"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Decide approves (accept) or denies the pending join requests of a cluster: joins on hubs that run with
// --require-approval, and joins for a name that is already registered. request, when set, names the one
// request to decide. Accepting needs exactly one request: with several, it refuses and lists them, since
// the name goes to one member only. An accepted request gets every label and location it asked for, or of
// its labels only those in labels when that is not nil (an administrator narrows what a join claims; a
// label it did not ask for is refused, accept grants no more than was asked); for a registered name it takes
// over the registration when it presents the same cluster ID, and the previous agent's certificate loses its
// rights. It returns how many requests it decided.
func Decide(ctx context.Context, c client.Client, cluster, request string, accept bool, message string, labels map[string]string) (int, error) {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := c.List(ctx, list, client.MatchingLabels{LabelClusterName: cluster}); err != nil {
		return 0, err
	}
	var pending []joinRequest
	for i := range list.Items {
		csr := &list.Items[i]
		if approved, denied := decided(csr); approved || denied || !isJoin(csr) || request != "" && csr.Name != request {
			continue
		}
		if r, err := parseAgentCSR(csr); err == nil && r.cluster == cluster {
			pending = append(pending, r)
		}
	}
	switch {
	case len(pending) == 0 && request != "":
		return 0, fmt.Errorf("no pending join request %s for cluster %s", request, cluster)
	case len(pending) == 0:
		return 0, fmt.Errorf("no pending join request for cluster %s", cluster)
	case accept && len(pending) > 1:
		lines := make([]string, len(pending))
		for i, r := range pending {
			lines[i] = "  " + r.describe()
		}
		return 0, fmt.Errorf("cluster %s has %d pending join requests; accept one with --request NAME:\n%s", cluster, len(pending), strings.Join(lines, "\n"))
	}
	if !accept {
		for i, r := range pending {
			if err := decide(ctx, c, nil, r.csr, false, "DeniedByAdmin", message); err != nil {
				return i, err
			}
		}
		return len(pending), nil
	}
	r := pending[0]
	desired := r.desired()
	if labels != nil {
		for k, v := range labels {
			if desired.Labels[k] != v {
				return 0, fmt.Errorf("cannot accept %s with label %s=%s: the join did not ask for it (it asked for %q); --labels only narrows",
					r.csr.Name, k, v, r.csr.Annotations[AnnotationLabels])
			}
		}
		desired.Labels = labels
	}
	if _, err := register(ctx, c, c, r, desired, true); errors.Is(err, errNameTaken) {
		return 0, fmt.Errorf("cannot accept %s: %w", r.csr.Name, err)
	} else if err != nil {
		return 0, err
	}
	if err := decide(ctx, c, nil, r.csr, true, "AcceptedByAdmin", message); err != nil {
		return 0, err
	}
	return 1, nil
}
