package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
)

// outputFormats is what -o takes on the commands that list: a table ("" or wide), or an object format
// printed by cli-runtime's printers, as kubectl prints it.
const outputFormats = "wide, name, yaml, json, jsonpath=TEMPLATE, go-template=TEMPLATE, custom-columns=SPEC or custom-columns-file=FILE"

// listOutput is the output flags of a command that lists, as kubectl get has them: -o, --no-headers,
// --show-labels and --show-managed-fields. Every listing prints through it, so the flags mean the same
// everywhere.
type listOutput struct {
	format            string
	noHeaders         bool
	showLabels        bool
	showManagedFields bool
	// withNamespace adds a NAMESPACE column from each row's object: for a namespaced kind with -A.
	withNamespace bool
}

func (o *listOutput) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.format, "output", "o", "", "output format: "+outputFormats)
	fs.BoolVar(&o.noHeaders, "no-headers", false, "print tables and custom columns without their header line")
	fs.BoolVar(&o.showLabels, "show-labels", false, "print each object's labels as the last column of the table")
	fs.BoolVar(&o.showManagedFields, "show-managed-fields", false, "keep metadata.managedFields in -o json and -o yaml")
}

// table says whether the format is a table ("" or wide) rather than objects.
func (o listOutput) table() bool { return tableOutput(o.format) }

func (o listOutput) validate() error {
	if o.table() {
		return nil
	}
	_, err := o.objectPrinter()
	return err
}

// tablePrinter is cli-runtime's table printer with the flags' options. One printer prints the headers once:
// a watch keeps it and prints each change as a table of one row.
func (o listOutput) tablePrinter() printers.ResourcePrinter {
	return printers.NewTablePrinter(printers.PrintOptions{Wide: o.format == "wide", NoHeaders: o.noHeaders, ShowLabels: o.showLabels, WithNamespace: o.withNamespace})
}

// print prints a listing: a table made by table, or the objects (a List or one object carrying apiVersion
// and kind) in an object format. An empty table is "No resources found" on errOut, as kubectl says it.
func (o listOutput) print(out, errOut io.Writer, objects any, table func() *metav1.Table) error {
	if !o.table() {
		return o.printObjects(out, objects)
	}
	t := table()
	if len(t.Rows) == 0 {
		_, err := fmt.Fprintln(errOut, "No resources found")
		return err
	}
	return o.tablePrinter().PrintObj(t, out)
}

// printObjects prints obj, an object or a List carrying apiVersion and kind, in an object format.
func (o listOutput) printObjects(out io.Writer, obj any) error {
	p, err := o.objectPrinter()
	if err != nil {
		return err
	}
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	return p.PrintObj(u, out)
}

// toUnstructured goes through JSON, so that typed objects, Lists of them and plain maps print alike.
func toUnstructured(obj any) (runtime.Object, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u, err := runtime.Decode(unstructured.UnstructuredJSONScheme, data)
	if err != nil {
		return nil, fmt.Errorf("printing %T: %w", obj, err)
	}
	return u, nil
}

// printObject prints obj in an object format with the default flags (managedFields left out).
func printObject(out io.Writer, format string, obj any) error {
	return listOutput{format: format}.printObjects(out, obj)
}

// tableOutput says whether format is printed as a table rather than as objects.
func tableOutput(format string) bool { return format == "" || format == "wide" }

func validateOutput(format string) error { return listOutput{format: format}.validate() }

// objectPrinter is cli-runtime's printer of an object format: name prints KIND.GROUP/NAME lines, jsonpath=
// and go-template= take kubectl's templates, custom-columns= kubectl's column specs; json and yaml leave
// managedFields out unless --show-managed-fields.
func (o listOutput) objectPrinter() (printers.ResourcePrinter, error) {
	kind, template, _ := strings.Cut(o.format, "=")
	switch kind {
	case "name":
		return &printers.NamePrinter{}, nil
	case "json", "yaml":
		if template != "" {
			break
		}
		var p printers.ResourcePrinter = &printers.JSONPrinter{}
		if kind == "yaml" {
			p = &printers.YAMLPrinter{}
		}
		if !o.showManagedFields {
			p = &printers.OmitManagedFieldsPrinter{Delegate: p}
		}
		return p, nil
	case "jsonpath":
		if template == "" {
			return nil, fmt.Errorf("--output %q: jsonpath= needs a template, such as jsonpath='{.items[*].metadata.name}'", o.format)
		}
		p, err := printers.NewJSONPathPrinter(template)
		if err != nil {
			return nil, fmt.Errorf("--output %q: %w", o.format, err)
		}
		return p, nil
	case "go-template":
		if template == "" {
			return nil, fmt.Errorf("--output %q: go-template= needs a template, such as go-template='{{range .items}}{{.metadata.name}} {{end}}'", o.format)
		}
		p, err := printers.NewGoTemplatePrinter([]byte(template))
		if err != nil {
			return nil, fmt.Errorf("--output %q: %w", o.format, err)
		}
		return p, nil
	case "custom-columns", "custom-columns-file":
		if template == "" {
			return nil, fmt.Errorf("--output %q: %s= needs columns, such as custom-columns=NAME:.metadata.name,REGION:.spec.region", o.format, kind)
		}
		newPrinter := newCustomColumns
		if kind == "custom-columns-file" {
			newPrinter = newCustomColumnsFromFile
		}
		p, err := newPrinter(template, o.noHeaders)
		if err != nil {
			return nil, fmt.Errorf("--output %q: %w", o.format, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("--output %q: want %s", o.format, outputFormats)
}

// newTable starts a table with columns; a column named with a trailing "+" is shown with -o wide only.
func newTable(columns ...string) *metav1.Table {
	t := &metav1.Table{}
	for _, c := range columns {
		def := metav1.TableColumnDefinition{Name: strings.TrimSuffix(c, "+"), Type: "string"}
		if strings.HasSuffix(c, "+") {
			def.Priority = 1
		}
		t.ColumnDefinitions = append(t.ColumnDefinitions, def)
	}
	return t
}

// addRow adds obj's row; obj gives --show-labels its labels.
func addRow(t *metav1.Table, obj runtime.Object, cells ...any) {
	t.Rows = append(t.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}})
}

// asList wraps items, which carry their apiVersion and kind, in a List for the object formats.
func asList[T any](items []T) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}
