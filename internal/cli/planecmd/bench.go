package planecmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/bench"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/devenv"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmarks: each starts its own environment, measures and prints percentiles"}
	cmd.AddCommand(newBenchRegisterCommand(), newBenchPropagationCommand(), newBenchScaleCommand(), newBenchFailoverCommand(), newBenchProxyCommand(), newBenchFleetListCommand(), newBenchGetClustersCommand(), newBenchMCSCommand(), newBenchDashboardCommand(), newBenchRolloutCommand(), newBenchAddOnCommand(), newBenchPlotCommand())
	return cmd
}

// runBench runs a benchmark until it ends or Ctrl-C: its table on stdout, its progress lines on stderr. Each
// benchmark validates its options before it starts anything.
func runBench(run func(ctx context.Context, out io.Writer, progress func(string)) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		ctx, cancel := cmdutil.SignalContext()
		defer cancel()
		return run(ctx, cmd.OutOrStdout(), cmdutil.NewProgress(cmd.ErrOrStderr()).Step)
	}
}

func newBenchRegisterCommand() *cobra.Command {
	o := bench.RegisterOptions{}
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Time from agent start to Cluster Ready, for simulated agents joining a hub in this process",
		Args:  cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunRegister(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Clusters, "clusters", 20, "number of simulated agents")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchProxyCommand() *cobra.Command {
	o := bench.ProxyOptions{}
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Latency of a GET in a push member straight to it and through the hub's proxy",
		Args:  cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunProxy(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Requests, "requests", 200, "GETs timed each way")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchFleetListCommand() *cobra.Command {
	o := bench.FleetListOptions{}
	cmd := &cobra.Command{
		Use:   "fleet-list",
		Short: "Latency of a fleet list through the hub over 1 and 10 clusters (one push member registered under several names)",
		Args:  cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunFleetList(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntSliceVar(&o.Clusters, "clusters", []int{1, 10}, "fleet sizes to time: clusters read by one list")
	cmd.Flags().IntVar(&o.Objects, "objects", 20, "ConfigMaps in the member, all returned by each cluster's read")
	cmd.Flags().IntVar(&o.Requests, "requests", 200, "lists timed per size")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchGetClustersCommand() *cobra.Command {
	o := bench.GetClustersOptions{}
	cmd := &cobra.Command{
		Use:   "get-clusters",
		Short: "Wall time of flotilla get clusters (table and wide) on a hub with N hollow clusters",
		Args:  cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunGetClusters(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Clusters, "clusters", 1000, "hollow clusters on the hub")
	cmd.Flags().IntVar(&o.Requests, "requests", 5, "runs timed per output")
	cmd.Flags().StringVar(&o.Compare, "compare", "", "another flotilla binary (an earlier build) whose table to time the same way on the same fleet")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchPropagationCommand() *cobra.Command {
	o := bench.PropagationOptions{Members: 2, Objects: 100, Replicas: 1, Mode: devenv.ModePull, Timeout: 10 * time.Minute,
		Waves: []string{"create", "update", "delete"}, Rest: time.Minute}
	cmd := &cobra.Command{
		Use:   "propagation",
		Short: "Time each stage from hub to members for Deployments created, updated and deleted on a local fleet",
		Long: `Start a hub and --members member clusters (as flotilla up does), place --objects Deployments on
every member, then change every image, then delete them all. For each object and member it times:
binding scheduled, Work written, applied in the member, Available in the member, status aggregated on
the hub (deletes: Work, member object, binding and template gone), and reports percentiles, member
changes per second and the CPU time of the hub, the members and the agents.`,
		Args: cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunPropagation(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Members, "members", o.Members, "number of member clusters")
	cmd.Flags().IntVar(&o.Objects, "objects", o.Objects, "number of Deployments")
	cmd.Flags().Int32Var(&o.Replicas, "replicas", o.Replicas, "replicas of each Deployment")
	cmd.Flags().StringVar(&o.Mode, "mode", o.Mode, "how members join: pull, push or mixed")
	cmd.Flags().BoolVar(&o.Sequential, "sequential", false, "one object at a time, each finished everywhere before the next")
	cmd.Flags().StringSliceVar(&o.Waves, "waves", o.Waves, "waves to run: create, create,update or create,update,delete")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "longest wait for one wave")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	cmd.Flags().StringVar(&o.ProfileDir, "profile-dir", "", "start the hub with --profiling and save its profiles here: heap, goroutines and 20 s of CPU at rest, and the CPU during each wave")
	cmd.Flags().DurationVar(&o.Rest, "rest", o.Rest, "after the create wave, watch the fleet at rest this long: the hub's writes and the CPU per cluster and minute (0: skip)")
	cmd.Flags().IntVar(&o.MemberNice, "member-nice", 0, "run the members and agents at this niceness (1-19), so the hub gets the CPU first, as on cores of its own")
	return cmd
}

func newBenchScaleCommand() *cobra.Command {
	o := bench.ScaleOptions{Clusters: 100, WorksPerCluster: 1, Objects: 5, Settle: 30 * time.Second, GracePeriod: 40 * time.Second}
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "A hub with many simulated (hollow) pull agents: steady-state cost, heartbeat handling, fan-out",
		Long: `Start a hub as a child process and --clusters hollow pull agents in this process. Each joins
through the real protocol, renews its Lease every quarter of the hub's --cluster-grace-period (at least
every 10 s), reports its status when it changes and
acknowledges its Works as applied and healthy, with no member cluster behind it. Reports the hub's CPU
and memory at steady state (--works-per-cluster Deployments placed on every cluster), the time from an
agent's report to the Cluster's Ready condition, and the time to fan --objects objects out to every
cluster, one after another.`,
		Args: cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunScale(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Clusters, "clusters", o.Clusters, "number of hollow clusters")
	cmd.Flags().IntVar(&o.WorksPerCluster, "works-per-cluster", o.WorksPerCluster, "Deployments placed on every cluster before the steady state is measured")
	cmd.Flags().IntVar(&o.Objects, "objects", o.Objects, "objects fanned out to every cluster, one after another")
	cmd.Flags().DurationVar(&o.Settle, "settle", o.Settle, "how long the fleet settles before the steady state is sampled (and how long it is sampled)")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	cmd.Flags().StringVar(&o.ProfileDir, "profile-dir", "", "start the hub with --profiling and save its profiles here: heap, goroutines and 20 s of CPU at rest, and the CPU during the fan-out")
	cmd.Flags().DurationVar(&o.GracePeriod, "cluster-grace-period", o.GracePeriod, "the hub's --cluster-grace-period; agents renew their Leases every quarter of it, at least every 10 s")
	cmd.Flags().IntVar(&o.Hubs, "hubs", o.Hubs, "run the hub as this many processes on an etcd of the benchmark's own (up to 8), with --shard when more than one; the agents join the first; 0: one hub on its embedded etcd")
	return cmd
}

func newBenchFailoverCommand() *cobra.Command {
	// The hub's shortest grace period by default: the quickest failover there is to measure.
	o := bench.FailoverOptions{Members: 3, Objects: 10, Replicas: 2, GracePeriod: clusterstatus.MinGracePeriod,
		Toleration: 20 * time.Second, Timeout: 10 * time.Minute}
	cmd := &cobra.Command{
		Use:   "failover",
		Short: "Freeze one member of a local fleet and time how its replicas move to the others, and its cleanup after",
		Long: `Start a hub (with --cluster-grace-period) and --members pull members (as
flotilla up does), divide --objects Deployments of --replicas replicas over the members with a policy
that tolerates the members' NoExecute health taints for --toleration, and freeze member1 (SIGSTOP of its
cluster and its agent, as a hung machine). Times, per object, from the freeze: the member's NoExecute
taint, the binding rescheduled without it, the replacement applied in the other members, the replacement
available as the hub reports it; samples the available replicas on the live members meanwhile (they must
not drop below what those members ran before: no gap); then resumes member1 and times the removal of its
evicted copies.`,
		Args: cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunFailover(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Members, "members", o.Members, "number of member clusters, member1 is frozen")
	cmd.Flags().IntVar(&o.Objects, "objects", o.Objects, "number of Deployments")
	cmd.Flags().Int32Var(&o.Replicas, "replicas", o.Replicas, "replicas of each Deployment, divided over the members")
	cmd.Flags().DurationVar(&o.GracePeriod, "cluster-grace-period", o.GracePeriod, "the hub's --cluster-grace-period: how long a member may miss heartbeats")
	cmd.Flags().DurationVar(&o.Toleration, "toleration", o.Toleration, "how long the policy tolerates a member's NoExecute health taints (whole seconds)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "longest wait for the fleet to run in full, for the failover and for the cleanup")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchPlotCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "plot FILE.json...",
		Short: "Draw PNG charts from the JSON that bench propagation, scale and failover write with --out",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			written, err := bench.Plot(dir, files)
			for _, f := range written {
				fmt.Fprintln(cmd.OutOrStdout(), f)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "out-dir", ".", "directory for the PNG files")
	return cmd
}

func newBenchMCSCommand() *cobra.Command {
	o := bench.MCSOptions{Changes: 20, Timeout: 2 * time.Minute}
	cmd := &cobra.Command{
		Use:   "mcs",
		Short: "Endpoint propagation of a multi-cluster Service: provider scale-out to complete EndpointSlices in a consumer",
		Long: `Start a hub and three pull members, export Service web whose Deployment is divided over member1
and member2 to member3, then scale the Deployment out one pod at a time, --changes times. For each
change it times, from the change on the hub, the providers running the new pod with an IP and
member3's imported EndpointSlices holding exactly the providers' pod IPs.`,
		Args: cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunMCS(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Changes, "changes", o.Changes, "number of scale-outs timed")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "longest wait for one change")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchDashboardCommand() *cobra.Command {
	o := bench.DashboardOptions{Clusters: 100, Templates: 1000, Spread: 3, Requests: 50, Updates: 20, Settle: 30 * time.Second, Baseline: true}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "The hub's dashboard over hollow clusters: page times, live-update latency, the memory it adds",
		Long: `Start a hub as a child process, join --clusters hollow pull agents (as bench scale does) and place
--templates Deployments on about --spread clusters each (one policy per group of --spread clusters),
then measure the hub's dashboard as the admin: --requests GETs of the fleet page and of the workloads
page (its default view and every row), and --updates live changes (taint or untaint a cluster, scale a
Deployment), each timed from its request to the first event on the open event stream and to a refresh
of the page that shows it. With --baseline (the default) the hub is restarted on the same fleet with
--dashboard=false, then with the dashboard, before it is measured: the difference of resident memory is
what the dashboard adds.`,
		Args: cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunDashboard(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Clusters, "clusters", o.Clusters, "number of hollow clusters")
	cmd.Flags().IntVar(&o.Templates, "templates", o.Templates, "number of Deployments")
	cmd.Flags().IntVar(&o.Spread, "spread", o.Spread, "clusters each Deployment is placed on")
	cmd.Flags().IntVar(&o.Requests, "requests", o.Requests, "GETs timed per page")
	cmd.Flags().IntVar(&o.Updates, "updates", o.Updates, "live changes timed")
	cmd.Flags().DurationVar(&o.Settle, "settle", o.Settle, "how long the hub runs, once the templates are placed and after each restart, before it is measured")
	cmd.Flags().BoolVar(&o.Baseline, "baseline", o.Baseline, "restart the hub on the fleet without the dashboard, then with it, for the memory the dashboard adds (false: measure the hub that placed the templates)")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchRolloutCommand() *cobra.Command {
	o := bench.RolloutOptions{Members: 3, Templates: 5, Changes: 3, MinSuccessTime: 2 * time.Second, Timeout: 5 * time.Minute}
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "How soon the hub starts each wave of a progressive rollout once the previous one succeeded",
		Long: `Start a hub as a child process and join --members hollow pull agents (as bench scale does; they
report their Works applied and healthy at once, so the hub alone is measured), place --templates
Deployments on every cluster with a policy that rolls changes out Progressive, one cluster at a time
(maxConcurrency 1), each cluster healthy for --min-success-time before the next; then change every
template --changes times, each rolled out to every cluster (RolloutComplete) before the next. From a
watch of the Works it times each wave after the first: from the previous cluster's Work reporting the
new revision healthy plus minSuccessTime to the next cluster's Work updated to it; and it counts the
hub's API requests per template change.`,
		Args: cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunRollout(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Members, "members", o.Members, "number of hollow clusters, each a wave of its own")
	cmd.Flags().IntVar(&o.Templates, "templates", o.Templates, "number of Deployments, each placed on every cluster")
	cmd.Flags().IntVar(&o.Changes, "changes", o.Changes, "changes of every template, each rolled out in full before the next")
	cmd.Flags().DurationVar(&o.MinSuccessTime, "min-success-time", o.MinSuccessTime, "the policy's minSuccessTime: how long a cluster stays healthy before the next wave")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "longest wait for the first placement and for each change's rollout")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchAddOnCommand() *cobra.Command {
	o := bench.AddOnOptions{Clusters: 100, Rest: time.Minute, Timeout: 5 * time.Minute}
	cmd := &cobra.Command{
		Use:   "addon",
		Short: "The hub's cost of one add-on on many hollow clusters: time to Available everywhere, writes at rest",
		Long: `Start a hub as a child process and join --clusters hollow pull agents (as bench scale does; they
report their Works applied and healthy), enable one add-on (a ConfigMap and a Deployment per cluster) on
every cluster by a Placement, time how long until it is Available on all of them, then count the hub API's
write requests for --rest, per cluster per minute: those of the add-on's kinds, Works and RBAC (the goal:
at most 1), and all of them.`,
		Args: cobra.NoArgs,
		RunE: runBench(func(ctx context.Context, out io.Writer, progress func(string)) error {
			return bench.RunAddOn(ctx, o, out, progress)
		}),
	}
	cmd.Flags().IntVar(&o.Clusters, "clusters", o.Clusters, "number of hollow clusters, each enabled with the add-on")
	cmd.Flags().DurationVar(&o.Rest, "rest", o.Rest, "how long the hub's writes are counted at rest (at least 10s)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "longest wait for the add-on to be Available on every cluster")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}
