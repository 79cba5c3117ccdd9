package dashboard

import (
	"html/template"
	"strings"
)

// pageNames are the pages; each is web/<name>.html defining "main", inside web/layout.html, with the parts
// pages share (tiles, workload rows, chips, events) in web/shared.html.
var pageNames = []string{"fleet", "cluster", "workloads", "workload", "policies"}

var funcs = template.FuncMap{
	"join":   strings.Join,
	"prefix": func() string { return Prefix },
	// icon gives a state a symbol as well as a colour class, so colour is never the only signal.
	"icon": func(state string) string {
		switch state {
		case "True", stateHealthy:
			return "✔"
		case "False", stateUnhealthy, stateUnschedulable:
			return "✖"
		case stateProgressing:
			return "…"
		}
		return "?"
	},
	"stateClass": func(state string) string {
		switch state {
		case "True", stateHealthy:
			return "ok"
		case "False", stateUnhealthy, stateUnschedulable:
			return "bad"
		}
		return "warn"
	},
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(web, "web/layout.html", "web/shared.html", "web/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}
