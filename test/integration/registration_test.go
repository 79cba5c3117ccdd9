package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// testGrant lets a join claim what joinRequest asks for.
var testGrant = registration.Grant{Labels: map[string]string{"env": "test"}, Region: "eu-west-1"}

// joinRequest is a join of cluster name (member identity id) to the test hub with a fresh token that allows
// the labels and region it asks for.
func joinRequest(t *testing.T, env *testenv.Env, name, id string) registration.JoinRequest {
	t.Helper()
	return joinRequestWith(t, env, name, id, testGrant)
}

// joinRequestWith is joinRequest with a token that allows grant.
func joinRequestWith(t *testing.T, env *testenv.Env, name, id string, grant registration.Grant) registration.JoinRequest {
	t.Helper()
	token, err := registration.CreateToken(context.Background(), env.Kube, time.Hour, "test", grant)
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := registration.CAHashes(env.Config.CAData)
	if err != nil {
		t.Fatal(err)
	}
	return registration.JoinRequest{HubURL: env.Config.Host, Token: token.String(), CACertHashes: hashes,
		ClusterName: name, ClusterID: id, Labels: "env=test", Region: "eu-west-1", CertTTL: time.Hour}
}

// join joins a cluster and returns a client acting as its agent.
func join(t *testing.T, env *testenv.Env, name, id string) (client.Client, registration.Credential) {
	t.Helper()
	cred := registration.NewCredential(t.TempDir())
	if err := registration.Join(context.Background(), joinRequest(t, env, name, id), cred, func(string) {}); err != nil {
		t.Fatalf("joining %s: %v", name, err)
	}
	return agentClient(t, cred), cred
}

