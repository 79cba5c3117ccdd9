package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// Shell completion (`flotilla completion bash|zsh|fish|powershell`, cobra's) completes, besides commands and
// flags: cluster names from the hub, kinds from the hub's discovery, namespaces from the hub, and contexts
// from the kubeconfig. The hub is the one the command line names so far (--kubeconfig, --context), so
// completing costs one or two reads; a hub that cannot be reached completes nothing.

// clusterArgs are the commands whose arguments are cluster names: from the first argument, or after the
// word cluster (taint cluster NAME, describe cluster NAME).
var clusterArgs = map[string]bool{"unjoin": true, "kubeconfig": true, "kubectl": true, "taint": false, "describe": false}

// kindArgs are the commands whose arguments are KIND/NAME (completed to KIND/, then to the names of the
// hub's objects of KIND) or, for get, KIND (and cluster names after get clusters).
var kindArgs = map[string]bool{"explain": true, "status": true, "rebalance": true, "history": true, "undo": true, "pause": true, "resume": true, "restart": true, "get": false}

// AddCompletions gives every command of root its completions: positional arguments by the tables above,
// --context and --cluster-context from the kubeconfig, -n/--namespace, --cluster and --clusters from the hub.
func AddCompletions(root *cobra.Command) {
	walk(root, func(cmd *cobra.Command) {
		if cmd.ValidArgsFunction == nil && cmd.Parent() != nil && cmd.Parent().Name() != "dev" && cmd.Parent().Name() != "bench" {
			if fromFirst, ok := clusterArgs[cmd.Name()]; ok && (cmd.Parent() == root) {
				cmd.ValidArgsFunction = completeClusterArgs(fromFirst)
			}
			if slash, ok := kindArgs[cmd.Name()]; ok && (cmd.Parent() == root || cmd.Parent().Name() == "rollout") {
				cmd.ValidArgsFunction = completeKinds(slash)
			}
		}
		flags := cmd.Flags()
		if flags.Lookup("context") != nil && flags.Lookup("kubeconfig") != nil {
			_ = cmd.RegisterFlagCompletionFunc("context", completeContexts("kubeconfig"))
		}
		if flags.Lookup("cluster-context") != nil {
			_ = cmd.RegisterFlagCompletionFunc("cluster-context", completeContexts("cluster-kubeconfig"))
		}
		if flags.Lookup("namespace") != nil && flags.Lookup("kubeconfig") != nil {
			_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces)
		}
		for _, name := range []string{"cluster", "clusters"} {
			if f := flags.Lookup(name); f != nil && f.Value.Type() != "bool" && flags.Lookup("kubeconfig") != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
					return clusterNamesOf(cmd), cobra.ShellCompDirectiveNoFileComp
				})
			}
		}
	})
}

func walk(cmd *cobra.Command, f func(*cobra.Command)) {
	f(cmd)
	for _, c := range cmd.Commands() {
		walk(c, f)
	}
}

// hubOf is the hub as the command line being completed names it so far: --kubeconfig, --context and, where
// the command has it, -n.
func hubOf(cmd *cobra.Command) *cmdutil.HubFlags {
	h := &cmdutil.HubFlags{}
	h.Kubeconfig, _ = cmd.Flags().GetString("kubeconfig")
	h.Overrides.CurrentContext, _ = cmd.Flags().GetString("context")
	h.Overrides.Context.Namespace, _ = cmd.Flags().GetString("namespace")
	return h
}

func clusterNamesOf(cmd *cobra.Command) []string {
	_, c, _, err := hubOf(cmd).Clients()
	if err != nil {
		return nil
	}
	list := &clusterv1alpha1.ClusterList{}
	if err := c.List(cmd.Context(), list); err != nil {
		return nil
	}
	var names []string
	for _, cl := range list.Items {
		names = append(names, cl.Name)
	}
	return names
}

// completeClusterArgs completes cluster names: every argument (fromFirst), or the one after the word
// cluster, which it completes first.
func completeClusterArgs(fromFirst bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		switch {
		case cmd.Name() == "kubectl" && len(args) > 0, cmd.Name() == "kubeconfig" && len(args) > 0:
			return nil, cobra.ShellCompDirectiveDefault
		case fromFirst:
			return clusterNamesOf(cmd), cobra.ShellCompDirectiveNoFileComp
		case len(args) == 0:
			return []string{"cluster"}, cobra.ShellCompDirectiveNoFileComp
		case len(args) == 1 || cmd.Name() == "describe":
			return clusterNamesOf(cmd), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeKinds completes the hub's kinds, as kubectl names them (plural resource names), followed by a
// slash (KIND/NAME) when slash; get completes Flotilla's own words too.
func completeKinds(slash bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if !slash && len(args) > 0 {
			if args[0] == "clusters" || args[0] == "cluster" {
				return clusterNamesOf(cmd), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		h := hubOf(cmd)
		_, c, kube, err := h.Clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if kind, _, ok := strings.Cut(toComplete, "/"); ok {
			return objectNames(cmd, h, c, kube, kind), cobra.ShellCompDirectiveNoFileComp
		}
		lists, _ := kube.Discovery().ServerPreferredResources() // a group that fails to answer leaves out its kinds
		var kinds []string
		if !slash {
			kinds = append(kinds, "clusters", "bindings", "rb", "crb")
		}
		for _, l := range lists {
			for _, r := range l.APIResources {
				if slices.Contains(r.Verbs, "get") && !strings.Contains(r.Name, "/") {
					kinds = append(kinds, r.Name)
				}
			}
		}
		slices.Sort(kinds)
		kinds = slices.Compact(kinds)
		if !slash {
			return kinds, cobra.ShellCompDirectiveNoFileComp
		}
		for i := range kinds {
			kinds[i] += "/"
		}
		return kinds, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// objectNames completes KIND/NAME with the names of the hub's objects of kind, in the namespace of the
// command line (or its kubeconfig context) when the kind is namespaced.
func objectNames(cmd *cobra.Command, h *cmdutil.HubFlags, c client.Client, kube kubernetes.Interface, kind string) []string {
	gvk, namespaced, err := templateKind(kube.Discovery(), kind)
	if err != nil {
		return nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	var opts []client.ListOption
	if namespaced {
		ns, err := h.Namespace()
		if err != nil {
			return nil
		}
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(cmd.Context(), list, opts...); err != nil {
		return nil
	}
	var out []string
	for _, item := range list.Items {
		out = append(out, kind+"/"+item.GetName())
	}
	return out
}

// completeNamespaces completes the hub's namespaces.
func completeNamespaces(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	_, c, _, err := hubOf(cmd).Clients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list := &corev1.NamespaceList{}
	if err := c.List(cmd.Context(), list); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeContexts completes the contexts of the kubeconfig the flag kubeconfigFlag names (the default
// loading rules when it is empty and is the hub's).
func completeContexts(kubeconfigFlag string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		path, _ := cmd.Flags().GetString(kubeconfigFlag)
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if kubeconfigFlag != "kubeconfig" {
			if path == "" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			rules = &clientcmd.ClientConfigLoadingRules{}
		}
		rules.ExplicitPath = path
		cfg, err := rules.Load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for name := range cfg.Contexts {
			names = append(names, name)
		}
		slices.Sort(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
