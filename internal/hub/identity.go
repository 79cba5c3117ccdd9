package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// The embedded hub's controllers reach its kube-apiserver as a user of their own rather than as the admin:
// the admin is in system:masters, which API Priority and Fairness exempts, so in a burst the controllers'
// requests competed with the users' for the hub's CPU with nothing to say who goes first (100 creates took
// 6-7 s during a 100 × 2 burst, 1 s on an idle hub). Under their own identity their requests wait in a
// priority level of their own, below the levels users fall in.
const (
	// ControllersUser is the controllers' user: a client certificate from the hub CA, in no group.
	ControllersUser = "system:flotilla:controllers"
	// ControllersRole names the ClusterRole and ClusterRoleBinding that grant the controllers their rights.
	ControllersRole = "system:flotilla:controllers"
	// ControllersPriorityLevel names the controllers' FlowSchema and PriorityLevelConfiguration.
	ControllersPriorityLevel = "flotilla-controllers"
	// ControllersLeaderElection names the FlowSchema that keeps the controllers' leader Lease in the built-in
	// leader-election level: a renewal queued behind a burst of the controllers' own writes would cost the
	// hub its leadership.
	ControllersLeaderElection = "flotilla-controllers-leader-election"
)

// controllersShares is the controllers' priority level's share of the API server's concurrency. The levels
// users fall in have more (global-default 20, workload-high 40), and the controllers may not borrow beyond it,
// so under contention users' requests are served first. With kube-apiserver's default 600 seats this gives
// the controllers about 12 requests at a time, ample for their writes (a few milliseconds each) but not
// enough to take both cores of a small machine away from the users.
const controllersShares = 5

// controllersRBAC grants the controllers' user what they do: read templates of any kind and write their
// status and claim labels, write bindings, Works and Clusters, create each cluster's namespace and its
// agent's RBAC, approve agents' CertificateSigningRequests, read bootstrap tokens and push credentials, hold
// Leases and record events. Templates are of any kind, and granting an agent's RBAC needs every right granted,
// so the role covers every resource; what sets the controllers apart from the admin is that they are not in
// system:masters: their rights are this role, which an operator can read and narrow, and their requests are
// subject to API Priority and Fairness.
func controllersRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ControllersRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/version"}, Verbs: []string{"get"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ControllersRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ControllersRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ControllersUser}},
	}
	return role, binding
}

// hubComponent tells the hub's own components among the users of its API server: its controllers, its
// agents, and the control plane's users (system:*, and kube-system's service accounts). The others, people
// and their tools, are those the controllers leave headroom for (internal/headroom).
func hubComponent(u user.Info) bool {
	name := u.GetName()
	if name == ControllersUser || slices.Contains(u.GetGroups(), registration.AgentGroup) {
		return true
	}
	if strings.HasPrefix(name, serviceaccount.ServiceAccountUsernamePrefix) {
		return strings.HasPrefix(name, serviceaccount.ServiceAccountUsernamePrefix+metav1.NamespaceSystem+":")
	}
	return strings.HasPrefix(name, "system:")
}

// controllersFlowControl is the controllers' priority level and the FlowSchemas that put their requests in
// it (everything) and in the built-in leader-election level (their leader Lease). Both schemas match before
// global-default (9900), the one users without a schema of their own fall in.
func controllersFlowControl() (*flowcontrolv1.PriorityLevelConfiguration, []*flowcontrolv1.FlowSchema) {
	level := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ControllersPriorityLevel},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](controllersShares),
				// Seats the controllers leave idle serve others; the controllers borrow none.
				LendablePercent:       ptr.To[int32](50),
				BorrowingLimitPercent: ptr.To[int32](0),
				// One user makes one flow: its requests wait in a few queues, deep enough for a burst (eight
				// reconciles per controller) that a request waits rather than being refused with a 429.
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 16, HandSize: 4, QueueLengthLimit: 250},
				},
			},
		},
	}
	subjects := []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: ControllersUser}}}
	leaderElection := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: ControllersLeaderElection},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: flowcontrolbootstrap.SuggestedPriorityLevelConfigurationLeaderElection.Name},
			MatchingPrecedence:         190,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: subjects,
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"get", "create", "update"}, APIGroups: []string{"coordination.k8s.io"},
					Resources: []string{"leases"}, Namespaces: []string{clusterv1alpha1.SystemNamespace},
				}},
			}},
		},
	}
	everything := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: ControllersPriorityLevel},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: ControllersPriorityLevel},
			MatchingPrecedence:         1000,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: subjects,
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true,
					Namespaces: []string{flowcontrolv1.NamespaceEvery},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	return level, []*flowcontrolv1.FlowSchema{leaderElection, everything}
}

// installControllersIdentity writes (or restores) the controllers' RBAC and flow control objects with the
// admin's configuration and returns the configuration the controllers reach the hub with.
func (h *Hub) installControllersIdentity(ctx context.Context) (*rest.Config, error) {
	c, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	role, binding := controllersRBAC()
	level, schemas := controllersFlowControl()
	wantRules, wantRoleRef, wantSubjects, wantLevel := role.Rules, binding.RoleRef, binding.Subjects, level.Spec
	ensure := []struct {
		obj    client.Object
		mutate func() error
	}{
		{role, func() error { role.Rules = wantRules; return nil }},
		{binding, func() error { binding.RoleRef, binding.Subjects = wantRoleRef, wantSubjects; return nil }},
		{level, func() error { level.Spec = wantLevel; return nil }},
	}
	for _, s := range schemas {
		want := s.Spec
		ensure = append(ensure, struct {
			obj    client.Object
			mutate func() error
		}{s, func() error { s.Spec = want; return nil }})
	}
	for _, e := range ensure {
		if _, err := controllerutil.CreateOrUpdate(ctx, c, e.obj, e.mutate); err != nil {
			return nil, fmt.Errorf("controllers' identity: %T %s: %w", e.obj, e.obj.GetName(), err)
		}
	}
	cfg, err := h.controlPlane.ClientConfig(ControllersUser)
	if err != nil {
		return nil, fmt.Errorf("controllers' identity: %w", err)
	}
	cfg.QPS, cfg.Burst = h.Config.QPS, h.Config.Burst
	return cfg, nil
}

// selfUser returns the user name the API server knows cfg by: on a hub over an existing cluster, the
// controllers run as the kubeconfig's user.
func selfUser(ctx context.Context, cfg *rest.Config) (string, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("who the hub is (SelfSubjectReview): %w", err)
	}
	return review.Status.UserInfo.Username, nil
}
