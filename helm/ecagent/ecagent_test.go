// Package ecagent_test checks the Helm chart the way CI must, offline:
// `helm lint --strict`, `helm template` for the default values and every
// ci/*-values.yaml scenario, each rendered object decoded strictly into
// its Kubernetes (k8s.io/api) or Prometheus Operator type — an unknown or
// misspelt field fails — plus the properties the chart promises (least
// privilege, probes, rollout, the agent accepting its configuration), the
// values schema refusing bad values, and the plain manifests in
// deploy/kubernetes/ being what the chart renders.
//
// It needs the helm binary (go install helm.sh/helm/v3/cmd/helm@v3.22.0;
// .ci/run installs it) and skips without it.
package ecagent_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ecagent/ecagent/agent/config"
)

const (
	release   = "ecagent"
	namespace = "ecagent"
	// capabilities is what the agent needs and all the chart grants.
	capabilities = "IPC_LOCK,NET_RAW,SYS_NICE"
)

// helm returns the path of the helm binary: on PATH, or where go install
// puts it.
func helm(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("needs helm: go install helm.sh/helm/v3/cmd/helm@v3.22.0")
	return ""
}

// runHelm runs helm in the chart's directory and returns its stdout.
// Helm's notes about the symbolic links under files/ go to stderr.
func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

// scenarios are the values files CI renders: the defaults and ci/*.
func scenarios(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("ci/*-values.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci/*-values.yaml: %v", err)
	}
	return append([]string{""}, files...)
}

func scenarioName(valuesFile string) string {
	if valuesFile == "" {
		return "default"
	}
	return strings.TrimSuffix(filepath.Base(valuesFile), "-values.yaml")
}

func render(t *testing.T, valuesFile string, extra ...string) []byte {
	t.Helper()
	args := []string{"template", release, ".", "--namespace", namespace}
	if valuesFile != "" {
		args = append(args, "--values", valuesFile)
	}
	out, err := runHelm(t, append(args, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLintStrict(t *testing.T) {
	for _, values := range scenarios(t) {
		t.Run(scenarioName(values), func(t *testing.T) {
			args := []string{"lint", "--strict", "."}
			if values != "" {
				args = append(args, "--values", values)
			}
			out, err := runHelm(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(out, []byte("[WARNING]")) || bytes.Contains(out, []byte("[ERROR]")) {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}

// object is one rendered manifest, decoded.
type object struct {
	kind, name string
	obj        any
}

// newTyped returns an empty typed object for a manifest's apiVersion and
// kind; the chart renders nothing else.
func newTyped(apiVersion, kind string) (any, bool) {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}, true
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, true
	case "v1/Secret":
		return &corev1.Secret{}, true
	case "v1/Service":
		return &corev1.Service{}, true
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, true
	case "apps/v1/DaemonSet":
		return &appsv1.DaemonSet{}, true
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, true
	case "monitoring.coreos.com/v1/PodMonitor":
		return &monitoringv1.PodMonitor{}, true
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &monitoringv1.PrometheusRule{}, true
	}
	return nil, false
}

// decodeStrictly splits a multi-document manifest and decodes every
// document into its type, failing the test on unknown or duplicate
// fields, unknown kinds and missing namespaces.
func decodeStrictly(t *testing.T, manifest []byte) []object {
	t.Helper()
	objs, errs := decode(manifest)
	for _, err := range errs {
		t.Error(err)
	}
	return objs
}

// decode is decodeStrictly returning the problems.
func decode(manifest []byte) ([]object, []error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var objs []object
	var errs []error
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, errs
		}
		if err != nil {
			return objs, append(errs, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			errs = append(errs, fmt.Errorf("not YAML: %w\n%s", err, doc))
			continue
		}
		typed, ok := newTyped(meta.APIVersion, meta.Kind)
		if !ok {
			errs = append(errs, fmt.Errorf("%s %s/%s: a kind this test does not know; add it to newTyped", meta.Metadata.Name, meta.APIVersion, meta.Kind))
			continue
		}
		if err := yaml.UnmarshalStrict(doc, typed); err != nil {
			errs = append(errs, fmt.Errorf("%s %s does not decode strictly into %T: %w", meta.Kind, meta.Metadata.Name, typed, err))
			continue
		}
		if meta.Metadata.Namespace == "" && meta.Kind != "Namespace" {
			errs = append(errs, fmt.Errorf("%s %s has no namespace", meta.Kind, meta.Metadata.Name))
		}
		objs = append(objs, object{kind: meta.Kind, name: meta.Metadata.Name, obj: typed})
	}
}

// TestStrictDecodingCatchesMistakes is the control: the decoding that
// validates the chart must refuse misspelt fields, fields in the wrong
// place, duplicates and kinds it does not know.
func TestStrictDecodingCatchesMistakes(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"misspelt pod field", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x, namespace: y}\nspec:\n  template:\n    spec:\n      hostNetwrok: true\n", "hostNetwrok"},
		{"field in the wrong place", "apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: y}\nspec:\n  selector: {a: b}\n  publishNotReady: true\n", "publishNotReady"},
		{"misspelt monitor field", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x, namespace: y}\nspec:\n  endpoint: []\n", "endpoint"},
		{"duplicate field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: y}\ndata: {a: b}\ndata: {c: d}\n", "data"},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: y}\n", "does not know"},
		{"no namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := decode([]byte(tc.doc))
			if len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), tc.want) {
				t.Errorf("decode accepted %q or did not name %q: %v", tc.doc, tc.want, errs)
			}
		})
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// rendered groups a scenario's objects by kind.
type rendered map[string][]any

func (r rendered) one(t *testing.T, kind string) any {
	t.Helper()
	if len(r[kind]) != 1 {
		t.Fatalf("want one %s, rendered %d", kind, len(r[kind]))
	}
	return r[kind][0]
}

// configMap returns the ConfigMap called name.
func (r rendered) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	for _, o := range r["ConfigMap"] {
		if cm := o.(*corev1.ConfigMap); cm.Name == name {
			return cm
		}
	}
	t.Fatalf("no ConfigMap %s", name)
	return nil
}

