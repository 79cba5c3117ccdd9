package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// newAddOnCommand is flotilla addon: list add-ons, enable and disable them on clusters, and follow how
// they run.
func newAddOnCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "addon",
		Short: "List add-ons, enable or disable them on clusters, and show how they run there",
		Long: `An AddOn declares what an extension installs in each cluster, its configuration and its agent's hub
rights; a ClusterAddOn in a cluster's namespace enables it there. An add-on whose install strategy is
Manual is enabled and disabled here; one installed by Placements follows its Placements' decisions.`,
	}
	cmd.AddCommand(newAddOnListCommand(), newAddOnEnableCommand(), newAddOnDisableCommand(), newAddOnStatusCommand())
	return cmd
}

// addOnTarget is what every flotilla addon verb but list names: an add-on and the clusters it acts on.
type addOnTarget struct {
	hub         cmdutil.HubFlags
	clusters    []string
	allClusters bool
}

func (f *addOnTarget) addFlags(cmd *cobra.Command, clusterUsage string) {
	f.hub.AddFlags(cmd.Flags())
	cmd.Flags().StringSliceVar(&f.clusters, "cluster", nil, clusterUsage+" (repeat it, or separate names with commas)")
}

// validate checks the add-on's name and the clusters' before any request; want says whether --cluster or
// --all-clusters must be given, and how the error names them.
func (f *addOnTarget) validate(name string, want string) error {
	if bad := validation.IsDNS1123Subdomain(name); len(bad) > 0 {
		return fmt.Errorf("add-on name %q: %s", name, bad[0])
	}
	for _, c := range f.clusters {
		if err := registration.ValidateClusterName(c); err != nil {
			return fmt.Errorf("--cluster: %w", err)
		}
	}
	f.clusters = slices.Compact(slices.Sorted(slices.Values(f.clusters)))
	if f.allClusters && len(f.clusters) > 0 {
		return fmt.Errorf("--cluster and --all-clusters: give one of them")
	}
	if want != "" && !f.allClusters && len(f.clusters) == 0 {
		return fmt.Errorf("%s", want)
	}
	return nil
}

// getAddOn reads the AddOn name, with an error that says what to do when it does not exist.
func getAddOn(ctx context.Context, c client.Client, name string) (*addonv1alpha1.AddOn, error) {
	a := &addonv1alpha1.AddOn{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, a); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("AddOn %s does not exist (flotilla addon list shows the add-ons)", name)
	} else if err != nil {
		return nil, err
	}
	return a, nil
}

