package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/registration"
)

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage the bootstrap tokens member clusters join with"}
	cmd.AddCommand(newTokenCreateCommand(), newTokenListCommand(), newTokenDeleteCommand())
	return cmd
}

// tokenCreateOptions configure `flotilla token create`.
type tokenCreateOptions struct {
	hub         cmdutil.HubFlags
	ttl         time.Duration
	description string
	labels      string
	grant       registration.Grant
	// anyName and reusable opt out of the defaults: a token joins the one name --cluster-name gives, once.
	anyName, reusable bool
}

func (o *tokenCreateOptions) validate() error {
	if o.ttl < time.Minute || o.ttl > 365*24*time.Hour {
		return fmt.Errorf("--ttl %s: must be between 1m and 8760h", o.ttl)
	}
	switch {
	case o.grant.ClusterName == "" && !o.anyName:
		return fmt.Errorf("--cluster-name is required: a token joins one cluster name (--any-name lets it join any free name)")
	case o.grant.ClusterName != "" && o.anyName:
		return fmt.Errorf("--cluster-name %s and --any-name: give one", o.grant.ClusterName)
	}
	o.grant.SingleUse = !o.reusable
	l, err := labels.ConvertSelectorToLabelsMap(o.labels)
	if err != nil {
		return fmt.Errorf("--labels %q: %w", o.labels, err)
	}
	o.grant.Labels = l
	return o.grant.Validate()
}

// joinCommand is the command a member runs to join with token. The token goes in the environment, not on
// the command line, where every user of the member's machine could read it.
func (o *tokenCreateOptions) joinCommand(hubURL string, token registration.Token, hashes []string) string {
	args := []string{"FLOTILLA_TOKEN=" + token.String(), "flotilla", "join", hubURL}
	for _, h := range hashes {
		args = append(args, "--ca-cert-hash", h)
	}
	name := "NAME"
	if o.grant.ClusterName != "" {
		name = o.grant.ClusterName
	}
	args = append(args, "--cluster-name", name, "--cluster-kubeconfig", "MEMBER_KUBECONFIG")
	if o.labels != "" {
		args = append(args, "--labels", o.labels)
	}
	if o.grant.Provider != "" {
		args = append(args, "--provider", o.grant.Provider)
	}
	if o.grant.Region != "" {
		args = append(args, "--region", o.grant.Region)
	}
	for _, z := range o.grant.Zones {
		args = append(args, "--zone", z)
	}
	return strings.Join(args, " ")
}

func newTokenCreateCommand() *cobra.Command {
	o := &tokenCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token and print the join command that uses it",
		Long: `Create a bootstrap token and print the join command that uses it.

A token joins one cluster: --cluster-name names it, and the token is spent by its first approved join.
--any-name lets it join any free name and --reusable lets it join more than once; both widen what a leaked
token can do, so prefer one bound token per cluster.

A join gets the labels, provider, region and zones it asks for only when the token allows them (--labels,
--provider, --region, --zones) or an administrator accepts it with flotilla accept; the rest is dropped and
shown by flotilla describe cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			cfg, _, kube, err := o.hub.Clients()
			if err != nil {
				return err
			}
			caPEM, err := registration.HubCA(cfg)
			if err != nil {
				return err
			}
			hashes, err := registration.CAHashes(caPEM)
			if err != nil {
				return fmt.Errorf("the hub kubeconfig has no usable CA: %w", err)
			}
			token, err := registration.CreateToken(cmd.Context(), kube, o.ttl, o.description, o.grant)
			if err != nil {
				return err
			}
			if o.anyName {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: token %s can join any free cluster name; whoever holds it picks the name\n", token.ID)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Token %s expires %s.\n\nOn each member cluster, run:\n\n", token.ID, token.Expires.Format(time.RFC3339))
			fmt.Fprintf(out, "  %s\n", o.joinCommand(cfg.Host, token, hashes))
			return nil
		},
	}
	o.hub.AddFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.DurationVar(&o.ttl, "ttl", 24*time.Hour, "how long the token can be used to join")
	fs.StringVar(&o.description, "description", "flotilla join token", "what the token is for")
	fs.StringVar(&o.grant.ClusterName, "cluster-name", "", "the one cluster name the token can join (required unless --any-name)")
	fs.BoolVar(&o.anyName, "any-name", false, "let the token join any free cluster name instead of one (prints a warning)")
	fs.BoolVar(&o.reusable, "reusable", false, "keep the token after its first approved join, until it expires (default: single use)")
	fs.Bool("single-use", true, "")
	_ = fs.MarkDeprecated("single-use", "tokens are single-use by default; --reusable opts out")
	fs.StringVar(&o.labels, "labels", "", "labels a join with this token may give its Cluster, k=v,k2=v2 (others are dropped)")
	fs.StringVar(&o.grant.Provider, "provider", "", "provider a join with this token may claim")
	fs.StringVar(&o.grant.Region, "region", "", "region a join with this token may claim")
	fs.StringSliceVar(&o.grant.Zones, "zones", nil, "zones a join with this token may claim")
	return cmd
}

func newTokenListCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the bootstrap tokens (without their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, kube, err := hub.Clients()
			if err != nil {
				return err
			}
			tokens, err := registration.ListTokens(cmd.Context(), kube)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
			fmt.Fprintln(w, "ID\tEXPIRES\tTTL\tCLUSTER\tSINGLE-USE\tDESCRIPTION")
			for _, t := range tokens {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%t\t%s\n", t.ID, t.Expires.Format(time.RFC3339), time.Until(t.Expires).Round(time.Minute),
					orDash(t.Grant.ClusterName), t.Grant.SingleUse, t.Description)
			}
			return w.Flush()
		},
	}
	hub.AddFlags(cmd.Flags())
	return cmd
}

func newTokenDeleteCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a bootstrap token; clusters that joined with it stay joined",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, _, kube, err := hub.Clients()
			if err != nil {
				return err
			}
			if err := registration.DeleteToken(cmd.Context(), kube, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token %s deleted\n", args[0])
			return nil
		},
	}
	hub.AddFlags(cmd.Flags())
	return cmd
}