func agentClient(t *testing.T, cred registration.Credential) client.Client {
	t.Helper()
	cfg, err := cred.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestJoinCreatesClusterAndIsolatesAgents joins two clusters and checks what each agent may do: its own
// Works, Lease and Cluster status, read its ClusterAddOns, and nothing of the other cluster's, nor any Secret.
func TestJoinCreatesClusterAndIsolatesAgents(t *testing.T) {
	ctx := context.Background()
	agentA, _ := join(t, env, "iso-a", "id-a")
	join(t, env, "iso-b", "id-b")

	cluster := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "iso-a"}, cluster); err != nil {
		t.Fatal(err)
	}
	if cluster.Spec.SyncMode != clusterv1alpha1.Pull || cluster.Spec.ID != "id-a" || cluster.Labels["env"] != "test" || cluster.Spec.Region != "eu-west-1" {
		t.Fatalf("cluster not created as asked: %+v %v", cluster.Spec, cluster.Labels)
	}
	testAddOn(t, "iso", false)
	for _, ns := range []string{"flotilla-cluster-iso-a", "flotilla-cluster-iso-b"} {
		work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns, Labels: ownedWorkLabels(t, ns, "w", nil)}}
		if err := env.Client.Create(ctx, work); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "iso", Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	allowed := map[string]func() error{
		"get own Cluster": func() error { return agentA.Get(ctx, client.ObjectKey{Name: "iso-a"}, &clusterv1alpha1.Cluster{}) },
		"apply its facts to own Cluster status": func() error {
			return agentA.Status().Apply(ctx, clusterStatusFacts("iso-a", "v1.37.2"), client.FieldOwner(clusterstatus.AgentFieldManager), client.ForceOwnership)
		},
		"list own Works": func() error {
			return agentA.List(ctx, &workv1alpha1.WorkList{}, client.InNamespace("flotilla-cluster-iso-a"))
		},
		"update own Work status": func() error {
			w := &workv1alpha1.Work{}
			if err := agentA.Get(ctx, client.ObjectKey{Namespace: "flotilla-cluster-iso-a", Name: "w"}, w); err != nil {
				return err
			}
			return agentA.Status().Update(ctx, w)
		},
		"list own ClusterAddOns": func() error {
			return agentA.List(ctx, &addonv1alpha1.ClusterAddOnList{}, client.InNamespace("flotilla-cluster-iso-a"))
		},
		"get own ClusterAddOn": func() error {
			return agentA.Get(ctx, client.ObjectKey{Namespace: "flotilla-cluster-iso-a", Name: "iso"}, &addonv1alpha1.ClusterAddOn{})
		},
		"renew own Lease": func() error {
			l := &coordinationv1.Lease{}
			if err := agentA.Get(ctx, client.ObjectKey{Namespace: "flotilla-cluster-iso-a", Name: "iso-a"}, l); err != nil {
				return err
			}
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			return agentA.Update(ctx, l)
		},
	}
	for what, do := range allowed {
		if err := do(); err != nil {
			t.Errorf("agent of iso-a cannot %s: %v", what, err)
		}
	}

	forbidden := map[string]func() error{
		"get the other Cluster": func() error { return agentA.Get(ctx, client.ObjectKey{Name: "iso-b"}, &clusterv1alpha1.Cluster{}) },
		"list Clusters":         func() error { return agentA.List(ctx, &clusterv1alpha1.ClusterList{}) },
		"update the other Cluster status": func() error {
			c := &clusterv1alpha1.Cluster{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: "iso-b"}, c); err != nil {
				return err
			}
			return agentA.Status().Update(ctx, c)
		},
		"apply to the other Cluster status": func() error {
			return agentA.Status().Apply(ctx, clusterStatusFacts("iso-b", "v1.37.2"), client.FieldOwner(clusterstatus.AgentFieldManager), client.ForceOwnership)
		},
		"replace own Cluster status": func() error {
			c := &clusterv1alpha1.Cluster{}
			if err := agentA.Get(ctx, client.ObjectKey{Name: "iso-a"}, c); err != nil {
				return err
			}
			return agentA.Status().Update(ctx, c)
		},
		"update own Cluster spec": func() error {
			c := &clusterv1alpha1.Cluster{}
			if err := agentA.Get(ctx, client.ObjectKey{Name: "iso-a"}, c); err != nil {
				return err
			}
			c.Spec.Taints = nil
			c.Labels = map[string]string{"hijacked": "true"}
			return agentA.Update(ctx, c)
		},
		"list the other cluster's Works": func() error {
			return agentA.List(ctx, &workv1alpha1.WorkList{}, client.InNamespace("flotilla-cluster-iso-b"))
		},
		"get the other cluster's Work": func() error {
			return agentA.Get(ctx, client.ObjectKey{Namespace: "flotilla-cluster-iso-b", Name: "w"}, &workv1alpha1.Work{})
		},
		"change own Work spec": func() error {
			w := &workv1alpha1.Work{}
			if err := agentA.Get(ctx, client.ObjectKey{Namespace: "flotilla-cluster-iso-a", Name: "w"}, w); err != nil {
				return err
			}
			w.Spec.SuspendDispatching = ptr.To(true)
			return agentA.Update(ctx, w)
		},
		"create a Work": func() error {
			return agentA.Create(ctx, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "flotilla-cluster-iso-a"}})
		},
		"list the other cluster's ClusterAddOns": func() error {
			return agentA.List(ctx, &addonv1alpha1.ClusterAddOnList{}, client.InNamespace("flotilla-cluster-iso-b"))
		},
		"list ClusterAddOns of all namespaces": func() error { return agentA.List(ctx, &addonv1alpha1.ClusterAddOnList{}) },
		"create a ClusterAddOn": func() error {
			return agentA.Create(ctx, &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "flotilla-cluster-iso-a"}})
		},
		"change own ClusterAddOn": func() error {
			c := &addonv1alpha1.ClusterAddOn{}
			if err := agentA.Get(ctx, client.ObjectKey{Namespace: "flotilla-cluster-iso-a", Name: "iso"}, c); err != nil {
				return err
			}
			c.Spec.InstallNamespace = "kube-system"
			return agentA.Update(ctx, c)
		},
		"write own ClusterAddOn's status": func() error {
			c := &addonv1alpha1.ClusterAddOn{}
			if err := agentA.Get(ctx, client.ObjectKey{Namespace: "flotilla-cluster-iso-a", Name: "iso"}, c); err != nil {
				return err
			}
			return agentA.Status().Update(ctx, c)
		},
		"delete own ClusterAddOn": func() error {
			return agentA.Delete(ctx, &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "iso", Namespace: "flotilla-cluster-iso-a"}})
		},
		"get the other cluster's Lease": func() error {
			return agentA.Get(ctx, client.ObjectKey{Namespace: "flotilla-cluster-iso-b", Name: "iso-b"}, &coordinationv1.Lease{})
		},
		"list Secrets in its namespace": func() error {
			return agentA.List(ctx, &corev1.SecretList{}, client.InNamespace("flotilla-cluster-iso-a"))
		},
		"list Secrets in flotilla-system": func() error {
			return agentA.List(ctx, &corev1.SecretList{}, client.InNamespace("flotilla-system"))
		},
		"get bootstrap token Secrets": func() error { return agentA.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")) },
		"list CSRs":                   func() error { return agentA.List(ctx, &certificatesv1.CertificateSigningRequestList{}) },
	}
	for what, do := range forbidden {
		if err := do(); !apierrors.IsForbidden(err) {
			t.Errorf("agent of iso-a may %s: got %v, want Forbidden", what, err)
		}
	}

	// The hub's own authorizer gave the agent its rights on its Cluster: no ClusterRoleBinding per agent.
	for _, obj := range []client.Object{&rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRole{}} {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "flotilla:agent:iso-a"}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T flotilla:agent:iso-a on a hub that authorizes agents itself: %v, want NotFound", obj, err)
		}
	}
}

