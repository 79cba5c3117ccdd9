package integration

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// addOnConfigMapRole is the ClusterRole the test add-ons' CurrentCluster permission binds: ConfigMaps.
const addOnConfigMapRole = "test-addon-configmaps"

// testAddOn creates an AddOn named name, with a registration whose CurrentCluster permission binds
// addOnConfigMapRole when registered, and deletes it at the end of the test.
func testAddOn(t *testing.T, name string, registered bool) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: addOnConfigMapRole}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update", "delete"}}}}
	if err := env.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	addon := &addonv1alpha1.AddOn{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: addonv1alpha1.AddOnSpec{
		Template: addonv1alpha1.AddOnTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}}}},
	}}
	if registered {
		addon.Spec.Registration = &addonv1alpha1.Registration{HubPermissions: []addonv1alpha1.HubPermission{{
			Type: addonv1alpha1.PermissionCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterPermission{ClusterRoleName: addOnConfigMapRole}}}}
	}
	if err := env.Client.Create(ctx, addon); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), addon) })
}

// enableAddOn creates the ClusterAddOn of addon on cluster (unless it exists) with installNamespace as its
// install namespace, and waits until the hub's add-on controllers report that namespace and its agent's
// registration in its status (addon must be registered when installNamespace is given).
func enableAddOn(t *testing.T, addon, cluster, installNamespace string) *addonv1alpha1.ClusterAddOn {
	t.Helper()
	ctx := context.Background()
	enabled := &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: addon, Namespace: clusterv1alpha1.ClusterNamespace(cluster),
		Labels: map[string]string{addonv1alpha1.LabelAddOn: addon}}, Spec: addonv1alpha1.ClusterAddOnSpec{InstallNamespace: installNamespace}}
	if err := env.Client.Create(ctx, enabled); apierrors.IsAlreadyExists(err) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(enabled), enabled); err != nil {
				return err
			}
			enabled.Spec.InstallNamespace = installNamespace
			return env.Client.Update(ctx, enabled)
		})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	} else {
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), enabled) })
	}
	if installNamespace == "" {
		return enabled
	}
	testenv.Eventually(t, time.Minute, "the ClusterAddOn's install namespace and registration reported", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(enabled), enabled); err != nil {
			return err
		}
		if enabled.Status.Namespace != installNamespace || len(enabled.Status.Registrations) == 0 {
			return fmt.Errorf("namespace %q, registrations %v", enabled.Status.Namespace, enabled.Status.Registrations)
		}
		return nil
	})
	return enabled
}