// placementsOf names an add-on's placements, namespace/name.
func placementsOf(a *addonv1alpha1.AddOn) string {
	names := make([]string, 0, len(a.Spec.InstallStrategy.Placements))
	for _, p := range a.Spec.InstallStrategy.Placements {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return strings.Join(names, ", ")
}

// strategyOf is an add-on's install strategy, Manual when unset.
func strategyOf(a *addonv1alpha1.AddOn) addonv1alpha1.InstallStrategyType {
	if a.Spec.InstallStrategy.Type == "" {
		return addonv1alpha1.InstallManual
	}
	return a.Spec.InstallStrategy.Type
}

// healthModeOf is how an add-on's health is judged, Work when unset.
func healthModeOf(h addonv1alpha1.HealthCheck) addonv1alpha1.HealthCheckMode {
	if h.Mode == "" {
		return addonv1alpha1.HealthWork
	}
	return h.Mode
}

// clusterAddOns lists the ClusterAddOns named addon in every cluster namespace (all of them when addon is
// empty), or only those of clusters when given.
func clusterAddOns(ctx context.Context, c client.Client, addon string, clusters []string) ([]addonv1alpha1.ClusterAddOn, error) {
	if len(clusters) == 0 {
		list := &addonv1alpha1.ClusterAddOnList{}
		var opts []client.ListOption
		if addon != "" {
			opts = append(opts, client.MatchingFields{"metadata.name": addon})
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		items := slices.DeleteFunc(list.Items, func(ca addonv1alpha1.ClusterAddOn) bool {
			_, ok := clusterv1alpha1.ClusterOfNamespace(ca.Namespace)
			return !ok
		})
		sortClusterAddOns(items)
		return items, nil
	}
	var items []addonv1alpha1.ClusterAddOn
	for _, cluster := range clusters {
		list := &addonv1alpha1.ClusterAddOnList{}
		opts := []client.ListOption{client.InNamespace(clusterv1alpha1.ClusterNamespace(cluster))}
		if addon != "" {
			opts = append(opts, client.MatchingFields{"metadata.name": addon})
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		items = append(items, list.Items...)
	}
	sortClusterAddOns(items)
	return items, nil
}

func sortClusterAddOns(items []addonv1alpha1.ClusterAddOn) {
	slices.SortFunc(items, func(a, b addonv1alpha1.ClusterAddOn) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for i := range items {
		items[i].TypeMeta = metav1.TypeMeta{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "ClusterAddOn"}
	}
}

// clusterOf is the cluster a ClusterAddOn's namespace belongs to.
func clusterOf(ca *addonv1alpha1.ClusterAddOn) string {
	cluster, _ := clusterv1alpha1.ClusterOfNamespace(ca.Namespace)
	return cluster
}

// addOnCondition is a condition's status, "-" when it is not there yet.
func addOnCondition(conditions []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conditions, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

// addOnProblem is the first thing wrong with a ClusterAddOn, in its conditions' words: a Degraded or
// unavailable condition's reason and message, or "" when nothing is.
func addOnProblem(conditions []metav1.Condition) string {
	for _, t := range []string{addonv1alpha1.ConditionDegraded, addonv1alpha1.ConditionAvailable, addonv1alpha1.ConditionRegistrationApplied, addonv1alpha1.ConditionProgressing} {
		c := meta.FindStatusCondition(conditions, t)
		bad := c != nil && (c.Status == metav1.ConditionTrue) == (t == addonv1alpha1.ConditionDegraded || t == addonv1alpha1.ConditionProgressing)
		if bad && c.Message != "" {
			return fmt.Sprintf("%s: %s", c.Reason, c.Message)
		} else if bad {
			return c.Reason
		}
	}
	return ""
}

// newAddOnListCommand is flotilla addon list: the AddOns with their strategy and counts, or with
// --cluster the ClusterAddOns of those clusters.
func newAddOnListCommand() *cobra.Command {
	var target addOnTarget
	var output listOutput
	cmd := &cobra.Command{
		Use:   "list [NAME...] [--cluster CLUSTER]",
		Short: "List the add-ons with their install strategy and on how many clusters each is enabled and available, or a cluster's add-ons",
		Example: `  flotilla addon list -o wide
  flotilla addon list --cluster m1        # the add-ons enabled on m1 and their health`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			for _, name := range args {
				if bad := validation.IsDNS1123Subdomain(name); len(bad) > 0 {
					return fmt.Errorf("add-on name %q: %s", name, bad[0])
				}
			}
			if err := target.validate("x", ""); err != nil {
				return err
			}
			_, c, _, err := target.hub.Clients()
			if err != nil {
				return err
			}
			ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			named := func(name string) bool { return len(args) == 0 || slices.Contains(args, name) }
			if len(target.clusters) > 0 {
				items, err := clusterAddOns(ctx, c, "", target.clusters)
				if err != nil {
					return err
				}
				items = slices.DeleteFunc(items, func(ca addonv1alpha1.ClusterAddOn) bool { return !named(ca.Name) })
				return output.print(out, errOut, asList(items), func() *metav1.Table { return clusterAddOnTable(items) })
			}
			list := &addonv1alpha1.AddOnList{}
			if err := c.List(ctx, list); err != nil {
				return err
			}
			items := slices.DeleteFunc(list.Items, func(a addonv1alpha1.AddOn) bool { return !named(a.Name) })
			for i := range items {
				items[i].TypeMeta = metav1.TypeMeta{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "AddOn"}
			}
			return output.print(out, errOut, asList(items), func() *metav1.Table { return addOnTable(items) })
		},
	}
	target.addFlags(cmd, "list the add-ons enabled on this cluster")
	output.addFlags(cmd.Flags())
	return cmd
}

// addOnTable is the table of AddOns; wide adds placements, registration and health mode.
func addOnTable(items []addonv1alpha1.AddOn) *metav1.Table {
	t := newTable("Name", "Strategy", "Enabled", "Available", "Age", "Placements+", "Registration+", "Health+", "Description+")
	for i := range items {
		a := &items[i]
		registration := "-"
		if a.Spec.Registration != nil {
			registration = strconv.Itoa(len(a.Spec.Registration.HubPermissions)) + " hub permissions"
		}
		addRow(t, a, a.Name, string(strategyOf(a)), strconv.Itoa(int(a.Status.EnabledClusters)), strconv.Itoa(int(a.Status.AvailableClusters)),
			age(a.CreationTimestamp.Time), orDash(placementsOf(a)), registration, string(healthModeOf(a.Spec.HealthCheck)), orDash(a.Spec.Description))
	}
	return t
}

// clusterAddOnTable is the table of ClusterAddOns, one row per cluster; wide adds how each was enabled, its
// install namespace, revision and what is wrong.
func clusterAddOnTable(items []addonv1alpha1.ClusterAddOn) *metav1.Table {
	t := newTable("Cluster", "Add-on", "Available", "Degraded", "Progressing", "Age", "Enabled-By+", "Namespace+", "Revision+", "Message+")
	for i := range items {
		ca := &items[i]
		addRow(t, ca, clusterOf(ca), ca.Name, addOnCondition(ca.Status.Conditions, addonv1alpha1.ConditionAvailable),
			addOnCondition(ca.Status.Conditions, addonv1alpha1.ConditionDegraded), addOnCondition(ca.Status.Conditions, addonv1alpha1.ConditionProgressing),
			age(ca.CreationTimestamp.Time), enabledBy(ca), orDash(ca.Status.Namespace), orDash(ca.Status.Revision), orDash(addOnProblem(ca.Status.Conditions)))
	}
	return t
}

// enabledBy says who enabled an add-on on a cluster: its install strategy or a person.
func enabledBy(ca *addonv1alpha1.ClusterAddOn) string {
	if _, ok := ca.Labels[addonv1alpha1.LabelInstalledBy]; ok {
		return "placement"
	}
	return "hand"
}
