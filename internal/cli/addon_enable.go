package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// addOnResource is how the enable and disable lines name a ClusterAddOn, as kubectl names what it wrote.
const addOnResource = "clusteraddon.addon.flotilla.io/"

// addOnChange is flotilla addon enable or disable: the add-on, its clusters and how to run.
type addOnChange struct {
	addOnTarget
	dryRun cmdutil.DryRun
	wait   time.Duration
}

func (o *addOnChange) addFlags(cmd *cobra.Command, clusterUsage, waitUsage string) {
	o.addOnTarget.addFlags(cmd, clusterUsage)
	cmdutil.AddDryRunFlag(cmd.Flags(), &o.dryRun, "what would change")
	cmd.Flags().DurationVar(&o.wait, "wait", 0, waitUsage+" (0: do not wait)")
}

func (o *addOnChange) validate(name, want string) error {
	if o.wait < 0 {
		return fmt.Errorf("--wait %s: want a duration of 0 or more", o.wait)
	}
	return o.addOnTarget.validate(name, want)
}

// newAddOnEnableCommand is flotilla addon enable: a ClusterAddOn in each named cluster's namespace.
func newAddOnEnableCommand() *cobra.Command {
	var o addOnChange
	cmd := &cobra.Command{
		Use:   "enable NAME --cluster CLUSTER...",
		Short: "Enable an add-on whose install strategy is Manual on clusters (a ClusterAddOn in each cluster's namespace)",
		Example: `  flotilla addon enable hello --cluster m1 --cluster m2
  flotilla addon enable hello --cluster m1 --wait 2m    # until it is Available there`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args[0], "--cluster is required: the clusters to enable the add-on on"); err != nil {
				return err
			}
			if o.allClusters {
				return fmt.Errorf("--all-clusters is for disable: name the clusters to enable the add-on on")
			}
			_, c, _, err := o.hub.Clients()
			if err != nil {
				return err
			}
			return o.enable(cmd.Context(), c, cmd.OutOrStdout(), args[0])
		},
	}
	o.addFlags(cmd, "a cluster to enable the add-on on (required)", "wait this long for the add-on to be Available on every cluster")
	return cmd
}

// enable checks the add-on and every cluster first, then creates the ClusterAddOns: a typo in the last
// cluster enables nothing.
func (o *addOnChange) enable(ctx context.Context, c client.Client, out io.Writer, name string) error {
	a, err := getAddOn(ctx, c, name)
	if err != nil {
		return err
	}
	if strategyOf(a) == addonv1alpha1.InstallPlacements {
		return fmt.Errorf("AddOn %s is installed by its Placements (%s): it runs where they decide; change those Placements (or set the "+
			"AddOn's spec.installStrategy.type to Manual) to enable it on other clusters", name, placementsOf(a))
	}
	for _, cluster := range o.clusters {
		cl := &clusterv1alpha1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, cl); apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster %s does not exist (flotilla get clusters lists them); nothing was enabled", cluster)
		} else if err != nil {
			return err
		}
		if cl.DeletionTimestamp != nil {
			return fmt.Errorf("cluster %s is being unjoined; nothing was enabled", cluster)
		}
	}
	for _, cluster := range o.clusters {
		ca := &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterv1alpha1.ClusterNamespace(cluster),
			Labels: map[string]string{addonv1alpha1.LabelAddOn: name}}}
		if o.dryRun == cmdutil.DryRunClient {
			err = c.Get(ctx, client.ObjectKeyFromObject(ca), &addonv1alpha1.ClusterAddOn{})
			if err == nil {
				err = apierrors.NewAlreadyExists(addonv1alpha1.GroupVersion.WithResource("clusteraddons").GroupResource(), name)
			} else if apierrors.IsNotFound(err) {
				err = nil
			}
		} else {
			err = c.Create(ctx, ca, &client.CreateOptions{DryRun: o.dryRun.Options()})
		}
		switch {
		case apierrors.IsAlreadyExists(err):
			fmt.Fprintf(out, "AddOn %s is already enabled on cluster %s\n", name, cluster)
			continue
		case err != nil:
			return fmt.Errorf("enabling AddOn %s on cluster %s: %w", name, cluster, err)
		}
		fmt.Fprintf(out, "%s%s created in namespace %s: AddOn %s is enabled on cluster %s%s\n", addOnResource, name, ca.Namespace, name, cluster, o.dryRun.Suffix())
	}
	if o.wait == 0 || o.dryRun.Enabled() {
		return nil
	}
	return waitAddOns(ctx, c, out, name, o.clusters, o.wait, func(ca *addonv1alpha1.ClusterAddOn, err error) (bool, string) {
		if err != nil {
			return false, err.Error()
		}
		available := meta.FindStatusCondition(ca.Status.Conditions, addonv1alpha1.ConditionAvailable)
		if available != nil && available.Status == metav1.ConditionTrue {
			return true, "Available"
		}
		return false, orDash(addOnProblem(ca.Status.Conditions))
	})
}

