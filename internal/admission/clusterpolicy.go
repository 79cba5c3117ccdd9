package admission

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// clusterCredentialsPolicy is the name of the admission policy (and its binding) that keeps the fields
// deciding where a member's traffic goes, and whose agent it is, to administrators.
const clusterCredentialsPolicy = "flotilla-cluster-credentials"

// clusterCredentialAnnotations say which agent identity a Pull cluster trusts and which join request
// registered it: whoever writes them picks the cluster's agent.
var clusterCredentialAnnotations = []string{
	clusterv1alpha1.AnnotationAgentUser, clusterv1alpha1.AnnotationRegistrationRequest, clusterv1alpha1.AnnotationAgentKey,
}

// Settings are what the hub's admission policies depend on.
type Settings struct {
	// CredentialGroups may change a Cluster's credential fields, with ControllersUser (the hub's own
	// registration writes them).
	CredentialGroups []string
	ControllersUser  string
	// AllowLocalEndpoints admits loopback and link-local member endpoints (a local fleet, tests).
	AllowLocalEndpoints bool
}

// clusterCredentialsAdmission refuses, to everyone but the credential groups and the hub's controllers, any
// change of a Cluster's credential fields and agent annotations, and their presence on a new Cluster. RBAC
// cannot say it: `patch clusters` for taints and labels is also `patch` of spec.apiEndpoint. With
// AllowLocalEndpoints false, it also refuses, to everyone, an endpoint on a loopback or link-local address
// (the hub's own API server, a cloud's metadata service) written as an IP or localhost.
func clusterCredentialsAdmission(s Settings) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	admins := fmt.Sprintf("request.userInfo.username == %q || request.userInfo.groups.exists(g, g in %s)", s.ControllersUser, celStrings(s.CredentialGroups))
	who := fmt.Sprintf("only the hub's administrators (groups %s) may set or change it", strings.Join(s.CredentialGroups, ", "))
	var validations []admissionregistrationv1.Validation
	for _, f := range clusterv1alpha1.CredentialFields {
		validations = append(validations, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("(%s) || (oldObject == null ? !has(object.spec.%[2]s) : "+
				"(has(object.spec.%[2]s) == has(oldObject.spec.%[2]s) && (!has(object.spec.%[2]s) || object.spec.%[2]s == oldObject.spec.%[2]s)))", admins, f),
			Message: fmt.Sprintf("spec.%s: part of the cluster's credential: %s", f, who), Reason: forbidden,
		})
	}
	for _, a := range clusterCredentialAnnotations {
		annotation := func(obj string) string {
			return fmt.Sprintf("(has(%[1]s.metadata.annotations) && %[2]q in %[1]s.metadata.annotations ? %[1]s.metadata.annotations[%[2]q] : '')", obj, a)
		}
		now, before := annotation("object"), annotation("oldObject")
		validations = append(validations, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("(%s) || (oldObject == null ? %s == '' : %s == %s)", admins, now, now, before),
			Message:    fmt.Sprintf("metadata.annotations[%s]: names the cluster's agent: %s", a, who), Reason: forbidden,
		})
	}
	// The deregistration mode decides, at the Cluster's deletion, whether its member objects are deleted: only
	// who may delete the Cluster may choose it, or an operator who may only patch (taint, label) a Cluster could
	// plant DeleteResources for an administrator's later `kubectl delete`.
	unjoin := func(obj string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.annotations) && %[2]q in %[1]s.metadata.annotations ? %[1]s.metadata.annotations[%[2]q] : '')", obj, clusterv1alpha1.AnnotationUnjoin)
	}
	validations = append(validations, admissionregistrationv1.Validation{
		Expression: fmt.Sprintf("%s == (oldObject == null ? '' : %s) || authorizer.group(%q).resource('clusters').name(object.metadata.name).check('delete').allowed()",
			unjoin("object"), unjoin("oldObject"), clusterv1alpha1.GroupVersion.Group),
		Message: fmt.Sprintf("metadata.annotations[%s]: says whether the member objects are deleted with the Cluster: only who may delete the Cluster may set or change it", clusterv1alpha1.AnnotationUnjoin),
		Reason:  forbidden,
	})
	// The exclusive set label decides which namespaces may place on the cluster: moving a cluster out of one
	// set and into another takes create on clustersets/join for both (a cluster without the label is in
	// default), as OCM asks, or an operator who may only taint and label Clusters could hand a team clusters.
	// A new Cluster needs it only when it is created in a set other than default.
	set := func(obj string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.labels) && %[2]q in %[1]s.metadata.labels && %[1]s.metadata.labels[%[2]q] != '' ? %[1]s.metadata.labels[%[2]q] : %[3]q)",
			obj, clusterv1alpha1.LabelClusterSet, clusterv1alpha1.ClusterSetDefault)
	}
	join := func(setName string) string {
		return fmt.Sprintf("authorizer.group(%q).resource('clustersets').subresource('join').name(%s).check('create').allowed()",
			clusterv1alpha1.GroupVersion.Group, setName)
	}
	validations = append(validations, admissionregistrationv1.Validation{
		Expression: fmt.Sprintf("(oldObject == null ? %[1]s == %[3]q : %[1]s == %[2]s) || ((oldObject == null || %[4]s) && %[5]s)",
			set("object"), set("oldObject"), clusterv1alpha1.ClusterSetDefault, join(set("oldObject")), join(set("object"))),
		Message: fmt.Sprintf("metadata.labels[%s]: moves the cluster between ClusterSets, which needs create on %s for the set it leaves and the one it joins (group %s)",
			clusterv1alpha1.LabelClusterSet, clusterv1alpha1.ResourceClusterSetsJoin, clusterv1alpha1.GroupVersion.Group),
		Reason: forbidden,
	})
	if !s.AllowLocalEndpoints {
		host := "url(object.spec.apiEndpoint).getHostname()"
		validations = append(validations, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("!has(object.spec.apiEndpoint) || !isURL(object.spec.apiEndpoint) || "+
				"!(%[1]s == 'localhost' || (isIP(%[1]s) && (ip(%[1]s).isLoopback() || ip(%[1]s).isLinkLocalUnicast())))", host),
			Message: "spec.apiEndpoint: a loopback or link-local address reaches the hub's own host, not a member; " +
				"a hub for a local fleet runs with --allow-local-member-endpoints",
		})
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: clusterCredentialsPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matching([]string{clusterv1alpha1.GroupVersion.Group}, []string{"clusters"}, admissionregistrationv1.Create, admissionregistrationv1.Update),
			Validations:      validations,
		},
	}
	return policy, bindingFor(policy)
}

// celStrings writes strs as a CEL list literal.
func celStrings(strs []string) string {
	quoted := make([]string, len(strs))
	for i, s := range strs {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
