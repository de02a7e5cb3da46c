package dashboards

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Query is one Prometheus query found in a dashboard's JSON.
type Query struct {
	// Where names what holds it: a panel title or a variable name.
	Where string
	// Expr is the query as written, Grafana variables included.
	Expr string
}

// dashboardJSON is the part of a Grafana dashboard that holds queries.
type dashboardJSON struct {
	Panels      []panelJSON `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panelJSON struct {
	Title   string      `json:"title"`
	Type    string      `json:"type"`
	Panels  []panelJSON `json:"panels"` // a collapsed row's panels
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// labelValues matches a Grafana label_values(selector, label) variable
// query; the selector is PromQL.
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// Queries lists every Prometheus query of a Grafana dashboard's JSON: the
// targets of every panel (those of collapsed rows too), the query
// variables (for label_values(selector, label), the selector) and the
// annotation queries that have an expression. A target without an
// expression is an error: Grafana would show an empty panel.
func Queries(dashboard []byte) ([]Query, error) {
	var d dashboardJSON
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, fmt.Errorf("dashboards: not a dashboard: %w", err)
	}
	var out []Query
	var walk func([]panelJSON) error
	walk = func(panels []panelJSON) error {
		for _, p := range panels {
			if err := walk(p.Panels); err != nil {
				return err
			}
			for i, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					return fmt.Errorf("dashboards: panel %q: target %d has no expression", p.Title, i)
				}
				out = append(out, Query{Where: "panel " + p.Title, Expr: t.Expr})
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, ok := v.Query.(string)
		if !ok {
			return nil, fmt.Errorf("dashboards: variable %s: query %v is not a string", v.Name, v.Query)
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = m[1]
		}
		out = append(out, Query{Where: "variable " + v.Name, Expr: q})
	}
	for _, a := range d.Annotations.List {
		if strings.TrimSpace(a.Expr) != "" {
			out = append(out, Query{Where: "annotation " + a.Name, Expr: a.Expr})
		}
	}
	return out, nil
}

// grafanaVariable matches $name and ${name} (with an optional :format).
var grafanaVariable = regexp.MustCompile(`\$\{([a-zA-Z_][a-zA-Z0-9_]*)(?::[a-z]+)?\}|\$([a-zA-Z_][a-zA-Z0-9_]*)`)

// ExpandVariables replaces Grafana's variables in a query with values that
// make it plain PromQL: the range variables $__rate_interval, $__range and
// $__interval become durations, every other variable the text "x"
// (they only appear as label values in these dashboards).
func ExpandVariables(expr string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		name := strings.Trim(v, "${}")
		name, _, _ = strings.Cut(name, ":")
		switch name {
		case "__rate_interval", "__range", "__interval":
			return "5m"
		}
		return "x"
	})
}

// SelectedMetrics parses a query, after ExpandVariables, as PromQL and
// returns the metric names its selectors select, in order of appearance.
func SelectedMetrics(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(ExpandVariables(expr))
	if err != nil {
		return nil, fmt.Errorf("dashboards: %q does not parse as PromQL: %w", expr, err)
	}
	var names []string
	var unnamed error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				unnamed = fmt.Errorf("dashboards: %q selects series without naming a metric (%s)", expr, vs)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	if unnamed != nil {
		return nil, unnamed
	}
	return names, nil
}
