package chartcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chart = "../mcp-resources"

func helm(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPRES_HELM"); p != "" {
		return p
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		t.Fatal("no helm: set MCPRES_HELM or put helm on PATH (scripts/tools.sh helm builds it)")
	}
	return p
}

// render runs helm template with values (a YAML document) and returns the
// manifests by kind, each decoded strictly.
func render(t *testing.T, values string) map[string][]any {
	t.Helper()
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return renderWith(t, "demo", "--namespace", "tools", "-f", vf)
}

// renderWith runs helm template RELEASE with args and returns the
// manifests by kind, each decoded strictly.
func renderWith(t *testing.T, release string, args ...string) map[string][]any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm(t), append([]string{"template", release, chart}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	out := map[string][]any{}
	for _, doc := range strings.Split(stdout.String(), "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		var head struct{ APIVersion, Kind string }
		if err := json.Unmarshal(js, &head); err != nil {
			t.Fatal(err)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "policy/v1 PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "autoscaling/v2 HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		default:
			t.Fatalf("the chart renders a %s %s, which this test does not know", head.APIVersion, head.Kind)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			t.Fatalf("%s: not a strict %s: %v\n%s", head.Kind, head.APIVersion, err, doc)
		}
		out[head.Kind] = append(out[head.Kind], obj)
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

const minimal = "cursorKey: {secretName: mcp-cursor}\ntokens: {secretName: mcp-tokens}\n"

// everything turns every optional part on, with the reference schema;
// everythingFile does so with a resources file instead (the two are
// exclusive: the file names its own sources).
const everything = `cursorKey: {secretName: mcp-cursor, secretKey: key}
tokens: {secretName: mcp-tokens}
postgres: {urlSecret: db, listenSecret: db-direct}
bucket: {name: assets, endpoint: "http://minio:9000", region: us-east-1, pathStyle: true, credentialsSecret: s3}
extraArgs: ["--max-items=128"]
autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 9}
`

const everythingFile = `cursorKey: {secretName: mcp-cursor, secretKey: key}
tokens: {secretName: mcp-tokens}
resourcesFile: |
  version: 1
  sources: {}
resourcesFileEnv:
  - {name: DOCS_DATABASE_URL, secretName: docs-db, secretKey: url}
  - {name: DOCS_BUCKET, value: docs}
extraArgs: ["--max-items=128"]
`

func deployment(t *testing.T, m map[string][]any) *appsv1.Deployment {
	t.Helper()
	if len(m["Deployment"]) != 1 {
		t.Fatalf("%d Deployments, want 1", len(m["Deployment"]))
	}
	return m["Deployment"][0].(*appsv1.Deployment)
}

func TestMinimalValuesRenderAHardenedStatelessDeployment(t *testing.T) {
	m := render(t, minimal)
	d := deployment(t, m)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Fatalf("replicas %v, want the default 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Fatal("the pod may run as root")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Fatal("the pod mounts a service account token it never uses")
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Fatalf("container security context %+v: want a read-only root, no privilege escalation, every capability dropped", sc)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Fatal("want liveness on /healthz and readiness on /readyz")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Fatalf("resources %+v: want requests and limits", c.Resources)
	}
	for _, want := range []string{"serve", "--http=0.0.0.0:8080", "--stateless", "--cursor-key-file=/var/run/mcp-resources/cursor-key/cursor-key"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %q", c.Args, want)
		}
	}
	if got := pod.TerminationGracePeriodSeconds; got == nil || *got != 15 {
		t.Errorf("terminationGracePeriodSeconds %v, want the 10 s grace + 5", got)
	}
	if len(m["PodDisruptionBudget"]) != 1 || len(m["Service"]) != 1 || len(m["HorizontalPodAutoscaler"]) != 0 || len(m["ConfigMap"]) != 0 {
		t.Fatalf("rendered %v", kinds(m))
	}
	svc := m["Service"][0].(*corev1.Service)
	if svc.Spec.Ports[0].TargetPort.StrVal != "http" || fmt.Sprint(svc.Spec.Selector) != fmt.Sprint(d.Spec.Selector.MatchLabels) {
		t.Fatalf("the Service does not select the Deployment's pods on its http port: %+v", svc.Spec)
	}
}

func TestEveryOptionRendersAndReferencesSecretsWithoutInliningThem(t *testing.T) {
	m := render(t, everything)
	d := deployment(t, m)
	if d.Spec.Replicas != nil {
		t.Fatal("replicas set while the HorizontalPodAutoscaler scales the Deployment")
	}
	hpa := m["HorizontalPodAutoscaler"][0].(*autoscalingv2.HorizontalPodAutoscaler)
	if hpa.Spec.ScaleTargetRef.Name != d.Name || *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas != 9 {
		t.Fatalf("hpa %+v", hpa.Spec)
	}
	c := d.Spec.Template.Spec.Containers[0]
	wantArgs(t, c, "--tokens=/var/run/mcp-resources/tokens/tokens", "--max-items=128", "--cursor-key-file=/var/run/mcp-resources/cursor-key/key")
	if slices.Contains(c.Args, "--config=/etc/mcp-resources/resources.yaml") {
		t.Errorf("args %q: --config without a resources file", c.Args)
	}
	wantSecretEnv(t, c, map[string]string{
		"MCPRES_DATABASE_URL": "db/url", "MCPRES_LISTEN_DATABASE_URL": "db-direct/url",
		"MCPRES_BUCKET_ACCESS_KEY": "s3/access-key", "MCPRES_BUCKET_SECRET_KEY": "s3/secret-key",
	})

	m = render(t, everythingFile)
	d = deployment(t, m)
	c = d.Spec.Template.Spec.Containers[0]
	wantArgs(t, c, "--config=/etc/mcp-resources/resources.yaml", "--tokens=/var/run/mcp-resources/tokens/tokens", "--max-items=128")
	wantSecretEnv(t, c, map[string]string{"DOCS_DATABASE_URL": "docs-db/url"})
	plain := false
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "MCPRES_") {
			t.Errorf("%s set beside a resources file, which names its own sources", e.Name)
		}
		plain = plain || (e.Name == "DOCS_BUCKET" && e.Value == "docs" && e.ValueFrom == nil)
	}
	if !plain {
		t.Errorf("env %+v: want DOCS_BUCKET=docs as a plain value", c.Env)
	}
	cm := m["ConfigMap"][0].(*corev1.ConfigMap)
	if !strings.Contains(cm.Data["resources.yaml"], "version: 1") {
		t.Fatalf("the ConfigMap does not hold the resources file: %q", cm.Data)
	}
	if d.Spec.Template.Annotations["checksum/resources-file"] == "" {
		t.Error("a changed resources file would not roll the replicas")
	}
}

