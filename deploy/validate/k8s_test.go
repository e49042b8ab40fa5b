package validate

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/yaml"
)

const k8sDir = "../k8s"

// newValidator is kubeconform reading only the local schemas, strict:
// unknown fields and duplicate keys are errors. Kustomization is kustomize's
// own file, not an API object.
func newValidator(t *testing.T) validator.Validator {
	t.Helper()
	dir, err := filepath.Abs("schemas")
	if err != nil {
		t.Fatal(err)
	}
	v, err := validator.New([]string{dir + "/{{ .ResourceKind }}{{ .KindSuffix }}.json"}, validator.Opts{
		Strict:    true,
		SkipKinds: map[string]struct{}{"Kustomization": {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func manifestFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", k8sDir, err)
	}
	return files
}

func validate(t *testing.T, v validator.Validator, name string, r io.Reader) []validator.Result {
	t.Helper()
	return v.Validate(name, io.NopCloser(r))
}

func TestManifestsAreValid(t *testing.T) {
	v := newValidator(t)
	kinds := map[string]int{}
	for _, f := range manifestFiles(t) {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range validate(t, v, f, fh) {
			sig, _ := res.Resource.Signature()
			switch res.Status {
			case validator.Valid:
				kinds[sig.Kind]++
			case validator.Skipped, validator.Empty:
			default:
				t.Errorf("%s: %s %s: %v %v", f, sig.Kind, sig.Name, res.Err, res.ValidationErrors)
			}
		}
	}
	want := map[string]int{"Namespace": 1, "ConfigMap": 1, "Secret": 1, "Deployment": 4, "Service": 1,
		"ScaledObject": 3, "HorizontalPodAutoscaler": 1, "PodDisruptionBudget": 1}
	for kind, n := range want {
		if kinds[kind] != n {
			t.Errorf("%d valid %s objects, want %d (all: %v)", kinds[kind], kind, n, kinds)
		}
	}
}

// The schemas are strict and real: each of these mistakes must be caught.
func TestSchemasCatchMistakes(t *testing.T) {
	v := newValidator(t)
	deployment := func(spec string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
` + spec
	}
	pod := `  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
`
	tests := []struct {
		name string
		yaml string
		want string // in the error
	}{
		{"unknown field", deployment("  replica: 2\n" + pod + "        - {name: c, image: i}\n"), "'replica' not allowed"},
		{"wrong type", deployment("  replicas: two\n" + pod + "        - {name: c, image: i}\n"), "/spec/replicas"},
		{"container without a name", deployment(pod + "        - {image: i}\n"), "missing property 'name'"},
		{"misspelt probe field", deployment(pod + "        - {name: c, image: i, readinessProbe: {httpGet: {path: /readyz, port: 80}, periodSecond: 5}}\n"), "'periodSecond' not allowed"},
		{"service port by name", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: http}]}\n", "/spec/ports/0/port"},
		{"duplicate key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {A: '1', A: '2'}\n", "unmarshal"},
		{"scaledobject unknown field", `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: x}
spec:
  scaleTargetRef: {name: w}
  minReplicas: 1
  triggers: [{type: nats-jetstream, metadata: {stream: s}}]
`, "'minReplicas' not allowed"},
		{"scaledobject without triggers", `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: x}
spec:
  scaleTargetRef: {name: w}
`, "missing property 'triggers'"},
		{"kind without a schema", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x}\n", "could not find schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			results := validate(t, v, tc.name, strings.NewReader(tc.yaml))
			if len(results) != 1 {
				t.Fatalf("%d results", len(results))
			}
			if s := results[0].Status; s == validator.Valid || s == validator.Skipped {
				t.Fatalf("accepted (status %v)", s)
			}
			if err := results[0].Err; err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// kubectl apply -k deploy/k8s applies every manifest.
func TestKustomizationListsEveryManifest(t *testing.T) {
	var k struct {
		Resources []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range manifestFiles(t) {
		if base := filepath.Base(f); base != "kustomization.yaml" {
			want = append(want, base)
		}
	}
	got := append([]string(nil), k.Resources...)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kustomization resources %v, manifests %v", got, want)
	}
}

// object is a manifest object, generic.
type object map[string]any

func (o object) get(path ...string) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func (o object) str(path ...string) string {
	s, _ := o.get(path...).(string)
	return s
}

// objects reads every object of the manifests, keyed kind/name.
func objects(t *testing.T) map[string]object {
	t.Helper()
	out := map[string]object{}
	for _, f := range manifestFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---") {
			var o object
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o == nil || o.str("kind") == "Kustomization" {
				continue
			}
			out[o.str("kind")+"/"+o.str("metadata", "name")] = o
		}
	}
	return out
}

func container(t *testing.T, d object) object {
	t.Helper()
	cs, _ := d.get("spec", "template", "spec", "containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers, want 1", d.str("metadata", "name"), len(cs))
	}
	return object(cs[0].(map[string]any))
}

// What the schemas cannot see: probes on the right paths and ports, the
// autoscaler pointed at the worker and at docrender's stream and consumer,
// references that resolve, non-root pods.
func TestManifestsFitTogether(t *testing.T) {
	objs := objects(t)
	gw, wk, wkPDF, wkOffice := objs["Deployment/docrender-gateway"], objs["Deployment/docrender-worker"], objs["Deployment/docrender-worker-pdf"], objs["Deployment/docrender-worker-office"]
	svc := objs["Service/docrender-gateway"]
	if gw == nil || wk == nil || wkPDF == nil || wkOffice == nil || svc == nil {
		t.Fatalf("missing objects; have %v", keys(objs))
	}
	for _, tc := range []struct {
		deploy        object
		port          int
		portName, env string
	}{
		{gw, 8080, "http", "DOCRENDER_ADDR"},
		{wk, 9090, "ops", "DOCRENDER_WORKER_ADDR"},
		{wkPDF, 9090, "ops", "DOCRENDER_WORKER_ADDR"},
		{wkOffice, 9090, "ops", "DOCRENDER_WORKER_ADDR"},
	} {
		name := tc.deploy.str("metadata", "name")
		c := container(t, tc.deploy)
		ports, _ := c.get("ports").([]any)
		if len(ports) != 1 || object(ports[0].(map[string]any)).get("containerPort") != float64(tc.port) ||
			object(ports[0].(map[string]any)).str("name") != tc.portName {
			t.Errorf("%s: ports %v, want %s:%d", name, ports, tc.portName, tc.port)
		}
		if got := envValue(c, tc.env); got != ":"+strconv.Itoa(tc.port) {
			t.Errorf("%s: %s=%q, want :%d", name, tc.env, got, tc.port)
		}
		for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
			if c.str(probe, "httpGet", "path") != path || c.str(probe, "httpGet", "port") != tc.portName {
				t.Errorf("%s: %s %v, want %s on %s", name, probe, c.get(probe), path, tc.portName)
			}
		}
		if tc.deploy.get("spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
			t.Errorf("%s: pods may run as root", name)
		}
		for _, ref := range []struct{ kind, field string }{{"ConfigMap", "configMapRef"}, {"Secret", "secretRef"}} {
			found := false
			for _, e := range asList(c.get("envFrom")) {
				if n := object(e).str(ref.field, "name"); n != "" {
					found = true
					if objs[ref.kind+"/"+n] == nil {
						t.Errorf("%s: envFrom %s %q does not exist", name, ref.kind, n)
					}
				}
			}
			if !found {
				t.Errorf("%s: no envFrom %s", name, ref.kind)
			}
		}
		labels, _ := tc.deploy.get("spec", "template", "metadata", "labels").(map[string]any)
		sel, _ := tc.deploy.get("spec", "selector", "matchLabels").(map[string]any)
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("%s: selector %s=%v does not match the pod labels", name, k, v)
			}
		}
	}
	gwLabels, _ := gw.get("spec", "template", "metadata", "labels").(map[string]any)
	svcSel, _ := svc.get("spec", "selector").(map[string]any)
	for k, v := range svcSel {
		if gwLabels[k] != v {
			t.Errorf("service selector %s=%v does not select the gateway pods", k, v)
		}
	}
	// Each worker kind (DESIGN §1, §11) has its Deployment taking that kind
	// alone and its autoscaler on that kind's backlog.
	for kind, d := range map[string]object{"chromium": wk, "pdf": wkPDF, "office": wkOffice} {
		name := d.str("metadata", "name")
		if got := envValue(container(t, d), "DOCRENDER_WORKER_KINDS"); got != kind {
			t.Errorf("%s: DOCRENDER_WORKER_KINDS=%q, want %s", name, got, kind)
		}
		so := objs["ScaledObject/"+name]
		if so == nil {
			t.Errorf("%s: no ScaledObject", name)
			continue
		}
		if so.str("spec", "scaleTargetRef", "name") != name {
			t.Errorf("ScaledObject %s scales %q", name, so.str("spec", "scaleTargetRef", "name"))
		}
		triggers := asList(so.get("spec", "triggers"))
		if len(triggers) != 1 {
			t.Fatalf("%s: %d triggers", name, len(triggers))
		}
		tr := object(triggers[0])
		// The metric the trigger asks for must be one the service exports,
		// of this kind.
		q := tr.str("metadata", "query")
		metric := regexp.MustCompile(`docrender_[a-z_]+`).FindString(q)
		if metric == "" || !exportsMetric(t, metric) || !strings.Contains(q, `kind="`+kind+`"`) {
			t.Errorf("%s: trigger query %q asks for no metric the service exports of kind %s", name, q, kind)
		}
		if tr.str("type") != "prometheus" || tr.str("metadata", "serverAddress") == "" || tr.str("metadata", "threshold") == "" {
			t.Errorf("%s: trigger %v", name, tr)
		}
		if n, _ := d.get("spec", "template", "spec", "terminationGracePeriodSeconds").(float64); n < 35 {
			t.Errorf("%s: grace period %vs is shorter than a job", name, n)
		}
	}
}

func envValue(c object, name string) string {
	for _, e := range asList(c.get("env")) {
		if object(e).str("name") == name {
			return object(e).str("value")
		}
	}
	return ""
}

func asList(v any) []map[string]any {
	l, _ := v.([]any)
	var out []map[string]any
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
