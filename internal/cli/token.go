package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/registration"
)

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage the bootstrap tokens member clusters join with"}
	cmd.AddCommand(newTokenCreateCommand(), newTokenListCommand(), newTokenDeleteCommand())
	return cmd
}

func newTokenCreateCommand() *cobra.Command {
	var hub hubFlags
	var ttl time.Duration
	var description string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token and print the join command that uses it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl < time.Minute || ttl > 365*24*time.Hour {
				return fmt.Errorf("--ttl %s: must be between 1m and 8760h", ttl)
			}
			cfg, _, kube, err := hub.clients()
			if err != nil {
				return err
			}
			caPEM, err := registration.HubCA(cfg)
			if err != nil {
				return err
			}
			hash, err := registration.CAHash(caPEM)
			if err != nil {
				return fmt.Errorf("the hub kubeconfig has no usable CA: %w", err)
			}
			token, err := registration.CreateToken(cmd.Context(), kube, ttl, description)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Token %s expires %s.\n\nOn each member cluster, run:\n\n", token.ID, token.Expires.Format(time.RFC3339))
			fmt.Fprintf(out, "  flotilla join %s --token %s --ca-cert-hash %s --cluster-name NAME --cluster-kubeconfig MEMBER_KUBECONFIG\n",
				cfg.Host, token, hash)
			return nil
		},
	}
	hub.addFlags(cmd.Flags())
	cmd.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token can be used to join")
	cmd.Flags().StringVar(&description, "description", "flotilla join token", "what the token is for")
	return cmd
}

func newTokenListCommand() *cobra.Command {
	var hub hubFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the bootstrap tokens (without their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, kube, err := hub.clients()
			if err != nil {
				return err
			}
			tokens, err := registration.ListTokens(cmd.Context(), kube)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
			fmt.Fprintln(w, "ID\tEXPIRES\tTTL\tDESCRIPTION")
			for _, t := range tokens {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.ID, t.Expires.Format(time.RFC3339), time.Until(t.Expires).Round(time.Minute), t.Description)
			}
			return w.Flush()
		},
	}
	hub.addFlags(cmd.Flags())
	return cmd
}

func newTokenDeleteCommand() *cobra.Command {
	var hub hubFlags
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a bootstrap token; clusters that joined with it stay joined",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, _, kube, err := hub.clients()
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
	hub.addFlags(cmd.Flags())
	return cmd
}
