package ecagent_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// object is one rendered manifest, decoded.
type object struct {
	kind, name string
	obj        any
}

// prometheusAgent is the Prometheus Operator's v1alpha1 PrometheusAgent
// as the chart renders it (its spec is CommonPrometheusFields, plus a mode
// the chart leaves out), without the v1alpha1 package's dependency on the
// apiextensions API server.
type prometheusAgent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              monitoringv1.CommonPrometheusFields `json:"spec"`
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
	case "monitoring.coreos.com/v1alpha1/PrometheusAgent":
		return &prometheusAgent{}, true
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}, true
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}, true
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
