package ecagent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ecagent/ecagent/agent/config"
)

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
			checkWebConfig(t, ds, r, r.configMap(t, ds.Name), scenarioName(values) == "webconfig")
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
	if m, ok := mounts["/run/ecagent"]; !ok || volumes[m.Name].EmptyDir == nil || volumes[m.Name].EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Error("/run/ecagent must be an in-memory emptyDir (read-only root file system)")
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
	dir := t.TempDir()
	path := filepath.Join(dir, "ecagent.yaml")
	// The web configuration is on the pod's Secret volume: here, in dir.
	data := strings.ReplaceAll(cm.Data["ecagent.yaml"], webConfigDir+"/", dir+"/")
	if err := os.WriteFile(filepath.Join(dir, "web-config.yml"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
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
	if !strings.HasPrefix(cfg.Cycle.SHM, "/run/ecagent/") {
		t.Errorf("cycle.shm %s is not on the /run/ecagent volume", cfg.Cycle.SHM)
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
		} else if ref.Name != "ecagent-mqtt-credentials" && ref.Name != "ecagent-otlp-headers" { // ci/existing-secret-values.yaml, ci/fleet-values.yaml
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