// TestHubRemovesAgentClusterRolesOfEarlierVersions: the ClusterRole and ClusterRoleBinding per agent that
// registrations made before the hub authorized agents itself are removed when the hub starts; a binding of
// the same name that a Cluster does not own is left alone.
func TestHubRemovesAgentClusterRolesOfEarlierVersions(t *testing.T) {
	ctx := context.Background()
	cluster, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-rbac"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, cluster) })
	owner := []metav1.OwnerReference{{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}}
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "flotilla:agent:legacy-rbac"}
	earlier := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla:agent:legacy-rbac", OwnerReferences: owner}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flotilla:agent:legacy-rbac", OwnerReferences: owner}, RoleRef: roleRef},
	}
	someoneElses := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flotilla:agent:not-a-cluster"}, RoleRef: roleRef}
	for _, obj := range append(earlier, someoneElses) {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, someoneElses) })

	if err := registration.AuthorizeAgentsInHub(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	for _, obj := range earlier {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s of an earlier registration: %v, want NotFound", obj, obj.GetName(), err)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(someoneElses), someoneElses); err != nil {
		t.Errorf("a ClusterRoleBinding no Cluster owns was removed: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "flotilla:agent", Namespace: clusterv1alpha1.ClusterNamespace("legacy-rbac")}, &rbacv1.RoleBinding{}); err != nil {
		t.Errorf("the agent's RoleBinding in its namespace: %v", err)
	}
}

// clusterStatusFacts is a status apply that sets a Cluster's kubernetesVersion, as a reporter's does.
func clusterStatusFacts(cluster, version string) runtime.ApplyConfiguration {
	return client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1alpha1.GroupVersion.String(), "kind": "Cluster", "metadata": map[string]any{"name": cluster},
		"status": map[string]any{"kubernetesVersion": version},
	}})
}

// TestJoinRejectsBadInput: every way a join can go wrong ends in an error that says what to do.
func TestJoinRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	join(t, env, "taken", "id-original")

	expired := joinRequest(t, env, "late", "id-late")
	expiredID, _, _ := strings.Cut(expired.Token, ".")
	secret, err := env.Kube.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstraputil.BootstrapTokenSecretName(expiredID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(time.Now().Add(-time.Minute).Format(time.RFC3339))
	if _, err := env.Kube.CoreV1().Secrets(metav1.NamespaceSystem).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	bound := joinRequestWith(t, env, "elsewhere", "id-elsewhere", registration.Grant{ClusterName: "elsewhere"})

	tests := []struct {
		name   string
		change func(r *registration.JoinRequest)
		want   string
	}{
		{"wrong CA pin", func(r *registration.JoinRequest) { r.CACertHashes = []string{"sha256:" + strings.Repeat("ab", 32)} }, "does not match --ca-cert-hash"},
		{"malformed CA pin", func(r *registration.JoinRequest) { r.CACertHashes = []string{"md5:1234"} }, "want sha256:<64 hex digits>"},
		{"unknown token", func(r *registration.JoinRequest) { r.Token = "abcdef.0123456789abcdef" }, "rejected the token"},
		{"malformed token", func(r *registration.JoinRequest) { r.Token = "not-a-token" }, "rejected the token"},
		{"expired token", func(r *registration.JoinRequest) { r.Token = expired.Token }, "rejected the token"},
		{"name taken by another cluster", func(r *registration.JoinRequest) { r.ClusterName = "taken" }, `cluster name "taken" is already registered to another cluster`},
		{"invalid cluster name", func(r *registration.JoinRequest) { r.ClusterName = "Bad.Name" }, `cluster name "Bad.Name" is invalid`},
		{"cluster name too long for its namespace", func(r *registration.JoinRequest) { r.ClusterName = strings.Repeat("n", 47) },
			"a cluster name is at most 46 characters"},
		{"token bound to another name", func(r *registration.JoinRequest) { r.Token = bound.Token }, "this token joins only cluster elsewhere, not newcomer"},
		{"certificate longer than the hub grants", func(r *registration.JoinRequest) { r.CertTTL = 800 * time.Hour },
			"asks for a certificate valid 800h0m0s; the hub grants at most 720h0m0s"},
		{"hub unreachable", func(r *registration.JoinRequest) { r.HubURL = "https://127.0.0.1:1" }, "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := joinRequest(t, env, "newcomer", "id-newcomer")
			tt.change(&r)
			// Joining retries an unreachable hub until the context ends.
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			err := registration.Join(ctx, r, registration.NewCredential(t.TempDir()), func(string) {})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("join error = %v, want it to say %q", err, tt.want)
			}
		})
	}

}

