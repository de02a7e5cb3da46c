package ecagent_test

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// webConfigDir is where the chart mounts the webConfig Secret.
const webConfigDir = "/etc/ecagent/web"

// checkWebConfig checks the endpoints' security as rendered: without
// webConfig (on), plain HTTP probes and no web configuration; with it
// (ci/webconfig-values.yaml), the Secret mounted read-only, the agent
// pointed at its file, HTTPS probes without credentials (the agent answers
// /healthz and /readyz without them), and monitors scraping over HTTPS
// with the scenario's CA and credentials.
func checkWebConfig(t *testing.T, ds *appsv1.DaemonSet, r rendered, cm *corev1.ConfigMap, on bool) {
	t.Helper()
	c := ds.Spec.Template.Spec.Containers[0]
	wantScheme := corev1.URISchemeHTTP
	if on {
		wantScheme = corev1.URISchemeHTTPS
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		scheme := p.HTTPGet.Scheme
		if scheme == "" {
			scheme = corev1.URISchemeHTTP
		}
		if scheme != wantScheme || len(p.HTTPGet.HTTPHeaders) != 0 {
			t.Errorf("%s probe: scheme %s, headers %v; want %s without headers", name, scheme, p.HTTPGet.HTTPHeaders, wantScheme)
		}
	}
	names := strings.Contains(cm.Data["ecagent.yaml"], "webconfig: "+webConfigDir+"/web-config.yml")
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath != webConfigDir {
			continue
		}
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "ecagent-web" && m.ReadOnly {
				mounted = true
			}
		}
	}
	if names != on || mounted != on {
		t.Errorf("metrics.webconfig set: %v, Secret ecagent-web mounted read-only at %s: %v; want both %v",
			names, webConfigDir, mounted, on)
	}
	for _, o := range r["ServiceMonitor"] {
		for _, e := range o.(*monitoringv1.ServiceMonitor).Spec.Endpoints {
			https := e.Scheme != nil && strings.EqualFold(string(*e.Scheme), "https")
			if https != on || (on && (e.TLSConfig == nil || e.TLSConfig.CA.Secret == nil || e.BasicAuth == nil)) {
				t.Errorf("ServiceMonitor endpoint: scheme %v, tlsConfig %+v, basicAuth %+v (web configuration: %v)",
					e.Scheme, e.TLSConfig, e.BasicAuth, on)
			}
		}
	}
}
