package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/agent"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/install"
)

// Installer puts the agent into a member and takes it out again, for `join --install` and `unjoin
// --uninstall`. flotilla passes the Helm chart's (internal/helmchart); flotilla-agent, which runs in the member,
// passes none: it then has neither flag and links no chart renderer, which would double its size.
type Installer struct {
	// Objects renders the chart's objects, for --dry-run=client to print.
	Objects func(release, namespace string, v install.AgentValues) ([]*unstructured.Unstructured, error)
	// Install applies them; dryRun ([All]) has the member's API server check them without persisting.
	Install   func(ctx context.Context, member *rest.Config, release, namespace string, v install.AgentValues, dryRun []string, progress func(string)) error
	Uninstall func(ctx context.Context, member *rest.Config, release, namespace string, dryRun []string) ([]string, error)
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

func (o *joinOptions) installAgent(ctx context.Context, member *rest.Config, out, errOut io.Writer, p *cmdutil.Progress) error {
	if err := o.install.validate(); err != nil {
		return err
	}
	values := install.AgentValues{
		HubURL: o.hubURL, CACertHashes: o.caCertHashes, ClusterName: o.clusterName, Token: o.token,
		Labels: o.labels, Provider: o.provider, Region: o.region, Zones: o.zones, CertTTL: o.agent.CertTTL, Image: o.install.image,
	}
	if o.dryRun.Enabled() {
		return o.printInstall(ctx, member, values, out, errOut)
	}
	if err := o.install.installer.Install(ctx, member, o.install.release, o.install.namespace, values, nil, p.Step); err != nil {
		return err
	}
	p.Step(fmt.Sprintf("agent installed in namespace %s of the member; it joins the hub as %s from there (flotilla get clusters)",
		o.install.namespace, o.clusterName))
	return nil
}

// printInstall prints, as a YAML stream, the objects join --install would apply: the namespace and the
// chart's objects. With --dry-run=server the member's API server first checks each (on stderr, what it did).
func (o *joinOptions) printInstall(ctx context.Context, member *rest.Config, values install.AgentValues, out, errOut io.Writer) error {
	if o.dryRun == cmdutil.DryRunServer {
		checked := func(msg string) { fmt.Fprintln(errOut, msg) }
		if err := o.install.installer.Install(ctx, member, o.install.release, o.install.namespace, values, o.dryRun.Options(), checked); err != nil {
			return err
		}
	}
	objs, err := o.install.installer.Objects(o.install.release, o.install.namespace, values)
	if err != nil {
		return err
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(o.install.namespace)
	for _, obj := range append([]*unstructured.Unstructured{ns}, objs...) {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "---\n%s", data)
	}
	return nil
}

func (o *unjoinOptions) uninstallAgent(ctx context.Context, out io.Writer) error {
	member, err := agent.MemberKubeconfig(o.memberKubeconfig, o.memberContext).ClientConfig()
	if err != nil {
		return fmt.Errorf("--cluster-kubeconfig: %w", err)
	}
	if o.dryRun == cmdutil.DryRunClient {
		fmt.Fprintf(out, "agent release %s would be removed from namespace %s of the member (dry run)\n", o.install.release, o.install.namespace)
		return nil
	}
	deleted, err := o.install.installer.Uninstall(ctx, member, o.install.release, o.install.namespace, o.dryRun.Options())
	for _, d := range deleted {
		fmt.Fprintln(out, "deleted "+d+o.dryRun.Suffix())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "agent release %s removed from the member (%d objects)%s\n", o.install.release, len(deleted), o.dryRun.Suffix())
	return nil
}