// TestRenderedObjects renders every scenario, decodes every object
// strictly and checks what the chart promises.
func TestRenderedObjects(t *testing.T) {
	for _, values := range scenarios(t) {
		t.Run(scenarioName(values), func(t *testing.T) {
			r := rendered{}
			for _, o := range decodeStrictly(t, render(t, values)) {
				r[o.kind] = append(r[o.kind], o.obj)
			}
			ds := r.one(t, "DaemonSet").(*appsv1.DaemonSet)
			checkDaemonSet(t, ds, scenarioName(values))
			checkConfig(t, ds, r.configMap(t, ds.Name))
			checkSecretReferences(t, ds, r)
			checkMonitoring(t, ds, r, scenarioName(values))
			checkDashboards(t, r, scenarioName(values) == "monitoring")
		})
	}
}

func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet, scenario string) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v, dnsPolicy %s: raw frames need the node's network", spec.HostNetwork, spec.DNSPolicy)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("enableServiceLinks must be false: Kubernetes would set ECAGENT_* variables the agent reads as configuration")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the agent needs no Kubernetes API token")
	}
	us := ds.Spec.UpdateStrategy
	if us.Type != appsv1.RollingUpdateDaemonSetStrategyType || us.RollingUpdate == nil || us.RollingUpdate.MaxUnavailable.String() != "1" {
		t.Errorf("update strategy %+v, want RollingUpdate with maxUnavailable 1", us)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatal("no securityContext.capabilities")
	}
	var add []string
	for _, a := range sc.Capabilities.Add {
		add = append(add, string(a))
	}
	slices.Sort(add)
	if strings.Join(add, ",") != capabilities || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("capabilities add %v drop %v; want add %s, drop ALL", add, sc.Capabilities.Drop, capabilities)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the root file system must be read-only")
	}
	// Only the non-root scenario needs escalation (file capabilities).
	wantEscalation := scenario == "nonroot"
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation != wantEscalation {
		t.Errorf("allowPrivilegeEscalation %v, want %v", sc.AllowPrivilegeEscalation, wantEscalation)
	}
	if wantEscalation != (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) {
		t.Errorf("runAsNonRoot %v in scenario %s", sc.RunAsNonRoot, scenario)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s probe %+v, want GET %s on the metrics port", name, p, path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" {
		t.Errorf("ports %+v", c.Ports)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	if m, ok := mounts["/dev/shm"]; !ok || volumes[m.Name].EmptyDir == nil || volumes[m.Name].EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Error("/dev/shm must be an in-memory emptyDir (read-only root file system)")
	}
	if m, ok := mounts["/etc/ecagent/ecagent.yaml"]; !ok || volumes[m.Name].ConfigMap == nil || !m.ReadOnly {
		t.Error("the configuration must be mounted read-only from the ConfigMap at /etc/ecagent/ecagent.yaml")
	}
	// A non-root agent reads the Secret's files through their group.
	for _, v := range spec.Volumes {
		if v.Secret == nil || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
			continue
		}
		fsGroup := spec.SecurityContext != nil && spec.SecurityContext.FSGroup != nil
		mode := int32(0o644) // the Kubernetes default
		if v.Secret.DefaultMode != nil {
			mode = *v.Secret.DefaultMode
		}
		if !fsGroup || mode&0o040 == 0 {
			t.Errorf("uid %d cannot read Secret volume %s (fsGroup set: %v, mode %#o)", *sc.RunAsUser, v.Name, fsGroup, mode)
		}
	}
	if !slices.Contains(c.Args, "--config=/etc/ecagent/ecagent.yaml") || c.Args[0] != "run" {
		t.Errorf("args %v", c.Args)
	}
	if ds.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation: a changed configuration would not roll the agents")
	}
	if scenario == "guaranteed-qos" {
		req, lim := c.Resources.Requests, c.Resources.Limits
		cpu := req.Cpu()
		if !reflect.DeepEqual(req, lim) || cpu.MilliValue()%1000 != 0 || cpu.IsZero() {
			t.Errorf("guaranteed QoS needs requests = limits with whole CPUs: requests %v, limits %v", req, lim)
		}
	}
	var hostEnv bool
	for _, e := range c.Env {
		if e.Name == "ECAGENT_HOST" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName" {
			hostEnv = true
		}
	}
	if !hostEnv {
		t.Error("ECAGENT_HOST must come from spec.nodeName: the fleet label host is the node")
	}
}

