//lint:file-ignore SA1019 The SDK deprecates the classic dashboard model for dashboardv2, which only Grafana 12+ with its new dashboard API imports; the classic JSON model is what every Grafana version imports and file-provisions.

package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Dashboard is one dashboard this package builds and the file it is
// committed as.
type Dashboard struct {
	// File is the file name under deploy/grafana/dashboards.
	File string
	// Build builds it.
	Build func() (dashboard.Dashboard, error)
}

// All returns every dashboard, in a stable order.
func All() []Dashboard {
	return []Dashboard{
		{File: "ecagent-fleet-overview.json", Build: FleetOverview},
		{File: "ecagent-host-detail.json", Build: HostDetail},
	}
}

// JSON renders a dashboard as importable Grafana JSON: two-space
// indentation, a trailing newline, "<" and ">" left as they are (the
// default HTML escaping would turn the PromQL `>` into \u003e).
func JSON(d dashboard.Dashboard) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("dashboards: encoding %q: %w", derefTitle(d.Title), err)
	}
	return b.Bytes(), nil
}

func derefTitle(t *string) string {
	if t == nil {
		return ""
	}
	return *t
}

// withPanelIDs numbers the panels of a built dashboard 1, 2, … in layout
// order, rows and the panels of collapsed rows included, so that links to
// a panel (viewPanel=N) stay stable across regenerations.
func withPanelIDs(d dashboard.Dashboard, err error) (dashboard.Dashboard, error) {
	if err != nil {
		return d, fmt.Errorf("dashboards: building %q: %w", derefTitle(d.Title), err)
	}
	next := uint32(0)
	id := func() uint32 { next++; return next }
	for _, p := range d.Panels {
		switch {
		case p.Panel != nil:
			p.Panel.Id = ptr(id())
		case p.RowPanel != nil:
			p.RowPanel.Id = id()
			for i := range p.RowPanel.Panels {
				p.RowPanel.Panels[i].Id = ptr(id())
			}
		}
	}
	return d, nil
}

func ptr[T any](v T) *T { return &v }