// newAddOnDisableCommand is flotilla addon disable: it deletes ClusterAddOns of the named clusters, or of
// every cluster; the hub then removes what the add-on installed there.
func newAddOnDisableCommand() *cobra.Command {
	var o addOnChange
	cmd := &cobra.Command{
		Use:   "disable NAME (--cluster CLUSTER... | --all-clusters)",
		Short: "Disable an add-on on clusters: the hub removes its objects from them and revokes its agent's hub rights",
		Example: `  flotilla addon disable hello --cluster m1
  flotilla addon disable hello --all-clusters --wait 2m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args[0], "--cluster or --all-clusters is required: disabling removes the add-on's objects from the clusters, so name them"); err != nil {
				return err
			}
			_, c, _, err := o.hub.Clients()
			if err != nil {
				return err
			}
			return o.disable(cmd.Context(), c, cmd.OutOrStdout(), args[0])
		},
	}
	o.addFlags(cmd, "a cluster to disable the add-on on", "wait this long for the hub to finish removing the add-on from every cluster")
	cmd.Flags().BoolVar(&o.allClusters, "all-clusters", false, "disable the add-on on every cluster it is enabled on")
	return cmd
}

// disable reads every ClusterAddOn it is to delete first, and refuses them all when one is missing or
// belongs to the install strategy, which would enable it again.
func (o *addOnChange) disable(ctx context.Context, c client.Client, out io.Writer, name string) error {
	var items []addonv1alpha1.ClusterAddOn
	if o.allClusters {
		found, err := clusterAddOns(ctx, c, name, nil)
		if err != nil {
			return err
		}
		if len(found) == 0 {
			return fmt.Errorf("AddOn %s is enabled on no cluster", name)
		}
		items = found
	} else {
		for _, cluster := range o.clusters {
			ca := addonv1alpha1.ClusterAddOn{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: name}, &ca); apierrors.IsNotFound(err) {
				return fmt.Errorf("AddOn %s is not enabled on cluster %s; nothing was disabled", name, cluster)
			} else if err != nil {
				return err
			}
			items = append(items, ca)
		}
	}
	var byPlacement []string
	for i := range items {
		if _, ok := items[i].Labels[addonv1alpha1.LabelInstalledBy]; ok {
			byPlacement = append(byPlacement, clusterOf(&items[i]))
		}
	}
	if len(byPlacement) > 0 {
		return fmt.Errorf("AddOn %s was enabled on %s by its install strategy, which would enable it again: change the AddOn's Placements "+
			"(flotilla addon list %s -o wide names them) so they no longer decide on those clusters; nothing was disabled", name, strings.Join(byPlacement, ", "), name)
	}
	var clusters []string
	for i := range items {
		ca := &items[i]
		cluster := clusterOf(ca)
		if ca.DeletionTimestamp != nil {
			fmt.Fprintf(out, "AddOn %s is already being disabled on cluster %s: the hub is removing its objects there\n", name, cluster)
			clusters = append(clusters, cluster)
			continue
		}
		var err error
		if o.dryRun != cmdutil.DryRunClient {
			err = c.Delete(ctx, ca, &client.DeleteOptions{DryRun: o.dryRun.Options(), Preconditions: &metav1.Preconditions{UID: &ca.UID}})
		}
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("disabling AddOn %s on cluster %s: %w", name, cluster, err)
		}
		fmt.Fprintf(out, "%s%s deleted from namespace %s: the hub removes AddOn %s's objects from cluster %s and revokes its agent's hub rights there%s\n",
			addOnResource, name, ca.Namespace, name, cluster, o.dryRun.Suffix())
		clusters = append(clusters, cluster)
	}
	if o.wait == 0 || o.dryRun.Enabled() || len(clusters) == 0 {
		return nil
	}
	return waitAddOns(ctx, c, out, name, clusters, o.wait, func(ca *addonv1alpha1.ClusterAddOn, err error) (bool, string) {
		if apierrors.IsNotFound(err) {
			return true, "removed"
		} else if err != nil {
			return false, err.Error()
		}
		return false, "the hub is removing its objects"
	})
}

// waitAddOns polls the ClusterAddOns of clusters until done says each is done, printing a progress line
// each time one's state changes; an error names those still not done when timeout passes.
func waitAddOns(ctx context.Context, c client.Client, out io.Writer, name string, clusters []string, timeout time.Duration,
	done func(*addonv1alpha1.ClusterAddOn, error) (bool, string)) error {
	progress := cmdutil.NewProgress(out)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	said := map[string]string{}
	for {
		var waiting []string
		for _, cluster := range clusters {
			ca := &addonv1alpha1.ClusterAddOn{}
			err := c.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: name}, ca)
			if ctx.Err() != nil {
				break
			}
			ok, state := done(ca, err)
			if said[cluster] != state {
				progress.Step(fmt.Sprintf("%s: %s", cluster, state))
				said[cluster] = state
			}
			if !ok {
				waiting = append(waiting, cluster)
			}
		}
		if len(waiting) == 0 && ctx.Err() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			var states []string
			for _, cluster := range clusters {
				if s := said[cluster]; s != "Available" && s != "removed" {
					states = append(states, cluster+" ("+s+")")
				}
			}
			return fmt.Errorf("AddOn %s: after %s still waiting on %s", name, timeout, strings.Join(states, ", "))
		case <-time.After(time.Second):
		}
	}
}