// checkConfig loads the rendered configuration file with the agent's own
// loader, which refuses unknown keys and bad values, and checks that the
// metrics endpoint listens on the container's port.
func checkConfig(t *testing.T, ds *appsv1.DaemonSet, cm *corev1.ConfigMap) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ecagent.yaml")
	if err := os.WriteFile(path, []byte(cm.Data["ecagent.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Sources{File: path})
	if err != nil {
		t.Fatalf("the agent refuses the rendered configuration:\n%v\n%s", err, cm.Data["ecagent.yaml"])
	}
	port := ds.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
	if want := fmt.Sprintf(":%d", port); cfg.Metrics.Listen != want {
		t.Errorf("metrics.listen %q, container port %d", cfg.Metrics.Listen, port)
	}
	if !strings.HasPrefix(cfg.Cycle.SHM, "/dev/shm/") {
		t.Errorf("cycle.shm %s is not on the /dev/shm volume", cfg.Cycle.SHM)
	}
}

// checkSecretReferences checks that every Secret the pod uses is either
// rendered (with the keys referenced) or named by mqtt.existingSecret.
func checkSecretReferences(t *testing.T, ds *appsv1.DaemonSet, r rendered) {
	t.Helper()
	secrets := map[string]*corev1.Secret{}
	for _, o := range r["Secret"] {
		s := o.(*corev1.Secret)
		secrets[s.Name] = s
	}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if s, ok := secrets[ref.Name]; ok {
			if _, ok := s.Data[ref.Key]; !ok && (ref.Optional == nil || !*ref.Optional) {
				t.Errorf("%s refers to key %s missing from Secret %s", e.Name, ref.Key, ref.Name)
			}
		} else if ref.Name != "ecagent-mqtt-credentials" { // ci/existing-secret-values.yaml
			t.Errorf("%s refers to Secret %s, which is neither rendered nor existing", e.Name, ref.Name)
		}
	}
	for _, s := range secrets {
		for k := range s.Data {
			if !slices.Contains([]string{"username", "password", "ca.crt", "tls.crt", "tls.key"}, k) {
				t.Errorf("Secret %s has unexpected key %s", s.Name, k)
			}
		}
	}
}

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

// TestValuesSchemaRefuses renders with values the schema (or a template
// check) must refuse.
func TestValuesSchemaRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"unknown top-level value", []string{"replicas=3"}, "replicas"},
		{"capability beyond the three", []string{"securityContext.capabilities.add={NET_RAW,SYS_ADMIN}"}, "SYS_ADMIN"},
		{"capabilities not dropped", []string{"securityContext.capabilities.drop={NET_BIND_SERVICE}"}, "drop"},
		{"privileged", []string{"securityContext.privileged=true"}, "privileged"},
		{"priority out of range", []string{"config.cycle.priority=150"}, "priority"},
		{"host set in config", []string{"config.host=edge-01"}, "host"},
		{"metrics.listen set in config", []string{"config.metrics.listen=:1234"}, "listen"},
		{"segment off the shm volume", []string{"config.cycle.shm=/var/tmp/ecagent.shm"}, "shm"},
		{"fractional guaranteed CPUs", []string{"guaranteedQoS.enabled=true", "guaranteedQoS.cpus=1.5"}, "cpus"},
		{"bad image digest", []string{"image.digest=latest"}, "digest"},
		{"service and pod monitor", []string{"serviceMonitor.enabled=true", "podMonitor.enabled=true"}, "not both"},
		{"service monitor without service", []string{"serviceMonitor.enabled=true", "service.enabled=false"}, "service.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", release, ".", "--namespace", namespace}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, err := runHelm(t, args...)
			if err == nil {
				t.Fatalf("helm template --set %v rendered", tc.set)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the error does not name %q:\n%v", tc.want, err)
			}
		})
	}
}

