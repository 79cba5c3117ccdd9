package registration

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ProxyImpersonation are the rights a push member's credentials need so that the hub's proxy can act there
// as its caller: impersonate any user, group, service account, uid and user extra.
var ProxyImpersonation = []authorizationv1.ResourceAttributes{
	{Verb: "impersonate", Resource: "users"},
	{Verb: "impersonate", Resource: "groups"},
	{Verb: "impersonate", Resource: "serviceaccounts"},
	{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids"},
	{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras"},
}

// MissingImpersonation asks the member, as the credentials the hub would store, which of ProxyImpersonation
// they lack, and returns them as RBAC would write them ("impersonate users", "impersonate
// userextras.authentication.k8s.io").
func MissingImpersonation(ctx context.Context, member kubernetes.Interface) ([]string, error) {
	var missing []string
	for _, attrs := range ProxyImpersonation {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
		got, err := member.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("asking the member whether its credentials may %s %s: %w", attrs.Verb, attrs.Resource, err)
		}
		if !got.Status.Allowed {
			resource := attrs.Resource
			if attrs.Group != "" {
				resource += "." + attrs.Group
			}
			missing = append(missing, attrs.Verb+" "+resource)
		}
	}
	return missing, nil
}

// ImpersonationError says what a push member's credentials lack for the hub's proxy.
func ImpersonationError(cluster string, missing []string) error {
	return fmt.Errorf("the credentials of --cluster-kubeconfig may not %s on the member, and the hub's proxy (clusters/%s/proxy) acts there as its callers by impersonation",
		strings.Join(missing, ", "), cluster)
}
