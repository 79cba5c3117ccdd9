package admission

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
)

// replicaSetPolicy is the name of the admission policy (and its binding) that lets only who may write
// ManifestWorks in every namespace write a ManifestWorkReplicaSet.
const replicaSetPolicy = "flotilla-manifestworkreplicaset-writers"

// replicaSetAdmission refuses the creation or change of an OCM ManifestWorkReplicaSet to anyone who may not
// create ManifestWorks in every namespace. A replica set lives in a team's namespace, but the hub writes its
// template as ManifestWorks into the namespaces of the clusters its Placements decide, and a ManifestWork may
// hold any object, cluster-scoped or in any namespace of the member: without this rule the editors of a
// namespace bound to a ClusterSet could install anything on those clusters, where a namespaced
// PropagationPolicy keeps them inside their namespace. So a replica set is held to what its author could
// write by hand. Deleting one needs only RBAC.
func replicaSetAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	group := ocmworkv1.GroupVersion.Group
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: replicaSetPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matching([]string{group}, []string{"manifestworkreplicasets"}, admissionregistrationv1.Create, admissionregistrationv1.Update),
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("authorizer.group(%q).resource('manifestworks').check('create').allowed()", group),
				Message: fmt.Sprintf("writing a ManifestWorkReplicaSet needs create on manifestworks (group %s) in every namespace: "+
					"the hub writes its template as ManifestWorks into the namespaces of the clusters its placements decide, "+
					"and they may install any object there (ask an administrator of the hub)", group),
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	return policy, bindingFor(policy)
}
