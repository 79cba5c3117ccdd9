package interpreter

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

// Customization is an InterpreterCustomization compiled: the operations it sets, ready to run.
type Customization struct {
	// Name is the InterpreterCustomization's name (built-ins are named "builtin:<name>").
	Name   string
	Target schema.GroupVersionKind
	// programs holds each operation the customization sets.
	programs map[Operation]Program
}

// expressions lists the operations a customization sets, with their expressions.
func expressions(rules *configv1alpha1.CustomizationRules) map[Operation]*configv1alpha1.Expression {
	all := map[Operation]*configv1alpha1.Expression{
		OpReplicaResource:          rules.ReplicaResource,
		OpReplicaRevision:          rules.ReplicaRevision,
		OpRetention:                rules.Retention,
		OpStatusReflection:         rules.StatusReflection,
		OpStatusAggregation:        rules.StatusAggregation,
		OpHealthInterpretation:     rules.HealthInterpretation,
		OpDependencyInterpretation: rules.DependencyInterpretation,
	}
	for op, e := range all {
		if e == nil {
			delete(all, op)
		}
	}
	return all
}

// Compile compiles every operation of ic. The errors name the field of each expression that does not
// compile and say why and where, as admission reports them.
func Compile(ic *configv1alpha1.InterpreterCustomization) (*Customization, field.ErrorList) {
	c := &Customization{Name: ic.Name, programs: map[Operation]Program{}}
	var errs field.ErrorList
	gv, err := schema.ParseGroupVersion(ic.Spec.Target.APIVersion)
	if err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "target", "apiVersion"), ic.Spec.Target.APIVersion, err.Error()))
	}
	c.Target = gv.WithKind(ic.Spec.Target.Kind)
	path := field.NewPath("spec", "customizations")
	for op, e := range expressions(&ic.Spec.Customizations) {
		if (e.CEL == "") == (e.LuaScript == "") {
			errs = append(errs, field.Invalid(path.Child(string(op)), "", "exactly one of cel and luaScript must be set"))
			continue
		}
		lang, name, source := languageOf(e)
		p, err := lang.Compile(op, source)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child(string(op), name), source, compactError(err)))
			continue
		}
		c.programs[op] = p
	}
	return c, errs
}

// languageOf returns the language an expression is written in, the name of its field and its source.
func languageOf(e *configv1alpha1.Expression) (Language, string, string) {
	if e.LuaScript != "" && e.CEL == "" {
		return Lua{}, "luaScript", e.LuaScript
	}
	return CEL{}, "cel", e.CEL
}

// compactError puts a compiler's multi-line message (each error, the source line and a caret) on fewer
// lines, keeping the positions.
func compactError(err error) string {
	var lines []string
	for l := range strings.Lines(err.Error()) {
		if l = strings.TrimRight(l, "\n"); strings.HasPrefix(l, "ERROR:") || len(lines) == 0 {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// Sets says whether the customization sets op.
func (c *Customization) Sets(op Operation) bool {
	if c == nil {
		return false
	}
	_, ok := c.programs[op]
	return ok
}

// Error is an operation of a customization or a webhook that failed: it names both, so a person reading a
// binding's condition knows which object to fix.
type Error struct {
	Customization string
	// Webhook names the webhook that failed (its configuration and its name) when a webhook was asked.
	Webhook   string
	Operation Operation
	Err       error
}

func (e *Error) Error() string {
	if e.Webhook != "" {
		return fmt.Sprintf("InterpreterWebhookConfiguration %s: %s: %v", e.Webhook, webhookOps[e.Operation], e.Err)
	}
	return fmt.Sprintf("InterpreterCustomization %s: %s: %v", e.Customization, e.Operation, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// eval runs op with object and the operation's other variables, and checks the kind of value it returned.
func (c *Customization) eval(op Operation, object map[string]any, vars map[string]any) (any, error) {
	all := map[string]any{"object": object}
	for k, v := range vars {
		all[k] = v
	}
	out, err := run(c.programs[op], all)
	if err == nil {
		err = checkResult(signatures[op].result, out)
	}
	if err != nil {
		return nil, &Error{Customization: c.Name, Operation: op, Err: err}
	}
	return out, nil
}

func checkResult(kind resultKind, out any) error {
	ok := false
	switch kind {
	case resultMap:
		_, ok = out.(map[string]any)
	case resultList:
		_, ok = out.([]any)
	case resultBool:
		_, ok = out.(bool)
	}
	if !ok {
		return fmt.Errorf("returned %T, want a %s", out, [...]string{"map", "list", "bool"}[kind])
	}
	return nil
}
