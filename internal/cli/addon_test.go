package cli

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// flotilla addon refuses a bad argument or flag before it reaches the hub (the kubeconfig does not exist,
// so a verb that got past its checks would fail on that instead).
func TestAddOnRefusesBadArguments(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"enable", "hello"}, "--cluster is required"},
		{[]string{"enable", "Hello", "--cluster", "m1"}, `add-on name "Hello"`},
		{[]string{"enable", "hello", "--cluster", "M1"}, `--cluster: cluster name "M1" is invalid`},
		{[]string{"enable", "hello", "--cluster", "m1,m2,"}, `--cluster: cluster name "" is invalid`},
		{[]string{"enable", "hello", "--cluster", strings.Repeat("m", 50)}, "a cluster name is at most 46 characters"},
		{[]string{"enable", "hello", "--cluster", "m1", "--wait", "-1s"}, "--wait -1s"},
		{[]string{"enable", "hello", "--cluster", "m1", "--dry-run", "maybe"}, "invalid dry-run value (maybe)"},
		{[]string{"enable", "hello", "m1"}, "accepts 1 arg(s)"},
		{[]string{"disable", "hello"}, "--cluster or --all-clusters is required"},
		{[]string{"disable", "hello", "--cluster", "m1", "--all-clusters"}, "--cluster and --all-clusters: give one of them"},
		{[]string{"disable", "hello", "--cluster", "m_1"}, `--cluster: cluster name "m_1" is invalid`},
		{[]string{"status", "hello", "-o", "table"}, `--output "table"`},
		{[]string{"status"}, "accepts 1 arg(s)"},
		{[]string{"list", "-o", "jsonpath="}, "jsonpath= needs a template"},
		{[]string{"list", "Bad_Name"}, `add-on name "Bad_Name"`},
		{[]string{"list", "--cluster", "-x"}, `--cluster: cluster name "-x" is invalid`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := NewPluginRoot()
			root.SetArgs(append([]string{"addon", tt.args[0], "--kubeconfig", t.TempDir() + "/none"}, tt.args[1:]...))
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			if err := root.Execute(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestAddOnRegistered: both the flotilla and the kubectl-flotilla command lines have the addon verbs.
func TestAddOnRegistered(t *testing.T) {
	root := NewPluginRoot()
	for _, verb := range []string{"list", "enable", "disable", "status"} {
		if cmd, _, err := root.Find([]string{"addon", verb}); err != nil || cmd.Name() != verb {
			t.Errorf("kubectl-flotilla addon %s: %v", verb, err)
		}
	}
}

// TestAddOnProblem: the message column says the first thing wrong, Degraded before unavailable, and
// nothing for a healthy add-on.
func TestAddOnProblem(t *testing.T) {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	healthy := []metav1.Condition{cond(addonv1alpha1.ConditionAvailable, "True", "Available", "2/2 ready"),
		cond(addonv1alpha1.ConditionDegraded, "False", "AsDeclared", ""), cond(addonv1alpha1.ConditionProgressing, "False", "Done", "")}
	for _, tt := range []struct {
		name       string
		conditions []metav1.Condition
		want       string
	}{
		{"healthy", healthy, ""},
		{"none yet", nil, ""},
		{"unavailable", []metav1.Condition{cond(addonv1alpha1.ConditionAvailable, "False", "Unhealthy", "Deployment hello: 0/1 ready")},
			"Unhealthy: Deployment hello: 0/1 ready"},
		{"degraded first", []metav1.Condition{cond(addonv1alpha1.ConditionAvailable, "False", "Unhealthy", "x"),
			cond(addonv1alpha1.ConditionDegraded, "True", "ConfigMissing", "AddOnConfig default/hello does not exist")},
			"ConfigMissing: AddOnConfig default/hello does not exist"},
		{"registration", []metav1.Condition{cond(addonv1alpha1.ConditionRegistrationApplied, "False", "RoleMissing", "")}, "RoleMissing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := addOnProblem(tt.conditions); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAddOnStatusTable: one row per cluster, named by its namespace, with the conditions, revision, health
// mode and configs; wide adds the agent's identity and the problem.
func TestAddOnStatusTable(t *testing.T) {
	ca := addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: clusterv1alpha1.ClusterNamespace("m1"),
		Labels: map[string]string{addonv1alpha1.LabelInstalledBy: "hello"}}}
	ca.Status = addonv1alpha1.ClusterAddOnStatus{Namespace: "flotilla-addon-hello", Revision: "5d41402a",
		HealthCheck: addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthLease},
		ConfigReferences: []addonv1alpha1.ConfigStatus{{ConfigReference: addonv1alpha1.ConfigReference{Group: addonv1alpha1.GroupVersion.Group,
			Resource: "addonconfigs", ConfigName: addonv1alpha1.ConfigName{Namespace: "addons", Name: "hello"}}, SpecHash: "0123456789abcdef"}},
		Registrations: []addonv1alpha1.RegistrationStatus{{User: addonv1alpha1.AgentUser("hello", "m1")}},
		Conditions: []metav1.Condition{{Type: addonv1alpha1.ConditionAvailable, Status: "False", Reason: "LeaseExpired", Message: "not renewed for 2m"},
			{Type: addonv1alpha1.ConditionRegistrationApplied, Status: "True", Reason: "Applied"}}}
	var out bytes.Buffer
	if err := (listOutput{format: "wide"}).tablePrinter().PrintObj(addOnStatusTable([]addonv1alpha1.ClusterAddOn{ca}), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CLUSTER", "REGISTRATION", "m1", "False", "True", "5d41402a", "Lease", "addonconfigs/addons/hello@01234567",
		"flotilla-addon-hello", "placement", "system:flotilla:addon:hello:m1", "LeaseExpired: not renewed for 2m"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}