// bindAddOn binds addOnConfigMapRole to addon's agent on cluster in its cluster namespace, as the add-on
// controllers do for a CurrentCluster permission, and returns the binding.
func bindAddOn(t *testing.T, addon, cluster string) *rbacv1.RoleBinding {
	t.Helper()
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-" + addon, Namespace: clusterv1alpha1.ClusterNamespace(cluster), Labels: map[string]string{addonv1alpha1.LabelAddOn: addon}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: addOnConfigMapRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: addonv1alpha1.AgentUser(addon, cluster)}},
	}
	if err := env.Client.Create(context.Background(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
	return binding
}

// requestAddOnCredential files, as cred's agent, the CSR of addon's agent on cluster and returns the
// credential, or the hub's denial.
func requestAddOnCredential(t *testing.T, cred registration.Credential, addon, cluster string, ttl time.Duration) ([]byte, error) {
	t.Helper()
	cfg, err := cred.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return registration.RequestAddOnCredential(ctx, kube, addon, cluster, cfg.Host, cfg.CAData, ttl)
}

// kubeconfigClient is a client of the hub with the credential kubeconfig.
func kubeconfigClient(t *testing.T, kubeconfig []byte) client.Client {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAddOnCertificateApproval: the hub approves the certificate of an add-on's agent on a cluster only when
// the cluster's own agent asks, for an add-on enabled there that has a registration, for a day at most.
func TestAddOnCertificateApproval(t *testing.T) {
	_, credA := join(t, env, "aoid-a", "id-aoid-a")
	_, credB := join(t, env, "aoid-b", "id-aoid-b")
	testAddOn(t, "aoid-reg", true)
	testAddOn(t, "aoid-noreg", false)
	enableAddOn(t, "aoid-reg", "aoid-a", "")
	enableAddOn(t, "aoid-noreg", "aoid-a", "")

	kubeconfig, err := requestAddOnCredential(t, credA, "aoid-reg", "aoid-a", time.Hour)
	if err != nil {
		t.Fatalf("the agent of aoid-a asking for add-on aoid-reg, enabled there: %v", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != addonv1alpha1.AgentUser("aoid-reg", "aoid-a") ||
		len(u.Groups) == 0 || u.Groups[0] != addonv1alpha1.AgentGroup("aoid-reg") {
		t.Fatalf("the add-on credential authenticates as %s %v", u.Username, u.Groups)
	}

	denied := []struct {
		what                  string
		cred                  registration.Credential
		addon, cluster, since string
		ttl                   time.Duration
	}{
		{"another cluster's agent", credB, "aoid-reg", "aoid-a", "NotClusterRequester", time.Hour},
		{"an add-on not enabled on the cluster", credB, "aoid-reg", "aoid-b", "AddOnNotEnabled", time.Hour},
		{"an add-on without registration", credA, "aoid-noreg", "aoid-a", "NoRegistration", time.Hour},
		{"an add-on that does not exist", credA, "aoid-none", "aoid-a", "AddOnNotEnabled", time.Hour},
		{"a certificate for more than a day", credA, "aoid-reg", "aoid-a", "CertificateLifetime", 25 * time.Hour},
	}
	for _, d := range denied {
		_, err := requestAddOnCredential(t, d.cred, d.addon, d.cluster, d.ttl)
		if !errors.Is(err, registration.ErrDenied) || !strings.Contains(err.Error(), "("+d.since+")") {
			t.Errorf("%s: %v, want a denial (%s)", d.what, err, d.since)
		}
	}
}

// TestAddOnIdentityIsScopedToItsCluster: an add-on agent's certificate has the rights of its add-on's
// permission in its own cluster's namespace and nothing else: not another cluster's namespace, not Works,
// Clusters, Leases or CSRs. Once the add-on is disabled (its ClusterAddOn and bindings gone) the certificate
// still authenticates but has no rights left, and no new one is approved.
func TestAddOnIdentityIsScopedToItsCluster(t *testing.T) {
	ctx := context.Background()
	_, credA := join(t, env, "aoscope-a", "id-aoscope-a")
	join(t, env, "aoscope-b", "id-aoscope-b")
	testAddOn(t, "aoscope", true)
	enabled := enableAddOn(t, "aoscope", "aoscope-a", "")
	binding := bindAddOn(t, "aoscope", "aoscope-a")
	kubeconfig, err := requestAddOnCredential(t, credA, "aoscope", "aoscope-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	addOnAgent := kubeconfigClient(t, kubeconfig)
	nsA, nsB := clusterv1alpha1.ClusterNamespace("aoscope-a"), clusterv1alpha1.ClusterNamespace("aoscope-b")
	configMap := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
	}
	if err := addOnAgent.Create(ctx, configMap(nsA, "written-by-addon")); err != nil {
		t.Fatalf("the add-on agent cannot write a ConfigMap in its cluster's namespace: %v", err)
	}
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: nsA, Labels: ownedWorkLabels(t, nsA, "w", nil)}}
	if err := env.Client.Create(ctx, work); err != nil {
		t.Fatal(err)
	}
	forbidden := map[string]func() error{
		"write a ConfigMap in another cluster's namespace": func() error { return addOnAgent.Create(ctx, configMap(nsB, "written-by-addon")) },
		"read ConfigMaps of another cluster's namespace":   func() error { return addOnAgent.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(nsB)) },
		"list its cluster's Works":                         func() error { return addOnAgent.List(ctx, &workv1alpha1.WorkList{}, client.InNamespace(nsA)) },
		"get its cluster's Work": func() error {
			return addOnAgent.Get(ctx, client.ObjectKeyFromObject(work), &workv1alpha1.Work{})
		},
		"create a Work": func() error {
			return addOnAgent.Create(ctx, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: nsA}})
		},
		"get its Cluster": func() error {
			return addOnAgent.Get(ctx, client.ObjectKey{Name: "aoscope-a"}, &clusterv1alpha1.Cluster{})
		},
		"list Clusters": func() error { return addOnAgent.List(ctx, &clusterv1alpha1.ClusterList{}) },
		"get its Lease": func() error {
			return addOnAgent.Get(ctx, client.ObjectKey{Namespace: nsA, Name: "aoscope-a"}, &coordinationv1.Lease{})
		},
		"list ClusterAddOns": func() error {
			return addOnAgent.List(ctx, &addonv1alpha1.ClusterAddOnList{}, client.InNamespace(nsA))
		},
		"list CSRs": func() error { return addOnAgent.List(ctx, &certificatesv1.CertificateSigningRequestList{}) },
		"file a CSR": func() error {
			_, err := requestAddOnCredentialAs(ctx, kubeconfig, "aoscope", "aoscope-a")
			return err
		},
		"approve a CSR": func() error {
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "aoscope"}}
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
			return addOnAgent.SubResource("approval").Update(ctx, csr)
		},
		"list Secrets in its cluster's namespace": func() error {
			return addOnAgent.List(ctx, &corev1.SecretList{}, client.InNamespace(nsA))
		},
	}
	for what, do := range forbidden {
		if err := do(); !apierrors.IsForbidden(err) {
			t.Errorf("the add-on agent of aoscope-a may %s: got %v, want Forbidden", what, err)
		}
	}

	// Disabling: the ClusterAddOn goes, and with it (the add-on controllers' part) the bindings.
	if err := env.Client.Delete(ctx, enabled); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the disabled add-on's agent loses its rights", func() error {
		if err := addOnAgent.Create(ctx, configMap(nsA, "after-disable")); !apierrors.IsForbidden(err) {
			return fmt.Errorf("writing a ConfigMap in its cluster's namespace: %v, want Forbidden", err)
		}
		return nil
	})
	if _, err := requestAddOnCredential(t, credA, "aoscope", "aoscope-a", time.Hour); !errors.Is(err, registration.ErrDenied) ||
		!strings.Contains(err.Error(), "(AddOnNotEnabled)") {
		t.Fatalf("a certificate for the disabled add-on: %v, want a denial (AddOnNotEnabled)", err)
	}
}

