package ecagent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func checkMonitoring(t *testing.T, ds *appsv1.DaemonSet, r rendered, scenario string) {
	t.Helper()
	podLabels := ds.Spec.Template.Labels
	matches := func(sel map[string]string, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	for _, o := range r["Service"] {
		svc := o.(*corev1.Service)
		if !matches(svc.Spec.Selector, podLabels) {
			t.Errorf("Service %s selects %v, pods have %v", svc.Name, svc.Spec.Selector, podLabels)
		}
		if !svc.Spec.PublishNotReadyAddresses {
			t.Error("an agent whose bus is not in OP must stay scrapable")
		}
		for _, sm := range r["ServiceMonitor"] {
			sm := sm.(*monitoringv1.ServiceMonitor)
			if !matches(sm.Spec.Selector.MatchLabels, svc.Labels) {
				t.Errorf("ServiceMonitor selects %v, Service has %v", sm.Spec.Selector.MatchLabels, svc.Labels)
			}
			if svc.Labels[sm.Spec.JobLabel] != "ecagent" {
				t.Errorf("job label from %s is %q; the alert rules expect job=\"ecagent\"", sm.Spec.JobLabel, svc.Labels[sm.Spec.JobLabel])
			}
		}
	}
	for _, o := range r["PodMonitor"] {
		pm := o.(*monitoringv1.PodMonitor)
		if !matches(pm.Spec.Selector.MatchLabels, podLabels) || podLabels[pm.Spec.JobLabel] != "ecagent" {
			t.Errorf("PodMonitor selects %v with job label %s; pods have %v", pm.Spec.Selector.MatchLabels, pm.Spec.JobLabel, podLabels)
		}
	}
	want := map[string][]string{
		"default":         {"ConfigMap", "DaemonSet", "Service", "ServiceAccount"},
		"monitoring":      {"ConfigMap", "DaemonSet", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"},
		"podmonitor":      {"ConfigMap", "DaemonSet", "PodMonitor", "ServiceAccount"},
		"mqtt":            {"ConfigMap", "DaemonSet", "Secret", "Service", "ServiceAccount"},
		"existing-secret": {"ConfigMap", "DaemonSet", "Service"},
		"real-nic":        {"ConfigMap", "DaemonSet", "Service", "ServiceAccount"},
		"guaranteed-qos":  {"ConfigMap", "DaemonSet", "Service", "ServiceAccount"},
		"nonroot":         {"ConfigMap", "DaemonSet", "Secret", "Service", "ServiceAccount"},
		"webconfig":       {"ConfigMap", "DaemonSet", "Service", "ServiceAccount", "ServiceMonitor"},
		"fleet":           {"ConfigMap", "DaemonSet", "PrometheusAgent", "Role", "RoleBinding", "Service", "ServiceAccount", "ServiceMonitor"},
	}[scenario]
	var kinds []string
	for k := range r {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	if want != nil && !slices.Equal(kinds, want) {
		t.Errorf("rendered kinds %v, want %v", kinds, want)
	}
	for _, o := range r["PrometheusRule"] {
		checkRules(t, o.(*monitoringv1.PrometheusRule))
	}
	for _, o := range r["PrometheusAgent"] {
		checkRemoteWrite(t, o.(*prometheusAgent), r, matches)
	}
}

// checkRemoteWrite checks that the agent-mode Prometheus scrapes this
// release's monitor, remote-writes native histograms to the store, and
// runs as a ServiceAccount its Role lets discover the pods.
func checkRemoteWrite(t *testing.T, pa *prometheusAgent, r rendered, matches func(sel, labels map[string]string) bool) {
	t.Helper()
	selected := 0
	for _, o := range r["ServiceMonitor"] {
		if sel := pa.Spec.ServiceMonitorSelector; sel != nil && matches(sel.MatchLabels, o.(*monitoringv1.ServiceMonitor).Labels) {
			selected++
		}
	}
	for _, o := range r["PodMonitor"] {
		if sel := pa.Spec.PodMonitorSelector; sel != nil && matches(sel.MatchLabels, o.(*monitoringv1.PodMonitor).Labels) {
			selected++
		}
	}
	if selected != 1 {
		t.Errorf("PrometheusAgent selects %d of the release's monitors, want 1", selected)
	}
	if len(pa.Spec.RemoteWrite) != 1 || pa.Spec.RemoteWrite[0].URL == "" ||
		pa.Spec.RemoteWrite[0].SendNativeHistograms == nil || !*pa.Spec.RemoteWrite[0].SendNativeHistograms {
		t.Errorf("PrometheusAgent remoteWrite %+v, want one URL with native histograms", pa.Spec.RemoteWrite)
	}
	bound := false
	for _, o := range r["RoleBinding"] {
		rb := o.(*rbacv1.RoleBinding)
		for _, s := range rb.Subjects {
			bound = bound || (s.Kind == "ServiceAccount" && s.Name == pa.Spec.ServiceAccountName)
		}
	}
	if !bound {
		t.Errorf("PrometheusAgent runs as %q, which no RoleBinding grants discovery", pa.Spec.ServiceAccountName)
	}
}

// checkRules compares the PrometheusRule's groups with the rule files of
// deploy/prometheus (groups with rules) followed by the scenario's
// additional groups: the chart must ship the rules unchanged.
func checkRules(t *testing.T, pr *monitoringv1.PrometheusRule) {
	t.Helper()
	files, err := filepath.Glob("files/deploy/prometheus/*.rules.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files under files/deploy/prometheus: %v", err)
	}
	var want []monitoringv1.RuleGroup
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Groups []monitoringv1.RuleGroup `json:"groups"`
		}
		if err := yaml.UnmarshalStrict(b, &file); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range file.Groups {
			if len(g.Rules) > 0 {
				want = append(want, g)
			}
		}
	}
	got := pr.Spec.Groups
	if len(got) < len(want) {
		t.Fatalf("PrometheusRule has %d groups, the rule files %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			a, _ := json.MarshalIndent(got[i], "", " ")
			b, _ := json.MarshalIndent(want[i], "", " ")
			t.Errorf("group %d differs from the rule file:\nchart: %s\nfile:  %s", i, a, b)
		}
	}
	if len(got) == len(want) {
		t.Error("the scenario's additional group is missing")
	}
}

