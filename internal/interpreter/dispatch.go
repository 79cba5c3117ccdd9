package interpreter

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Interpreter answers for any kind, each operation from the first interpreter that has it, in Karmada's
// order: the user's InterpreterCustomization of the kind, a webhook of an InterpreterWebhookConfiguration,
// a customization shipped in the binary, the built-in rule. A nil *Interpreter knows only the built-in rules
// and the shipped customizations.
type Interpreter struct {
	Registry *Registry
}

// New returns an interpreter reading user customizations and webhook configurations from reader (a cached
// client; nil: none).
func New(reader ctrlclient.Reader) *Interpreter { return &Interpreter{Registry: NewRegistry(reader)} }

// choice is who answers one operation for a kind: a customization, a webhook, or neither (the built-in
// rule).
type choice struct {
	customization *Customization
	webhook       *Webhook
	// userCustomized says the user customized the kind: its shipped customization is not used, even for an
	// operation the user's leaves out.
	userCustomized bool
}

func (c choice) builtin() bool { return c.customization == nil && c.webhook == nil }

// choose finds who answers op for obj's kind.
func (i *Interpreter) choose(ctx context.Context, obj *unstructured.Unstructured, op Operation) (choice, error) {
	var r *Registry
	if i != nil {
		r = i.Registry
	}
	gvk := obj.GroupVersionKind()
	c, err := r.user(ctx, gvk)
	if err != nil || c.Sets(op) {
		return choice{customization: c}, err
	}
	w, err := r.webhook(ctx, gvk, op)
	if err != nil || w != nil {
		return choice{webhook: w, userCustomized: c != nil}, err
	}
	return fallback(gvk, op, c != nil)
}

// fallback is who answers op for gvk after the user's customization and the webhooks: a shipped
// customization (unless the user customized the kind), or the built-in rule. A webhook with failurePolicy
// Ignore that failed falls back here.
func fallback(gvk schema.GroupVersionKind, op Operation, userCustomized bool) (choice, error) {
	if userCustomized {
		return choice{}, nil
	}
	c, err := shipped(gvk)
	if err != nil || !c.Sets(op) {
		return choice{}, err
	}
	return choice{customization: c}, nil
}

// ask calls the chosen webhook with req. A failed call is an *Error, or, when the webhook's failurePolicy is
// Ignore, falls back: resp is nil and next says who answers instead.
func ask(ctx context.Context, ch choice, obj *unstructured.Unstructured, op Operation, req *configv1alpha1.ResourceInterpreterRequest) (resp *configv1alpha1.ResourceInterpreterResponse, next choice, err error) {
	if err := fillRequest(req, obj); err != nil {
		return nil, ch, &Error{Webhook: ch.webhook.describe(), Operation: op, Err: err}
	}
	resp, err = ch.webhook.call(ctx, op, req)
	if err == nil || !ch.webhook.Ignore {
		return resp, ch, err
	}
	log.FromContext(ctx).V(1).Info("interpreter webhook failed; failurePolicy Ignore lets the next interpreter answer", "error", err.Error())
	next, err = fallback(obj.GroupVersionKind(), op, ch.userCustomized)
	return nil, next, err
}

// Interprets says whether anything but the built-in rules has a say about a kind: a customization, or a
// webhook for any operation.
func (i *Interpreter) Interprets(ctx context.Context, gvk schema.GroupVersionKind) (bool, error) {
	var r *Registry
	if i != nil {
		r = i.Registry
	}
	if c, err := r.For(ctx, gvk); c != nil || err != nil {
		return c != nil, err
	}
	for op := range webhookOps {
		if w, err := r.webhook(ctx, gvk, op); w != nil || err != nil {
			return w != nil, err
		}
	}
	return false, nil
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
	ch, err := i.choose(ctx, obj, OpReplicaResource)
	if err != nil {
		return 0, nil, false, err
	}
	if ch.webhook != nil {
		var resp *configv1alpha1.ResourceInterpreterResponse
		if resp, ch, err = ask(ctx, ch, obj, OpReplicaResource, &configv1alpha1.ResourceInterpreterRequest{}); err != nil {
			return 0, nil, false, err
		}
		if resp != nil {
			replicas, req, err = ch.webhook.replicas(resp)
			return replicas, req, err == nil, err
		}
	}
	if ch.builtin() {
		replicas, req, ok = Requirements(obj)
		return replicas, req, ok, nil
	}
	replicas, req, err = ch.customization.Requirements(obj)
	return replicas, req, err == nil, err
}