// TestCertificateRenewalAndRevocation renews an agent's certificate with the certificate itself, then unjoins
// the cluster: the agent's access and its next renewal are refused.
func TestCertificateRenewalAndRevocation(t *testing.T) {
	ctx := context.Background()
	r := joinRequest(t, env, "renewer", "id-renewer")
	r.CertTTL = 10 * time.Minute // the shortest lifetime the signer grants
	cred := registration.NewCredential(t.TempDir())
	if err := registration.Join(ctx, r, cred, func(string) {}); err != nil {
		t.Fatal(err)
	}
	first, err := cred.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	if life := first.NotAfter.Sub(first.NotBefore); life > 15*time.Minute {
		t.Fatalf("certificate lives %s, asked for 10m", life)
	}
	if err := cred.Renew(ctx, 10*time.Minute); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	renewed, err := cred.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	if renewed.SerialNumber.Cmp(first.SerialNumber) == 0 || renewed.Subject.CommonName != first.Subject.CommonName {
		t.Fatalf("renewal did not issue a new certificate for the same identity")
	}
	agent := agentClient(t, cred)
	if err := agent.Get(ctx, client.ObjectKey{Name: "renewer"}, &clusterv1alpha1.Cluster{}); err != nil {
		t.Fatalf("renewed certificate does not work: %v", err)
	}
	// The hub records when the current agent's certificate expires, for describe cluster.
	testenv.Eventually(t, time.Minute, "the Cluster records the renewed certificate's expiry", func() error {
		cluster := &clusterv1alpha1.Cluster{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "renewer"}, cluster); err != nil {
			return err
		}
		if got, want := cluster.Annotations[clusterv1alpha1.AnnotationAgentCertificateExpires], renewed.NotAfter.UTC().Format(time.RFC3339); got != want {
			return fmt.Errorf("recorded %q, want %q", got, want)
		}
		return nil
	})

	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "renewer"}}
	if err := env.Client.Delete(ctx, cluster, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the unjoined agent loses its access", func() error {
		err := agent.Get(ctx, client.ObjectKey{Name: "renewer"}, &clusterv1alpha1.Cluster{})
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("got %v, want Forbidden", err)
		}
		return nil
	})
	if err := cred.Renew(ctx, 10*time.Minute); err == nil || !strings.Contains(err.Error(), "no longer registered") {
		t.Fatalf("renewal after unjoin: %v, want a denial saying the cluster is no longer registered", err)
	}
}

