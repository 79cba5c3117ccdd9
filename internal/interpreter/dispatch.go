package interpreter

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Interpreter answers for any kind: with the operation of the kind's customization when one sets it, else
// with the built-in rule. A nil *Interpreter knows only the built-in rules and the shipped customizations.
type Interpreter struct {
	Registry *Registry
}

// New returns an interpreter reading user customizations from reader (a cached client; nil: none).
func New(reader ctrlclient.Reader) *Interpreter { return &Interpreter{Registry: NewRegistry(reader)} }

func (i *Interpreter) customization(ctx context.Context, obj *unstructured.Unstructured, op Operation) (*Customization, error) {
	var r *Registry
	if i != nil {
		r = i.Registry
	}
	c, err := r.For(ctx, obj.GroupVersionKind())
	if err != nil || !c.Sets(op) {
		return nil, err
	}
	return c, nil
}

// Replicas returns a workload's replica count and one replica's requests; ok is false for kinds without
// replicas.
func (i *Interpreter) Replicas(ctx context.Context, obj *unstructured.Unstructured) (replicas int32, requests corev1.ResourceList, ok bool, err error) {
	replicas, req, ok, err := i.Requirements(ctx, obj)
	if req != nil {
		requests = req.ResourceRequest
	}
	return replicas, requests, ok, err
}

// Requirements returns a workload's replica count and one replica's requirements (requests and node
// claim); ok is false for kinds without replicas.
func (i *Interpreter) Requirements(ctx context.Context, obj *unstructured.Unstructured) (replicas int32, req *workv1alpha1.ReplicaRequirements, ok bool, err error) {
	c, err := i.customization(ctx, obj, OpReplicaResource)
	if err != nil {
		return 0, nil, false, err
	}
	if c == nil {
		replicas, req, ok = Requirements(obj)
		return replicas, req, ok, nil
	}
	replicas, req, err = c.Requirements(obj)
	return replicas, req, err == nil, err
}

// ReviseReplicas writes a cluster's share of the replicas into its manifest. A customized kind without
// replicaRevision keeps its count in spec.replicas, like the native workloads.
func (i *Interpreter) ReviseReplicas(ctx context.Context, obj *unstructured.Unstructured, replicas int32) error {
	c, err := i.customization(ctx, obj, OpReplicaRevision)
	if err != nil {
		return err
	}
	if c != nil {
		return c.ReviseReplicas(obj, replicas)
	}
	if c, err := i.customization(ctx, obj, OpReplicaResource); err != nil || c != nil {
		if err == nil {
			err = unstructured.SetNestedField(obj.Object, int64(replicas), "spec", "replicas")
		}
		return err
	}
	ReviseReplicas(obj, replicas)
	return nil
}

// RetainedFields returns the dotted paths of the fields of a cluster's manifest that its kind's
// customization says members own. The manifest keeps them, as the starting values of a new member object;
// the executor leaves them out where the member object has them.
func (i *Interpreter) RetainedFields(ctx context.Context, obj *unstructured.Unstructured) ([]string, error) {
	c, err := i.customization(ctx, obj, OpRetention)
	if err != nil || c == nil {
		return nil, err
	}
	return c.Retained(obj)
}

// Observe judges a member object (its manifest with the status its member reported): the status to report
// and its health. customized is false when no customization has a say, and then status and health are the
// caller's to keep (the member agent judged them with the built-in rules).
func (i *Interpreter) Observe(ctx context.Context, obj *unstructured.Unstructured) (status map[string]any, health workv1alpha1.ResourceHealth, customized bool, err error) {
	status, _, _ = unstructured.NestedMap(obj.Object, "status")
	health = workv1alpha1.ResourceUnknown
	c, err := i.customization(ctx, obj, OpStatusReflection)
	if err != nil {
		return nil, health, false, err
	}
	if c != nil {
		customized = true
		if status, err = c.ReflectStatus(obj); err != nil {
			return nil, health, true, err
		}
	}
	if c, err = i.customization(ctx, obj, OpHealthInterpretation); err != nil || c == nil {
		return status, health, customized, err
	}
	healthy, err := c.Healthy(obj)
	if err != nil {
		return status, health, true, err
	}
	health = workv1alpha1.ResourceUnhealthy
	if healthy {
		health = workv1alpha1.ResourceHealthy
	}
	return status, health, true, nil
}

// AggregateStatus folds the fleet's statuses into the template's status; nil when the kind has no
// aggregation. A customized kind's status is its customization's, with the hub's conditions and
// observedGeneration where the kind's status schema takes them (fleetstatus.go).
func (i *Interpreter) AggregateStatus(ctx context.Context, template *unstructured.Unstructured, fleet Fleet) (map[string]any, error) {
	c, err := i.customization(ctx, template, OpStatusAggregation)
	if err != nil {
		return nil, err
	}
	if c != nil {
		status, err := c.AggregateStatus(template, fleet.Members)
		if err == nil {
			addFleetStatus(status, template, fleet)
		}
		return status, err
	}
	return AggregateStatus(template, fleet), nil
}

// Dependencies lists what a template needs in the same clusters.
func (i *Interpreter) Dependencies(ctx context.Context, obj *unstructured.Unstructured) ([]Dependency, error) {
	c, err := i.customization(ctx, obj, OpDependencyInterpretation)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return c.Dependencies(obj)
	}
	return Dependencies(obj), nil
}
