package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// startJoin runs a join in the background; it ends with the test.
func startJoin(t *testing.T, r registration.JoinRequest, cred registration.Credential) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- registration.Join(ctx, r, cred, func(string) {}) }()
	return done
}

// waitPending waits until cluster has n undecided join requests and returns them.
func waitPending(t *testing.T, hub *testenv.Env, cluster string, n int) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	var pending []certificatesv1.CertificateSigningRequest
	testenv.Eventually(t, time.Minute, fmt.Sprintf("%d join requests for %s wait", n, cluster), func() error {
		list := &certificatesv1.CertificateSigningRequestList{}
		if err := hub.Client.List(context.Background(), list, client.MatchingLabels{registration.LabelClusterName: cluster}); err != nil {
			return err
		}
		pending = slices.DeleteFunc(list.Items, func(c certificatesv1.CertificateSigningRequest) bool { return len(c.Status.Conditions) > 0 })
		if len(pending) != n {
			return fmt.Errorf("%d undecided", len(pending))
		}
		return nil
	})
	return pending
}

// waitEvent waits for an event with reason about the object named regarding.
func waitEvent(t *testing.T, hub *testenv.Env, regarding, reason string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "event "+reason+" about "+regarding, func() error {
		events, err := hub.Kube.EventsV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "regarding.name=" + regarding})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event among %d", reason, len(events.Items))
	})
}