func wantArgs(t *testing.T, c corev1.Container, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(c.Args, w) {
			t.Errorf("args %q lack %q", c.Args, w)
		}
	}
}

// wantSecretEnv checks that each variable of want comes from its Secret
// key, and that no secret-looking variable is inlined.
func wantSecretEnv(t *testing.T, c corev1.Container, want map[string]string) {
	t.Helper()
	secretEnv := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secretEnv[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		} else if strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "DATABASE_URL") || strings.Contains(e.Name, "ACCESS_KEY") {
			t.Errorf("%s is inlined, not referenced from a Secret", e.Name)
		}
	}
	for name, ref := range want {
		if secretEnv[name] != ref {
			t.Errorf("%s from %q, want the Secret key %s", name, secretEnv[name], ref)
		}
	}
}

func TestACursorKeyIsRequired(t *testing.T) {
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte("tokens: {secretName: mcp-tokens}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(helm(t), "template", "demo", chart, "-f", vf).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cursorKey.secretName") {
		t.Fatalf("rendered without a cursor key (%v):\n%s", err, out)
	}
}

func kinds(m map[string][]any) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}

// The pods listen on 0.0.0.0, where serve refuses anonymous HTTP: the
// chart passes --anonymous only when anonymous: true asks for it.
func TestAnonymousIsPassedOnlyWhenAskedFor(t *testing.T) {
	for values, want := range map[string]bool{minimal: false, everything: false, "cursorKey: {secretName: mcp-cursor}\nanonymous: true\n": true} {
		args := deployment(t, render(t, values)).Spec.Template.Spec.Containers[0].Args
		if got := slices.Contains(args, "--anonymous"); got != want {
			t.Errorf("values %q: --anonymous in args %v is %v, want %v", values, args, got, want)
		}
	}
}
