package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/install"
)

// Installer puts the agent into a member and takes it out again, for `join --install` and `unjoin
// --uninstall`. flotilla passes the Helm chart's (internal/helmchart); flotilla-agent, which runs in the member,
// passes none: it then has neither flag and links no chart renderer, which would double its size.
type Installer struct {
	Install   func(ctx context.Context, member *rest.Config, release, namespace string, v install.AgentValues, progress func(string)) error
	Uninstall func(ctx context.Context, member *rest.Config, release, namespace string) ([]string, error)
}

// installOptions are the flags of `flotilla join --install` and `flotilla unjoin --uninstall`: where in the
// member the agent chart's objects go.
type installOptions struct {
	installer          *Installer
	enabled            bool
	release, namespace string
	image              string
}

func (o *installOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.enabled, "install", false, "install the agent into the member (the flotilla-agent chart's objects, through --cluster-kubeconfig) instead of running it here")
	o.addTargetFlags(fs)
	fs.StringVar(&o.image, "agent-image", "", "agent image for --install, REPOSITORY:TAG (default: the chart's)")
}

func (o *installOptions) addTargetFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.release, "install-release", install.DefaultAgentRelease, "name of the agent's release in the member (the chart's release name)")
	fs.StringVar(&o.namespace, "install-namespace", install.DefaultAgentNamespace, "namespace of the agent in the member")
}

func (o *installOptions) validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(o.release); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--install-release %q: %v", o.release, msgs))
	}
	if msgs := validation.IsDNS1123Label(o.namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--install-namespace %q: %v", o.namespace, msgs))
	}
	return errors.Join(errs...)
}

func (o *joinOptions) installAgent(ctx context.Context, member *rest.Config, p *cmdutil.Progress) error {
	if err := o.install.validate(); err != nil {
		return err
	}
	err := o.install.installer.Install(ctx, member, o.install.release, o.install.namespace, install.AgentValues{
		HubURL: o.hubURL, CACertHashes: o.caCertHashes, ClusterName: o.clusterName, Token: o.token,
		Labels: o.labels, Provider: o.provider, Region: o.region, Zones: o.zones, CertTTL: o.agent.CertTTL, Image: o.install.image,
	}, p.Step)
	if err != nil {
		return err
	}
	p.Step(fmt.Sprintf("agent installed in namespace %s of the member; it joins the hub as %s from there (flotilla get clusters)",
		o.install.namespace, o.clusterName))
	return nil
}

func (o *unjoinOptions) uninstallAgent(ctx context.Context, out io.Writer) error {
	member, err := clientcmd.BuildConfigFromFlags("", o.memberKubeconfig)
	if err != nil {
		return fmt.Errorf("--cluster-kubeconfig: %w", err)
	}
	deleted, err := o.install.installer.Uninstall(ctx, member, o.install.release, o.install.namespace)
	for _, d := range deleted {
		fmt.Fprintln(out, "deleted "+d)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "agent release %s removed from the member (%d objects)\n", o.install.release, len(deleted))
	return nil
}