// TestRequireApproval runs a hub with --require-approval: a join waits until flotilla accept, and a denied
// join ends with the administrator's message. The hub also runs with --dashboard=false (a hub of its own
// costs half a minute, so this one checks that switch too): it serves no dashboard.
func TestRequireApproval(t *testing.T) {
	ctx := context.Background()
	_, hub := startHub(t, "hub-approval", filepath.Join(t.TempDir(), "hub"), freePort(t), "--require-approval", "--dashboard=false")
	expectNoDashboard(t, hub)

	joined := make(chan error, 2)
	for _, name := range []string{"patient", "refused"} {
		// The token allows no labels: an administrator's accept keeps what the join asked for.
		r := joinRequestWith(t, hub, name, "id-"+name, registration.Grant{})
		go func() { joined <- registration.Join(ctx, r, registration.NewCredential(t.TempDir()), func(string) {}) }()
	}
	testenv.Eventually(t, time.Minute, "both joins wait for a decision", func() error {
		for _, name := range []string{"patient", "refused"} {
			csrs := &certificatesv1.CertificateSigningRequestList{}
			if err := hub.Client.List(ctx, csrs, client.MatchingLabels{registration.LabelClusterName: name}); err != nil {
				return err
			}
			if len(csrs.Items) != 1 || len(csrs.Items[0].Status.Conditions) != 0 {
				return fmt.Errorf("%s: %d requests, want one undecided", name, len(csrs.Items))
			}
		}
		return nil
	})
	if err := hub.Client.Get(ctx, client.ObjectKey{Name: "patient"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
		t.Fatalf("cluster created before it was accepted: %v", err)
	}
	if _, err := registration.Decide(ctx, hub.Client, "patient", "", true, "welcome", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := registration.Decide(ctx, hub.Client, "refused", "", false, "not in this fleet", nil); err != nil {
		t.Fatal(err)
	}
	var errs []string
	for range 2 {
		select {
		case err := <-joined:
			errs = append(errs, fmt.Sprint(err))
		case <-time.After(time.Minute):
			t.Fatal("a join did not end after the decision")
		}
	}
	got := strings.Join(errs, " | ")
	if !strings.Contains(got, "<nil>") || !strings.Contains(got, "denied the certificate request (DeniedByAdmin): not in this fleet") {
		t.Fatalf("join results: %s", got)
	}
	patient := &clusterv1alpha1.Cluster{}
	if err := hub.Client.Get(ctx, client.ObjectKey{Name: "patient"}, patient); err != nil {
		t.Fatalf("the accepted cluster does not exist: %v", err)
	}
	if patient.Labels["env"] != "test" || patient.Spec.Region != "eu-west-1" {
		t.Fatalf("accept dropped what the join asked for: labels %v region %q", patient.Labels, patient.Spec.Region)
	}

	// accept --labels narrows what a join asked for, never widens it, and says what it granted.
	narrowed := startJoin(t, joinRequest(t, hub, "narrowed", "id-narrowed"), registration.NewCredential(t.TempDir()))
	waitPending(t, hub, "narrowed", 1)
	if _, err := registration.Decide(ctx, hub.Client, "narrowed", "", true, "", map[string]string{"env": "prod"}); err == nil || !strings.Contains(err.Error(), "did not ask for it") {
		t.Fatalf("accept with a label the join did not ask for: %v, want a refusal", err)
	}
	p := testenv.StartProcess(t, "accept", "accept", "narrowed", "--labels", "", "--kubeconfig", hub.Kubeconfig)
	if err := p.Wait(time.Minute); err != nil {
		t.Fatalf("accept: %v\n%s", err, p.Output())
	}
	if !strings.Contains(p.Output(), "granted: labels -; provider -; region eu-west-1; zones -") {
		t.Fatalf("accept does not say what it granted:\n%s", p.Output())
	}
	if err := <-narrowed; err != nil {
		t.Fatal(err)
	}
	cluster := &clusterv1alpha1.Cluster{}
	if err := hub.Client.Get(ctx, client.ObjectKey{Name: "narrowed"}, cluster); err != nil || len(cluster.Labels) != 0 {
		t.Fatalf("the narrowed cluster: %v, labels %v", err, cluster.Labels)
	}

	// This hub runs without --allow-local-member-endpoints: a Cluster may not point the hub at its own host.
	secretRef := &clusterv1alpha1.LocalSecretReference{Namespace: clusterv1alpha1.SystemNamespace, Name: "cluster-local"}
	for _, endpoint := range []string{"https://127.0.0.1:6443", "https://localhost:6443", "https://[::1]:6443", "https://169.254.169.254"} {
		local := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: endpoint, SecretRef: secretRef}}
		if err := hub.Client.Create(ctx, local, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "loopback or link-local") {
			t.Errorf("a Cluster at %s: %v, want it refused", endpoint, err)
		}
	}
	remote := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "remote"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://member.example.com:6443", SecretRef: secretRef}}
	if err := hub.Client.Create(ctx, remote, client.DryRunAll); err != nil {
		t.Errorf("a Cluster at a remote address: %v", err)
	}

	// A token holder who copies patient's agent user is denied here too: --require-approval opens no path.
	waitDenied(t, hub, fileCopiedJoin(t, hub, "patient", registration.CurrentAgentUser(patient), "id-patient"), "AgentUserTaken")

	// Three members ask for one name and three administrators accept at once: one wins.
	for i := range 3 {
		startJoin(t, joinRequest(t, hub, "contested", fmt.Sprintf("id-contested-%d", i)), registration.NewCredential(t.TempDir()))
	}
	contested := waitPending(t, hub, "contested", 3)
	accepted := make(chan error, len(contested))
	for _, csr := range contested {
		go func() {
			_, err := registration.Decide(ctx, hub.Client, "contested", csr.Name, true, "", nil)
			accepted <- err
		}()
	}
	var won []string
	for range contested {
		if err := <-accepted; err == nil {
			won = append(won, "accepted")
		} else if !strings.Contains(err.Error(), "already registered") && !strings.Contains(err.Error(), "at the same time") &&
			!strings.Contains(err.Error(), "no pending join request") { // the approver denied it first: the name was taken meanwhile
			t.Errorf("a losing accept says: %v", err)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d of %d simultaneous accepts for one name succeeded, want 1", len(won), len(contested))
	}
}

// TestReporterWritesStatusOnlyWhenItChanges reports this test's own control plane as a member: the first
// report writes the status and renews the Lease, the next one renews the Lease and writes nothing.
func TestReporterWritesStatusOnlyWhenItChanges(t *testing.T) {
	ctx := context.Background()
	agent, _ := join(t, env, "self", "id-self")
	// Other controllers write the Cluster too (its Ready and tunnel conditions): what the reporter sends is
	// counted where it leaves.
	counted := &clusterWrites{Client: agent}
	r := &clusterstatus.Reporter{Hub: counted, Member: env.Kube, Cluster: "self", Holder: "agent-self", AgentVersion: "test"}
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatal(err)
	}
	first := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "self"}, first); err != nil {
		t.Fatal(err)
	}
	s := first.Status
	if s.KubernetesVersion == "" || s.Health == nil || s.Health.Readyz != "ok" || len(s.APIEnablements) == 0 || s.ResourceSummary == nil {
		t.Fatalf("incomplete status: %+v", s)
	}
	if !slices.ContainsFunc(s.APIEnablements, func(e clusterv1alpha1.APIEnablement) bool { return e.GroupVersion == "work.flotilla.io/v1alpha1" }) {
		t.Fatal("apiEnablements misses a served group")
	}
	if !meta.IsStatusConditionTrue(s.Conditions, clusterv1alpha1.ClusterConditionAPIsComplete) {
		t.Fatalf("a fully discovered member is not APIsComplete: %+v", s.Conditions)
	}
	// Let the health monitor write its condition before comparing versions.
	testenv.Eventually(t, time.Minute, "self is Ready", func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "self"}, first); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(first.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
			return errors.New("not Ready")
		}
		return nil
	})
	lease := &coordinationv1.Lease{}
	leaseKey := client.ObjectKey{Namespace: "flotilla-cluster-self", Name: "self"}
	if err := env.Client.Get(ctx, leaseKey, lease); err != nil {
		t.Fatal(err)
	}
	if counted.n == 0 {
		t.Fatal("the first report wrote no Cluster: the count below proves nothing")
	}
	if counted.reads == 0 {
		t.Fatal("the first report read nothing from the hub: the count of reads below proves nothing")
	}
	// The health monitor sets the Lease's duration to the hub's grace period (40 s here): the reporter renews
	// every quarter of it. A renewal from the Lease read before that write is refused and made again at once.
	durationIsTheGracePeriod := func() error {
		current := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, leaseKey, current); err != nil {
			return err
		}
		if d := ptr.Deref(current.Spec.LeaseDurationSeconds, 0); d != 40 {
			return fmt.Errorf("leaseDurationSeconds %d, want 40", d)
		}
		return nil
	}
	testenv.Eventually(t, time.Minute, "the hub sets the Lease's duration", durationIsTheGracePeriod)
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Period() != 10*time.Second {
		t.Fatalf("the reporter reports every %s under a grace period of 40 s, want 10s", r.Period())
	}
	if err := env.Client.Get(ctx, leaseKey, lease); err != nil {
		t.Fatal(err)
	}
	// A heartbeat of an unchanged member costs the hub one request, the Lease's renewal, until the reporter
	// reads the Cluster again, StatusRereadEvery (6) reports after it first read it.
	for report := 3; report <= 7; report++ {
		counted.n, counted.reads, counted.writes = 0, 0, 0
		if err := r.ReportOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if counted.n != 0 {
			t.Fatalf("report %d: an unchanged member's Cluster was written again (%d writes)", report, counted.n)
		}
		if counted.writes != 1 {
			t.Fatalf("report %d: %d writes, want 1 (the Lease's renewal)", report, counted.writes)
		}
		wantReads := 0
		if report == 1+clusterstatus.StatusRereadEvery {
			wantReads = 1 // the Cluster, read again
		}
		if counted.reads != wantReads {
			t.Fatalf("report %d: %d reads from the hub, want %d", report, counted.reads, wantReads)
		}
	}
	renewed := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, leaseKey, renewed); err != nil {
		t.Fatal(err)
	}
	if !renewed.Spec.RenewTime.After(lease.Spec.RenewTime.Time) {
		t.Fatal("the Lease was not renewed")
	}
	// A Lease changed behind the reporter's back is read again and renewed in the same report.
	renewed.Spec.HolderIdentity = ptr.To("someone-else")
	if err := env.Client.Update(ctx, renewed); err != nil {
		t.Fatal(err)
	}
	counted.reads, counted.writes = 0, 0
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatalf("renewing a Lease changed since: %v", err)
	}
	if counted.reads != 1 || counted.writes != 2 {
		t.Fatalf("renewing a Lease changed since: %d reads and %d writes, want 1 and 2 (refused, read, renewed)", counted.reads, counted.writes)
	}
	if err := env.Client.Get(ctx, leaseKey, renewed); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(renewed.Spec.HolderIdentity, "") != "agent-self" {
		t.Fatalf("the Lease is held by %q after the report, want agent-self", ptr.Deref(renewed.Spec.HolderIdentity, ""))
	}
	// A duration someone else set is put back by the health monitor, whose grace period is 40 s.
	renewed.Spec.LeaseDurationSeconds = ptr.To[int32](160)
	if err := env.Client.Update(ctx, renewed); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the hub sets the Lease's duration back", durationIsTheGracePeriod)
}