// TestPackagedChart packages the chart and checks that, of what
// files/deploy links to, only the rule files and the dashboards are in
// it, and no Go test.
func TestPackagedChart(t *testing.T) {
	dir := t.TempDir()
	if _, err := runHelm(t, "package", ".", "--destination", dir); err != nil {
		t.Fatal(err)
	}
	pkgs, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if len(pkgs) != 1 {
		t.Fatalf("helm package made %v", pkgs)
	}
	out, err := exec.Command("tar", "-tzf", pkgs[0]).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rules int
	for _, f := range strings.Fields(string(out)) {
		f = strings.TrimPrefix(f, "ecagent/")
		switch {
		case strings.HasSuffix(f, ".go"):
			t.Errorf("%s is packaged", f)
		case strings.HasPrefix(f, "files/"):
			rule, _ := filepath.Match("files/deploy/prometheus/*.rules.yml", f)
			dashboard, _ := filepath.Match("files/deploy/grafana/dashboards/*.json", f)
			if !rule && !dashboard {
				t.Errorf("%s is packaged; add it to .helmignore", f)
			}
			if rule {
				rules++
			}
		}
	}
	if rules == 0 {
		t.Errorf("no rule files packaged:\n%s", out)
	}
}

// plainManifests are the files of deploy/kubernetes/ rendered from the
// chart, and how.
var plainManifests = []struct {
	file string
	args []string
}{
	{"ecagent.yaml", nil},
	{"prometheus-operator.yaml", []string{"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true",
		"--show-only", "templates/servicemonitor.yaml", "--show-only", "templates/prometheusrule.yaml"}},
}

const manifestHeader = `# Generated from the Helm chart helm/ecagent by
#   helm template %s helm/ecagent --namespace %s %s
# Do not edit: change the chart, then regenerate every file here with
#   ECAGENT_UPDATE_MANIFESTS=1 go test ./helm/ecagent -run TestPlainManifests
`

// TestPlainManifestsAreUpToDate renders deploy/kubernetes/*.yaml and
// compares; ECAGENT_UPDATE_MANIFESTS=1 rewrites them instead.
func TestPlainManifestsAreUpToDate(t *testing.T) {
	update := os.Getenv("ECAGENT_UPDATE_MANIFESTS") == "1"
	for _, m := range plainManifests {
		t.Run(m.file, func(t *testing.T) {
			body, err := runHelm(t, append([]string{"template", release, ".", "--namespace", namespace}, m.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]byte(fmt.Sprintf(manifestHeader, release, namespace, strings.Join(m.args, " "))), body...)
			path := filepath.Join("..", "..", "deploy", "kubernetes", m.file)
			if update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (generate it: ECAGENT_UPDATE_MANIFESTS=1 go test ./helm/ecagent -run TestPlainManifests)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is not what the chart renders; regenerate: ECAGENT_UPDATE_MANIFESTS=1 go test ./helm/ecagent -run TestPlainManifests", path)
			}
			decodeStrictly(t, got)
		})
	}
	t.Run("namespace.yaml", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", "namespace.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeStrictly(t, b)
		if len(objs) != 1 || objs[0].name != namespace {
			t.Fatalf("namespace.yaml holds %v, want the namespace %s", objs, namespace)
		}
		if l := objs[0].obj.(*corev1.Namespace).Labels["pod-security.kubernetes.io/enforce"]; l != "privileged" {
			t.Errorf("Pod Security level %q: host network and added capabilities need privileged", l)
		}
	})
}
