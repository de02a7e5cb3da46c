// Package ecagent_test checks the Helm chart the way CI must, offline:
// `helm lint --strict`, `helm template` for the default values and every
// ci/*-values.yaml scenario, each rendered object decoded strictly into
// its Kubernetes (k8s.io/api) or Prometheus Operator type — an unknown or
// misspelt field fails — plus the properties the chart promises (least
// privilege, probes, rollout, the agent accepting its configuration), the
// values schema refusing bad values, and the plain manifests in
// deploy/kubernetes/ being what the chart renders.
//
// This file runs helm and holds the lint, schema, packaging and plain
// manifest tests; the strict decoding is in decode_test.go, the checks of
// the rendered objects in rendered_test.go and monitoring_test.go.
//
// It needs the helm binary (go install helm.sh/helm/v3/cmd/helm@v3.22.0;
// .ci/run installs it) and skips without it.
package ecagent_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