// clusterWrites counts the requests a client makes: n the writes of Cluster objects and their status,
// writes all writes, reads all reads of single objects.
type clusterWrites struct {
	client.Client
	n, writes, reads int
}

func (c *clusterWrites) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *clusterWrites) count(obj any) {
	c.writes++
	if _, ok := obj.(*clusterv1alpha1.Cluster); ok {
		c.n++
	}
}

func (c *clusterWrites) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.count(obj)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *clusterWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.count(obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *clusterWrites) Status() client.SubResourceWriter {
	return &clusterStatusWrites{SubResourceWriter: c.Client.Status(), writes: c}
}

type clusterStatusWrites struct {
	client.SubResourceWriter
	writes *clusterWrites
}

func (s *clusterStatusWrites) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.writes.count(obj)
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

func (s *clusterStatusWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.writes.count(obj)
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (s *clusterStatusWrites) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	s.writes.n++ // the reporter applies only its Cluster's status
	s.writes.writes++
	return s.SubResourceWriter.Apply(ctx, obj, opts...)
}

// TestPushJoinOfUnreachableMember: flotilla join --mode push fails at once, saying the member is unreachable.
func TestPushJoinOfUnreachableMember(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "member.kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["gone"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.AuthInfos["gone"] = &clientcmdapi.AuthInfo{Token: "x"}
	cfg.Contexts["gone"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: "gone"}
	cfg.CurrentContext = "gone"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	p := testenv.StartProcess(t, "join-push", "join", "--mode", "push", "--cluster-name", "gone",
		"--cluster-kubeconfig", kubeconfig, "--kubeconfig", env.Kubeconfig)
	if err := p.Wait(time.Minute); err == nil {
		t.Fatalf("push join of an unreachable member succeeded:\n%s", p.Output())
	}
	if !strings.Contains(p.Output(), "member cluster unreachable") {
		t.Fatalf("push join did not say the member is unreachable:\n%s", p.Output())
	}
}