// requestAddOnCredentialAs files the CSR of addon's agent on cluster with the credential kubeconfig.
func requestAddOnCredentialAs(ctx context.Context, kubeconfig []byte, addon, cluster string) ([]byte, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return registration.RequestAddOnCredential(ctx, kube, addon, cluster, cfg.Host, cfg.CAData, time.Hour)
}

// credentialSecret reads the credential Secret of addon in namespace of the test hub (the member here).
func credentialSecret(ctx context.Context, addon, namespace string) (*corev1.Secret, error) {
	return env.Kube.CoreV1().Secrets(namespace).Get(ctx, addonv1alpha1.CredentialSecretName(addon), metav1.GetOptions{})
}

// checkCredentialWorks checks that the credential Secret of addon on cluster in namespace holds a kubeconfig
// that writes a ConfigMap in the cluster's namespace on the hub.
func checkCredentialWorks(t *testing.T, addon, cluster, namespace string) {
	t.Helper()
	ctx := context.Background()
	var secret *corev1.Secret
	testenv.Eventually(t, time.Minute, "the credential Secret in the install namespace", func() (err error) {
		secret, err = credentialSecret(ctx, addon, namespace)
		return err
	})
	testenv.Eventually(t, 30*time.Second, "an event on the ClusterAddOn says where its credential is", func() error {
		list, err := env.Kube.EventsV1().Events(clusterv1alpha1.ClusterNamespace(cluster)).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "ClusterAddOn" && e.Regarding.Name == addon && e.Reason == registration.ReasonCredentialIssued &&
				strings.Contains(e.Note, namespace+"/"+addonv1alpha1.CredentialSecretName(addon)) {
				return nil
			}
		}
		return fmt.Errorf("no %s event on ClusterAddOn %s", registration.ReasonCredentialIssued, addon)
	})
	c := kubeconfigClient(t, secret.Data[addonv1alpha1.CredentialSecretKey])
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-with-secret", Namespace: clusterv1alpha1.ClusterNamespace(cluster)}}
	testenv.Eventually(t, 30*time.Second, "the credential writes a ConfigMap in its cluster's namespace", func() error {
		return client.IgnoreAlreadyExists(c.Create(ctx, cm))
	})
}