// TestRejoinOfRegisteredNameNeedsAccept: a join that presents a registered name and its (not secret) cluster
// ID is never approved by itself; it waits, the registered agent keeps its rights, and accept with two such
// requests refuses and lists them. An accepted re-registration takes the identity from the old agent.
func TestRejoinOfRegisteredNameNeedsAccept(t *testing.T) {
	ctx := context.Background()
	oldAgent, oldCred := join(t, env, "owned", "id-owned")
	oldUser, err := oldCred.User()
	if err != nil {
		t.Fatal(err)
	}

	// A second token holder copies the registered cluster ID.
	newCred := registration.NewCredential(t.TempDir())
	copycat := startJoin(t, joinRequest(t, env, "owned", "id-owned"), newCred)
	first := waitPending(t, env, "owned", 1)[0]
	waitEvent(t, env, first.Name, "AwaitingAcceptance")
	cluster := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "owned"}, cluster); err != nil {
		t.Fatal(err)
	}
	if registration.CurrentAgentUser(cluster) != oldUser {
		t.Fatalf("a waiting join changed the Cluster's agent to %s", registration.CurrentAgentUser(cluster))
	}
	if err := oldAgent.Get(ctx, client.ObjectKey{Name: "owned"}, &clusterv1alpha1.Cluster{}); err != nil {
		t.Fatalf("the registered agent lost its access to a waiting join: %v", err)
	}
	select {
	case err := <-copycat:
		t.Fatalf("the copied-ID join ended without a decision: %v", err)
	default:
	}

	second := startJoin(t, joinRequest(t, env, "owned", "id-owned"), registration.NewCredential(t.TempDir()))
	pending := waitPending(t, env, "owned", 2)
	_, err = registration.Decide(ctx, env.Client, "owned", "", true, "", nil)
	if err == nil {
		t.Fatal("accept chose one of two pending requests by itself")
	}
	for _, want := range []string{"2 pending join requests", pending[0].Name, pending[1].Name, `cluster ID "id-owned"`, "system:bootstrap:", `labels "env=test"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("accept's refusal does not mention %q:\n%v", want, err)
		}
	}
	if _, err := registration.Decide(ctx, env.Client, "owned", first.Name, true, "welcome back", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := registration.Decide(ctx, env.Client, "owned", "", false, "one is enough", nil); err != nil {
		t.Fatal(err)
	}
	for name, done := range map[string]<-chan error{"accepted": copycat, "denied": second} {
		select {
		case err := <-done:
			if (name == "accepted") != (err == nil) {
				t.Errorf("the %s join ended with %v", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("the %s join did not end", name)
		}
	}
	if err := agentClient(t, newCred).Get(ctx, client.ObjectKey{Name: "owned"}, &clusterv1alpha1.Cluster{}); err != nil {
		t.Fatalf("the accepted agent has no access: %v", err)
	}
	testenv.Eventually(t, time.Minute, "the replaced agent loses its access", func() error {
		if err := oldAgent.Get(ctx, client.ObjectKey{Name: "owned"}, &clusterv1alpha1.Cluster{}); !apierrors.IsForbidden(err) {
			return fmt.Errorf("got %v, want Forbidden", err)
		}
		return nil
	})
	if err := oldCred.Renew(ctx, time.Hour); err == nil || !strings.Contains(err.Error(), "earlier registration") {
		t.Fatalf("renewal by the replaced agent: %v, want a denial naming the earlier registration", err)
	}
}

// TestUnjoinedRegistrationStaysRevoked: after unjoin, the approved join request does not bring the Cluster
// back, and after another member registers the name, the first agent's certificate has no rights and
// cannot renew.
func TestUnjoinedRegistrationStaysRevoked(t *testing.T) {
	ctx := context.Background()
	firstAgent, firstCred := join(t, env, "gen", "id-first")
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := env.Client.List(ctx, list, client.MatchingLabels{registration.LabelClusterName: "gen"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("want the one join request of gen: %v %d", err, len(list.Items))
	}
	joinCSR := list.Items[0]

	if err := env.Client.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "gen"}}, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "gen and its namespace are gone", func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "gen"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster: %v", err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.ClusterNamespace("gen")}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace: %v", err)
		}
		return nil
	})
	// The approver sees the approved join request again, as after a hub restart.
	patch := client.MergeFrom(joinCSR.DeepCopy())
	joinCSR.Annotations["test.flotilla.io/touched"] = "true"
	if err := env.Client.Patch(ctx, &joinCSR, patch); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "gen"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the unjoined cluster came back from its old join request: %v", err)
		}
	}

	secondAgent, _ := join(t, env, "gen", "id-second")
	if err := secondAgent.Get(ctx, client.ObjectKey{Name: "gen"}, &clusterv1alpha1.Cluster{}); err != nil {
		t.Fatalf("the new registration's agent has no access: %v", err)
	}
	if err := firstAgent.Get(ctx, client.ObjectKey{Name: "gen"}, &clusterv1alpha1.Cluster{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the first registration's agent reads the re-registered cluster: %v, want Forbidden", err)
	}
	if err := firstCred.Renew(ctx, time.Hour); err == nil || !strings.Contains(err.Error(), "earlier registration") {
		t.Fatalf("renewal by the first registration's agent: %v, want a denial naming the earlier registration", err)
	}
}

// TestTokenRights: a token holder may not list or watch join requests; a single-use token is spent by its
// first join; a token holds at most three joins waiting for accept (a registered name makes them wait).
func TestTokenRights(t *testing.T) {
	ctx := context.Background()
	once := testGrant
	once.SingleUse = true
	r := joinRequestWith(t, env, "once-a", "id-once-a", once)
	holder, err := kubernetes.NewForConfig(&rest.Config{Host: env.Config.Host, BearerToken: r.Token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the token holder may not list or watch CSRs", func() error {
		csrs := holder.CertificatesV1().CertificateSigningRequests()
		if _, err := csrs.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			return fmt.Errorf("list: %v, want Forbidden", err)
		}
		if _, err := csrs.Watch(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			return fmt.Errorf("watch: %v, want Forbidden", err)
		}
		return nil
	})

	if err := registration.Join(ctx, r, registration.NewCredential(t.TempDir()), func(string) {}); err != nil {
		t.Fatal(err)
	}
	id, _, _ := strings.Cut(r.Token, ".")
	testenv.Eventually(t, time.Minute, "the single-use token is deleted", func() error {
		_, err := env.Kube.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("token Secret: %v", err)
		}
		return nil
	})
	again := r
	again.ClusterName = "once-b"
	short, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := registration.Join(short, again, registration.NewCredential(t.TempDir()), func(string) {}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("second join with a single-use token: %v, want it refused for the token", err)
	}

	// Four joins for a registered name with one token: three wait, the fourth is denied.
	join(t, env, "crowded", "id-crowded")
	crowd := joinRequest(t, env, "crowded", "id-crowded")
	results := make(chan error, 4)
	for range 4 {
		done := startJoin(t, crowd, registration.NewCredential(t.TempDir()))
		go func() { results <- <-done }()
	}
	select {
	case err := <-results:
		if err == nil || !strings.Contains(err.Error(), "TooManyPendingRequests") {
			t.Fatalf("a join beyond the limit ended with %v, want TooManyPendingRequests", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no join beyond the limit was denied")
	}
	waitPending(t, env, "crowded", registration.MaxPendingJoinsPerToken)
	if _, err := registration.Decide(ctx, env.Client, "crowded", "", false, "no", nil); err != nil {
		t.Fatal(err)
	}
}

// TestJoinDropsWhatTheTokenDoesNotAllow: labels and location a join asks for and its token does not allow
// are dropped, and describe cluster says so; an event the agent writes is shown as the agent's, not the
// hub's.
func TestJoinDropsWhatTheTokenDoesNotAllow(t *testing.T) {
	ctx := context.Background()
	cred := registration.NewCredential(t.TempDir())
	if err := registration.Join(ctx, joinRequestWith(t, env, "narrow", "id-narrow", registration.Grant{}), cred, func(string) {}); err != nil {
		t.Fatal(err)
	}
	cluster := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "narrow"}, cluster); err != nil {
		t.Fatal(err)
	}
	if cluster.Labels["env"] != "" || cluster.Spec.Region != "" {
		t.Fatalf("the join claimed what its token does not allow: labels %v region %q", cluster.Labels, cluster.Spec.Region)
	}
	if got := cluster.Annotations[clusterv1alpha1.AnnotationJoinDropped]; got != "labels env=test; region eu-west-1" {
		t.Fatalf("dropped = %q", got)
	}
	waitEvent(t, env, "narrow", "JoinRequestNarrowed")

	agent := agentClient(t, cred)
	forged := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "forged-", Namespace: clusterv1alpha1.ClusterNamespace("narrow")},
		EventTime:  metav1.NowMicro(), ReportingController: "flotilla-cluster-health", ReportingInstance: "hub", Action: "HealthChanged",
		Reason: "AllClear", Note: "the hub says all is well", Type: corev1.EventTypeNormal,
		// An event about a cluster-scoped object may only be written in default; the agent names its own
		// namespace in the reference to write one anywhere near the Cluster.
		Regarding: corev1.ObjectReference{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Cluster", Name: "narrow", Namespace: clusterv1alpha1.ClusterNamespace("narrow")},
	}
	if err := agent.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	p := testenv.StartProcess(t, "describe", "describe", "cluster", "narrow", "--kubeconfig", env.Kubeconfig)
	if err := p.Wait(time.Minute); err != nil {
		t.Fatalf("describe: %v\n%s", err, p.Output())
	}
	out := p.Output()
	if !strings.Contains(out, "Dropped at join:") || !strings.Contains(out, "labels env=test; region eu-west-1") {
		t.Errorf("describe does not show what the join dropped:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "AllClear") && (!strings.Contains(line, "agent of narrow") || strings.Contains(line, "hub  ")):
			t.Errorf("the agent's event reads as the hub's: %q", line)
		case strings.Contains(line, "JoinRequestNarrowed") && !strings.Contains(line, "hub"):
			t.Errorf("the hub's event is not marked as the hub's: %q", line)
		}
	}
	if !strings.Contains(out, "AllClear") || !strings.Contains(out, "JoinRequestNarrowed") {
		t.Errorf("describe misses an event:\n%s", out)
	}
}

// fileCopiedJoin files, with a fresh token of hub, a join request whose certificate names user, the way a
// token holder who read user off a Cluster would. It returns the request's name.
func fileCopiedJoin(t *testing.T, hub *testenv.Env, cluster, user, clusterID string) string {
	t.Helper()
	ctx := context.Background()
	token, err := registration.CreateToken(ctx, hub.Kube, time.Hour, "test", registration.Grant{})
	if err != nil {
		t.Fatal(err)
	}
	holder, err := kubernetes.NewForConfig(&rest.Config{Host: hub.Config.Host, BearerToken: token.String(), TLSClientConfig: rest.TLSClientConfig{CAData: hub.Config.CAData}})
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{registration.AgentGroup}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "copycat-", Labels: map[string]string{registration.LabelClusterName: cluster},
			Annotations: map[string]string{registration.AnnotationClusterID: clusterID}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName, ExpirationSeconds: ptr.To(int32(3600)),
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature},
		},
	}
	var created *certificatesv1.CertificateSigningRequest
	testenv.Eventually(t, time.Minute, "the token holder files a request", func() error {
		created, err = holder.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		return err
	})
	return created.Name
}

// waitDenied waits until the CSR name is denied for reason, and checks that it was never approved nor signed.
func waitDenied(t *testing.T, hub *testenv.Env, name, reason string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "request "+name+" is denied", func() error {
		csr := &certificatesv1.CertificateSigningRequest{}
		if err := hub.Client.Get(context.Background(), client.ObjectKey{Name: name}, csr); err != nil {
			return err
		}
		for _, c := range csr.Status.Conditions {
			switch {
			case c.Type == certificatesv1.CertificateApproved || len(csr.Status.Certificate) > 0:
				t.Fatalf("request %s was approved (%s)", name, c.Reason)
			case c.Type == certificatesv1.CertificateDenied && c.Reason == reason:
				return nil
			}
		}
		return fmt.Errorf("conditions %v", csr.Status.Conditions)
	})
}

// TestJoinCannotFinishAnotherRegistration: a token holder who copies a registered cluster's agent user (and
// its cluster ID) into a join request is denied, and gets no certificate; the real agent keeps its identity
// and renews. (TestRequireApproval shows the same on a hub with --require-approval.)
func TestJoinCannotFinishAnotherRegistration(t *testing.T) {
	ctx := context.Background()
	agent, cred := join(t, env, "victim", "id-victim")
	cluster := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "victim"}, cluster); err != nil {
		t.Fatal(err)
	}
	user := registration.CurrentAgentUser(cluster)
	for _, key := range []string{clusterv1alpha1.AnnotationRegistrationRequest, clusterv1alpha1.AnnotationAgentKey} {
		if cluster.Annotations[key] == "" {
			t.Errorf("the Cluster does not record %s", key)
		}
	}

	waitDenied(t, env, fileCopiedJoin(t, env, "victim", user, "id-victim"), "AgentUserTaken")
	if err := agent.Get(ctx, client.ObjectKey{Name: "victim"}, &clusterv1alpha1.Cluster{}); err != nil {
		t.Fatalf("the registered agent lost its access: %v", err)
	}
	if err := cred.Renew(ctx, time.Hour); err != nil {
		t.Fatalf("the registered agent cannot renew: %v", err)
	}
}

// TestClusterCredentialsAreAdminOnly: a user who may patch Clusters (to taint and label them) may not change
// where the hub sends a member's traffic nor which agent a Cluster trusts, nor create a Cluster that says so,
// nor move it between ClusterSets without create on clustersets/join for both sets;
// the hub's administrators may.
func TestClusterCredentialsAreAdminOnly(t *testing.T) {
	ctx := context.Background()
	join(t, env, "guarded", "id-guarded")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-operator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, Resources: []string{"clusters"}, Verbs: []string{"get", "patch", "update", "create"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-operator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "operator"}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "operator"}
	operator, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(c client.Client, body string, opts ...client.PatchOption) error {
		return c.Patch(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}}, client.RawPatch(types.MergePatchType, []byte(body)), opts...)
	}
	testenv.Eventually(t, time.Minute, "the operator may label and taint", func() error {
		return patch(operator, `{"metadata":{"labels":{"tier":"gold"}},"spec":{"taints":[{"key":"maintenance","effect":"NoSchedule"}]}}`)
	})
	for field, body := range map[string]string{
		"spec.apiEndpoint":                            `{"spec":{"apiEndpoint":"https://attacker.example.com"}}`,
		"spec.proxyURL":                               `{"spec":{"proxyURL":"http://attacker.example.com:3128"}}`,
		"spec.insecureSkipTLSVerification":            `{"spec":{"insecureSkipTLSVerification":true}}`,
		"spec.secretRef":                              `{"spec":{"secretRef":{"namespace":"flotilla-system","name":"cluster-other"}}}`,
		"spec.id":                                     `{"spec":{"id":"another"}}`,
		clusterv1alpha1.AnnotationAgentUser:           `{"metadata":{"annotations":{"flotilla.io/agent-user":"system:flotilla:agent:guarded:mine0000000000000000"}}}`,
		clusterv1alpha1.AnnotationRegistrationRequest: `{"metadata":{"annotations":{"flotilla.io/registration-request":"my-csr-uid"}}}`,
	} {
		err := patch(operator, body)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "hub's administrators") {
			t.Errorf("the operator changed %s: %v, want Forbidden", field, err)
		}
		if err := patch(env.Client, body, client.DryRunAll); err != nil {
			t.Errorf("the administrator may not change %s: %v", field, err)
		}
	}
	// The deregistration mode is for who may delete the Cluster, not for who may only patch it.
	deleteMode := `{"metadata":{"annotations":{"cluster.flotilla.io/unjoin":"DeleteResources"}}}`
	if err := patch(operator, deleteMode); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only who may delete the Cluster") {
		t.Errorf("the operator, who may not delete Clusters, set the deregistration mode: %v, want Forbidden", err)
	}
	if err := patch(env.Client, deleteMode, client.DryRunAll); err != nil {
		t.Errorf("the administrator may not set the deregistration mode: %v", err)
	}
	// Moving the cluster between ClusterSets hands it to other namespaces: create on clustersets/join for the
	// set it leaves (default, here) and the set it joins.
	intoPCI := `{"metadata":{"labels":{"cluster.flotilla.io/clusterset":"pci"}}}`
	if err := patch(operator, intoPCI); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "clustersets/join") {
		t.Errorf("the operator moved the cluster into set pci without join rights: %v, want Forbidden", err)
	}
	joinRole := func(name string, sets ...string) {
		t.Helper()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, Resources: []string{clusterv1alpha1.ResourceClusterSetsJoin}, ResourceNames: sets, Verbs: []string{"create"}}}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "operator"}}}
		for _, o := range []client.Object{role, binding} {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	joinRole("cluster-operator-join-pci", "pci")
	if err := patch(operator, intoPCI, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("the operator moved the cluster out of default with join rights on pci only: %v, want Forbidden", err)
	}
	joinRole("cluster-operator-join-default", clusterv1alpha1.ClusterSetDefault)
	testenv.Eventually(t, time.Minute, "the operator with join rights on default and pci moves the cluster", func() error {
		return patch(operator, intoPCI, client.DryRunAll)
	})
	if err := patch(operator, `{"metadata":{"labels":{"cluster.flotilla.io/clusterset":"prod"}}}`, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("the operator moved the cluster into set prod without join rights on it: %v, want Forbidden", err)
	}
	created := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "planted"},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://attacker.example.com",
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: clusterv1alpha1.SystemNamespace, Name: "cluster-guarded"}}}
	if err := operator.Create(ctx, created); !apierrors.IsForbidden(err) {
		t.Errorf("the operator created a Cluster with an endpoint and a Secret: %v, want Forbidden", err)
	}
}

// TestAnonymousGetsOnlyHealthVersionAndClusterInfo: without credentials the hub answers its health, its
// version and the cluster-info joining agents read, and refuses everything else as unauthenticated, even
// what RBAC grants system:unauthenticated.
func TestAnonymousGetsOnlyHealthVersionAndClusterInfo(t *testing.T) {
	ctx := context.Background()
	// An administrator's slip: discovery and a ConfigMap granted to everyone, authenticated or not.
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "anonymous-slip"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:discovery"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:unauthenticated"}}})
	anonymous := rest.AnonymousClientConfig(env.Config)
	kube := kubernetes.NewForConfigOrDie(anonymous)
	for _, path := range []string{"/livez", "/readyz", "/version", "/api/v1/namespaces/" + registration.ClusterInfoNamespace + "/configmaps/" + registration.ClusterInfoName} {
		if err := kube.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Error(); err != nil {
			t.Errorf("anonymous GET %s: %v", path, err)
		}
	}
	for _, path := range []string{"/healthz", "/api", "/apis", "/openapi/v2", "/api/v1/namespaces/kube-public/configmaps"} {
		err := kube.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Error()
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("anonymous GET %s: %v, want 401", path, err)
		}
	}
}