// checkDashboards wants, when enabled, every dashboard of
// deploy/grafana/dashboards in the sidecar's ConfigMap unchanged, and no
// such ConfigMap otherwise.
func checkDashboards(t *testing.T, r rendered, enabled bool) {
	t.Helper()
	files, err := filepath.Glob("files/deploy/grafana/dashboards/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	for _, o := range r["ConfigMap"] {
		if c := o.(*corev1.ConfigMap); c.Labels["grafana_dashboard"] != "" {
			cm = c
		}
	}
	if !enabled || len(files) == 0 {
		if cm != nil {
			t.Errorf("dashboards ConfigMap %s rendered without dashboards enabled or available", cm.Name)
		}
		if enabled {
			t.Log("no dashboards under deploy/grafana/dashboards yet: nothing to ship")
		}
		return
	}
	if cm == nil {
		t.Fatal("dashboards enabled, but no ConfigMap labelled grafana_dashboard")
	}
	size := 0
	for _, v := range cm.Data {
		size += len(v)
	}
	if size > 1<<20 {
		t.Errorf("dashboards ConfigMap of %d bytes: Kubernetes stores at most 1 MiB", size)
	}
	if len(cm.Data) != len(files) {
		t.Errorf("ConfigMap %s holds %d dashboards, deploy/grafana/dashboards %d", cm.Name, len(cm.Data), len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got := cm.Data[filepath.Base(f)]
		if strings.TrimRight(got, "\n") != strings.TrimRight(string(b), "\n") || !json.Valid([]byte(got)) {
			t.Errorf("dashboard %s is not shipped unchanged", filepath.Base(f))
		}
	}
}