// credentialCertificate returns the certificate in the credential Secret of addon in namespace.
func credentialCertificate(t *testing.T, addon, namespace string) *x509.Certificate {
	t.Helper()
	secret, err := credentialSecret(context.Background(), addon, namespace)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[addonv1alpha1.CredentialSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.ParseCertsPEM(cfg.CertData)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// memberNamespace creates namespace name in the test hub, the member of these tests.
func memberNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
}

// TestAgentKeepsAddOnCredentialInMember runs an agent's add-on credentials, with the agent's identity and the
// test hub as its member: the credential Secret appears in the install namespace once that exists, works on
// the hub, and goes when the add-on is disabled.
func TestAgentKeepsAddOnCredentialInMember(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, cred := join(t, env, "aocred", "id-aocred")
	testAddOn(t, "aocred", true)
	bindAddOn(t, "aocred", "aocred")
	hubConfig, err := cred.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(hubConfig, ctrl.Options{Scheme: scheme.New(),
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{clusterv1alpha1.ClusterNamespace("aocred"): {}}},
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	// Certificates of 10 minutes (the shortest the signer grants), renewed 9m55s before they expire: the
	// first renewal comes a few seconds after the first certificate.
	if err := registration.SetupAgentAddOnCredentials(mgr, hubConfig, env.Kube, "aocred", 10*time.Minute, 10*time.Minute-5*time.Second); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	const install = "aocred-install"
	enabled := enableAddOn(t, "aocred", "aocred", install)
	time.Sleep(2 * time.Second)
	if _, err := credentialSecret(ctx, "aocred", install); !apierrors.IsNotFound(err) {
		t.Fatalf("credential before its install namespace exists: %v", err)
	}
	memberNamespace(t, install)
	checkCredentialWorks(t, "aocred", "aocred", install)
	first := credentialCertificate(t, "aocred", install)
	testenv.Eventually(t, time.Minute, "the add-on credential renewed before it expires", func() error {
		if cert := credentialCertificate(t, "aocred", install); cert.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return fmt.Errorf("still the certificate valid until %s", cert.NotAfter)
		} else if cert.Subject.CommonName != first.Subject.CommonName {
			return fmt.Errorf("renewed for %s", cert.Subject.CommonName)
		}
		return nil
	})
	checkCredentialWorks(t, "aocred", "aocred", install)

	// The add-on moves to another install namespace: the credential follows, and the old one goes.
	const moved = "aocred-moved"
	memberNamespace(t, moved)
	enabled = enableAddOn(t, "aocred", "aocred", moved)
	checkCredentialWorks(t, "aocred", "aocred", moved)
	testenv.Eventually(t, time.Minute, "the credential in the namespace the add-on left deleted", func() error {
		if _, err := credentialSecret(ctx, "aocred", install); !apierrors.IsNotFound(err) {
			return fmt.Errorf("credential Secret in %s: %v, want NotFound", install, err)
		}
		return nil
	})

	if err := env.Client.Delete(ctx, enabled); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the disabled add-on's credential Secret deleted", func() error {
		if _, err := credentialSecret(ctx, "aocred", moved); !apierrors.IsNotFound(err) {
			return fmt.Errorf("credential Secret: %v, want NotFound", err)
		}
		return nil
	})
}

// TestHubKeepsAddOnCredentialOfPushCluster: for a Push cluster the hub requests the add-on agent's
// certificate itself and writes the credential Secret in the member, and deletes it when the add-on is
// disabled.
func TestHubKeepsAddOnCredentialOfPushCluster(t *testing.T) {
	ctx := context.Background()
	pushCluster(t, "aopush", map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
	testAddOn(t, "aopush", true)
	bindAddOn(t, "aopush", "aopush")
	const install = "aopush-install"
	memberNamespace(t, install)
	enabled := enableAddOn(t, "aopush", "aopush", install)
	checkCredentialWorks(t, "aopush", "aopush", install)

	if err := env.Client.Delete(ctx, enabled); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the disabled add-on's credential Secret deleted", func() error {
		if _, err := credentialSecret(ctx, "aopush", install); !apierrors.IsNotFound(err) {
			return fmt.Errorf("credential Secret: %v, want NotFound", err)
		}
		return nil
	})
}

// TestHubGivesEarlierAgentRolesTheirRules: the agent Role of a cluster registered by an earlier version, without
// the right to read its ClusterAddOns, gets this version's rules when the hub starts (EnsureAgentRoles), and
// its agent reads them.
func TestHubGivesEarlierAgentRolesTheirRules(t *testing.T) {
	ctx := context.Background()
	agent, _ := join(t, env, "aorole", "id-aorole")
	ns := clusterv1alpha1.ClusterNamespace("aorole")
	role := &rbacv1.Role{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flotilla:agent"}, role); err != nil {
		t.Fatal(err)
	}
	want := role.Rules
	role.Rules = slices.DeleteFunc(slices.Clone(role.Rules), func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "clusteraddons") })
	if len(role.Rules) == len(want) {
		t.Fatal("the agent Role has no rule for clusteraddons")
	}
	if err := env.Client.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the earlier Role forbids reading ClusterAddOns", func() error {
		if err := agent.List(ctx, &addonv1alpha1.ClusterAddOnList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
			return fmt.Errorf("listing ClusterAddOns: %v, want Forbidden", err)
		}
		return nil
	})
	if err := registration.EnsureAgentRoles(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(role), role); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(role.Rules, want) {
		t.Fatalf("agent Role rules after EnsureAgentRoles:\n%v\nwant\n%v", role.Rules, want)
	}
	testenv.Eventually(t, 30*time.Second, "the agent reads its ClusterAddOns", func() error {
		return agent.List(ctx, &addonv1alpha1.ClusterAddOnList{}, client.InNamespace(ns))
	})
}