// ReviseReplicas writes a cluster's share of the replicas into its manifest. A kind customized (or answered
// by a webhook) for its replicas but not for their revision keeps its count in spec.replicas, like the
// native workloads.
func (i *Interpreter) ReviseReplicas(ctx context.Context, obj *unstructured.Unstructured, replicas int32) error {
	ch, err := i.choose(ctx, obj, OpReplicaRevision)
	if err != nil {
		return err
	}
	if ch.webhook != nil {
		var resp *configv1alpha1.ResourceInterpreterResponse
		if resp, ch, err = ask(ctx, ch, obj, OpReplicaRevision, &configv1alpha1.ResourceInterpreterRequest{DesiredReplicas: &replicas}); err != nil {
			return err
		}
		if resp != nil {
			return ch.webhook.patch(obj, OpReplicaRevision, resp)
		}
	}
	if !ch.builtin() {
		return ch.customization.ReviseReplicas(obj, replicas)
	}
	if ch, err := i.choose(ctx, obj, OpReplicaResource); err != nil || !ch.builtin() {
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
// the executor leaves them out where the member object has them. Webhooks are not asked (Retain needs the
// member's object, which only the member's executor sees; webhooks are called by the hub alone).
func (i *Interpreter) RetainedFields(ctx context.Context, obj *unstructured.Unstructured) ([]string, error) {
	var r *Registry
	if i != nil {
		r = i.Registry
	}
	c, err := r.For(ctx, obj.GroupVersionKind())
	if err != nil || !c.Sets(OpRetention) {
		return nil, err
	}
	return c.Retained(obj)
}

// Observe judges a member object (its manifest with the status its member reported): the status to report
// and its health. customized is false when no customization or webhook has a say, and then status and
// health are the caller's to keep (the member agent judged them with the built-in rules).
func (i *Interpreter) Observe(ctx context.Context, obj *unstructured.Unstructured) (status map[string]any, health workv1alpha1.ResourceHealth, customized bool, err error) {
	status, _, _ = unstructured.NestedMap(obj.Object, "status")
	health = workv1alpha1.ResourceUnknown
	ch, err := i.choose(ctx, obj, OpStatusReflection)
	if err != nil {
		return nil, health, false, err
	}
	if ch.webhook != nil {
		var resp *configv1alpha1.ResourceInterpreterResponse
		if resp, ch, err = ask(ctx, ch, obj, OpStatusReflection, &configv1alpha1.ResourceInterpreterRequest{}); err != nil {
			return nil, health, true, err
		}
		if resp != nil {
			customized = true
			if status, err = ch.webhook.status(resp); err != nil {
				return nil, health, true, err
			}
		}
	}
	if ch.customization != nil {
		customized = true
		if status, err = ch.customization.ReflectStatus(obj); err != nil {
			return nil, health, true, err
		}
	}
	if ch, err = i.choose(ctx, obj, OpHealthInterpretation); err != nil {
		return status, health, customized, err
	}
	var healthy bool
	if ch.webhook != nil {
		var resp *configv1alpha1.ResourceInterpreterResponse
		if resp, ch, err = ask(ctx, ch, obj, OpHealthInterpretation, &configv1alpha1.ResourceInterpreterRequest{}); err != nil {
			return status, health, true, err
		}
		if resp != nil {
			if healthy, err = ch.webhook.healthy(resp); err != nil {
				return status, health, true, err
			}
			return status, healthOf(healthy), true, nil
		}
	}
	if ch.builtin() {
		return status, health, customized, nil
	}
	if healthy, err = ch.customization.Healthy(obj); err != nil {
		return status, health, true, err
	}
	return status, healthOf(healthy), true, nil
}

func healthOf(healthy bool) workv1alpha1.ResourceHealth {
	if healthy {
		return workv1alpha1.ResourceHealthy
	}
	return workv1alpha1.ResourceUnhealthy
}

// AggregateStatus folds the fleet's statuses into the template's status; nil when the kind has no
// aggregation. A customized kind's status is its customization's (or its webhook's), with the hub's
// conditions and observedGeneration where the kind's status schema takes them (fleetstatus.go).
func (i *Interpreter) AggregateStatus(ctx context.Context, template *unstructured.Unstructured, fleet Fleet) (map[string]any, error) {
	ch, err := i.choose(ctx, template, OpStatusAggregation)
	if err != nil {
		return nil, err
	}
	var status map[string]any
	switch {
	case ch.webhook != nil:
		var resp *configv1alpha1.ResourceInterpreterResponse
		req := &configv1alpha1.ResourceInterpreterRequest{}
		if req.AggregatedStatus, err = aggregatedItems(fleet.Members); err != nil {
			return nil, err
		}
		if resp, ch, err = ask(ctx, ch, template, OpStatusAggregation, req); err != nil {
			return nil, err
		}
		if resp == nil {
			return i.aggregateWith(ch, template, fleet)
		}
		if status, err = ch.webhook.aggregated(template, resp); err != nil {
			return nil, err
		}
	default:
		return i.aggregateWith(ch, template, fleet)
	}
	addFleetStatus(status, template, fleet)
	return status, nil
}

// aggregateWith folds the fleet's statuses with a customization, or the built-in rule.
func (i *Interpreter) aggregateWith(ch choice, template *unstructured.Unstructured, fleet Fleet) (map[string]any, error) {
	if ch.builtin() {
		return AggregateStatus(template, fleet), nil
	}
	status, err := ch.customization.AggregateStatus(template, fleet.Members)
	if err == nil {
		addFleetStatus(status, template, fleet)
	}
	return status, err
}

// Dependencies lists what a template needs in the same clusters.
func (i *Interpreter) Dependencies(ctx context.Context, obj *unstructured.Unstructured) ([]Dependency, error) {
	ch, err := i.choose(ctx, obj, OpDependencyInterpretation)
	if err != nil {
		return nil, err
	}
	if ch.webhook != nil {
		var resp *configv1alpha1.ResourceInterpreterResponse
		if resp, ch, err = ask(ctx, ch, obj, OpDependencyInterpretation, &configv1alpha1.ResourceInterpreterRequest{}); err != nil {
			return nil, err
		}
		if resp != nil {
			return ch.webhook.dependencies(obj, resp)
		}
	}
	if ch.builtin() {
		return Dependencies(obj), nil
	}
	return ch.customization.Dependencies(obj)
}
