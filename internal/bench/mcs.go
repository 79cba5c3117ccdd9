package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/devenv"
	"github.com/flotilla-io/flotilla/internal/mcs"
)

// MCSOptions configure `flotilla bench mcs`.
type MCSOptions struct {
	// Changes is how many scale-outs are timed, one pod each.
	Changes int
	// Timeout bounds each wait.
	Timeout time.Duration
	// Out, if set, receives the results as JSON.
	Out string
}

// Validate checks the options before anything starts.
func (o *MCSOptions) Validate() error {
	switch {
	case o.Changes < 1 || o.Changes > 100:
		return fmt.Errorf("--changes %d: must be between 1 and 100", o.Changes)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	return nil
}

// MCSResult is what `flotilla bench mcs` measured: over the changes, seconds from a scale-out on the hub
// until the providers run the new pod with an IP (podsRunning) and until the consumer's imported
// EndpointSlices hold exactly the providers' pod IPs (consumerComplete), and from the first to the second
// (endpointPropagation: what multi-cluster services add to a scale-out).
type MCSResult struct {
	Members int                           `json:"members"`
	Changes int                           `json:"changes"`
	Stages  map[string]map[string]float64 `json:"stages"`
}

const (
	mcsMembers       = 3
	mcsService       = "web"
	stagePodsRunning = "podsRunning"
	stageConsumer    = "consumerComplete"
	stagePropagation = "endpointPropagation"
)

// RunMCS starts a hub and three pull members, exports a Service whose Deployment is divided over member1
// and member2 to member3, then scales the Deployment out one pod at a time and times each change until
// member3's imported EndpointSlices are complete.
func RunMCS(ctx context.Context, o MCSOptions, out io.Writer, progress func(string)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	fleet, err := startMemberFleet(ctx, "mcs", devenv.UpOptions{Members: mcsMembers, Mode: devenv.ModePull}, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()
	providers, consumer := []string{devenv.MemberName(1), devenv.MemberName(2)}, devenv.MemberName(3)
	replicas := int32(2)
	if err := createMCSObjects(ctx, fleet.admin, providers, consumer, replicas); err != nil {
		return err
	}
	complete := func(ctx context.Context) (running, imported bool, err error) {
		ips := map[string]bool{}
		for _, p := range providers {
			pods, err := fleet.members[p].CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + mcsService})
			if err != nil {
				return false, false, err
			}
			for _, pod := range pods.Items {
				if pod.DeletionTimestamp == nil && pod.Status.PodIP != "" {
					ips[pod.Status.PodIP] = true
				}
			}
		}
		slices, err := fleet.members[consumer].DiscoveryV1().EndpointSlices(benchNamespace).List(ctx,
			metav1.ListOptions{LabelSelector: mcs.LabelServiceName + "=" + mcsService})
		if err != nil {
			return false, false, err
		}
		got := map[string]bool{}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					got[a] = true
				}
			}
		}
		running = len(ips) == int(replicas)
		imported = running && len(got) == len(ips)
		for a := range got {
			imported = imported && ips[a]
		}
		return running, imported, nil
	}
	waitImported := func(record func(running, imported bool)) error {
		return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
			running, imported, err := complete(ctx)
			if err != nil {
				return false, nil // a failed read says nothing; the next poll tells
			}
			record(running, imported)
			return imported, nil
		})
	}
	if err := waitImported(func(bool, bool) {}); err != nil {
		return fmt.Errorf("waiting for %s to import the first %d endpoints: %w", consumer, replicas, err)
	}
	progress(fmt.Sprintf("%s imports %d endpoints from %v", consumer, replicas, providers))
	var running, imported, propagated []time.Duration
	for i := range o.Changes {
		replicas++
		start := time.Now()
		if err := scaleBench(ctx, fleet.admin, replicas); err != nil {
			return err
		}
		var ranAt time.Time
		err := waitImported(func(r, _ bool) {
			if r && ranAt.IsZero() {
				ranAt = time.Now()
			}
		})
		if err != nil {
			return fmt.Errorf("change %d (to %d replicas): %w", i+1, replicas, err)
		}
		done := time.Now()
		running, imported, propagated = append(running, ranAt.Sub(start)), append(imported, done.Sub(start)), append(propagated, done.Sub(ranAt))
		progress(fmt.Sprintf("change %d: %d endpoints imported after %.3fs", i+1, replicas, imported[len(imported)-1].Seconds()))
	}
	result := MCSResult{Members: mcsMembers, Changes: o.Changes,
		Stages: map[string]map[string]float64{stagePodsRunning: measure.Percentiles(running), stageConsumer: measure.Percentiles(imported),
			stagePropagation: measure.Percentiles(propagated)}}
	fmt.Fprintf(out, "%d scale-outs of one pod, provided by %v, imported by %s; seconds from the change on the hub (the last row: from the pod running)\n", o.Changes, providers, consumer)
	fmt.Fprintf(out, "%-34s %8s %8s %8s %8s\n", "", "p50", "p90", "p99", "max")
	for _, s := range []string{stagePodsRunning, stageConsumer, stagePropagation} {
		q := result.Stages[s]
		fmt.Fprintf(out, "%-34s %8.3f %8.3f %8.3f %8.3f\n", s, q["p50"], q["p90"], q["p99"], q["max"])
	}
	return writeJSON(o.Out, &result)
}

// createMCSObjects makes the namespace, the Deployment and Service divided over the providers, and the
// ServiceExport imported by the consumer.
func createMCSObjects(ctx context.Context, hub client.Client, providers []string, consumer string, replicas int32) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if err := hub.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	objs := []client.Object{
		&policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: mcsService, Namespace: benchNamespace},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{
					{APIVersion: "apps/v1", Kind: "Deployment", Name: mcsService}, {APIVersion: "v1", Kind: "Service", Name: mcsService}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: providers},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{},
				},
			},
		},
		benchDeployment(mcsService, benchNamespace, replicas, "nginx:1"),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: mcsService, Namespace: benchNamespace},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": mcsService},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}},
		&mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: mcsService, Namespace: benchNamespace,
			Annotations: map[string]string{mcs.AnnotationConsumers: consumer}}},
	}
	for _, o := range objs {
		if err := hub.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func scaleBench(ctx context.Context, hub client.Client, replicas int32) error {
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	d := benchDeployment(mcsService, benchNamespace, replicas, "")
	return hub.Patch(ctx, d, patch)
}
