package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

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
	// server is the hub's URL in the printed join command; empty: the hub kubeconfig's server, which a
	// port-forward or the hub's own pod makes an address members cannot reach.
	server string
	grant  registration.Grant
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
	if o.server != "" {
		if err := cmdutil.ValidateHubURL(o.server); err != nil {
			return fmt.Errorf("--server %w", err)
		}
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

// servingCertNames checks that the certificate the hub of cfg serves names server's host: a member joining at
// an address the certificate does not name fails on TLS.
func servingCertNames(ctx context.Context, cfg *rest.Config, server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return err
	}
	hub, err := url.Parse(cfg.Host)
	if err != nil {
		return err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	dialer := &tls.Dialer{Config: tlsConfig}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	address := hub.Host
	if hub.Port() == "" {
		address = net.JoinHostPort(hub.Hostname(), "443")
	}
	conn, err := dialer.DialContext(ctx, "tcp", address)
	if err != nil {
		return fmt.Errorf("the hub's serving certificate could not be read to check it names %s: %w", u.Hostname(), err)
	}
	defer conn.Close()
	cert := conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
	if err := cert.VerifyHostname(u.Hostname()); err != nil {
		return fmt.Errorf("the hub's serving certificate does not name %s, so joins at that address fail: add --tls-san %s to the hub (the chart's extraTLSSANs)",
			u.Hostname(), u.Hostname())
	}
	return nil
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
shown by flotilla describe cluster.

The join command names the hub by the server of your kubeconfig; when members reach the hub at another
address (a Service's DNS name, a load balancer, while you use a port-forward), give it with --server.`,
		Example: `  flotilla token create --cluster-name m1 --server https://hub.flotilla.svc:6443`,
		Args:    cobra.NoArgs,
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
			hubURL := cfg.Host
			if o.server != "" {
				hubURL = o.server
				if err := servingCertNames(cmd.Context(), cfg, o.server); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: --server %s: %v\n", o.server, err)
				}
			}
			fmt.Fprintf(out, "  %s\n", o.joinCommand(hubURL, token, hashes))
			return nil
		},
	}
	o.hub.AddFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.DurationVar(&o.ttl, "ttl", 24*time.Hour, "how long the token can be used to join")
	fs.StringVar(&o.description, "description", "flotilla join token", "what the token is for")
	fs.StringVar(&o.server, "server", "", "the hub's URL as members reach it, https://HOST:PORT, for the printed join command (default: the kubeconfig's server)")
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
	var output listOutput
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
			table := newTable("ID", "Expires", "TTL", "Cluster", "Single-Use", "Description")
			for _, t := range tokens {
				addRow(table, nil, t.ID, t.Expires.Format(time.RFC3339), time.Until(t.Expires).Round(time.Minute).String(),
					orDash(t.Grant.ClusterName), strconv.FormatBool(t.Grant.SingleUse), t.Description)
			}
			return output.print(cmd.OutOrStdout(), cmd.ErrOrStderr(), nil, func() *metav1.Table { return table })
		},
	}
	hub.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&output.noHeaders, "no-headers", false, "print the table without its header line")
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
