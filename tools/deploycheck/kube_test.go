package deploycheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kubeDir is the folder of the Kubernetes manifests.
var kubeDir = filepath.Join(repoRoot, "deploy", "kubernetes")

// overlays are the kustomize overlays shipped, each a way to run the pastebin.
var overlays = []string{"single-node", "scaled"}

// kubeDecoder decodes manifests as the API server does with strict field validation
// (kubectl apply --validate=strict): into the Go types of k8s.io/api, failing on a field those
// types do not have, on a field given twice, and on a kind they do not know.
func kubeDecoder() *kjson.Serializer {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
}

// decodeManifests decodes every YAML document in data strictly.
func decodeManifests(dec *kjson.Serializer, data []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d (%v): %w", len(objs)+1, gvk, err)
		}
		objs = append(objs, obj)
	}
}

// stripComments drops whole-line comments, to tell a document of comments alone from one with content.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
		}
	}
	return out
}

// decodeKustomization decodes a kustomization.yaml strictly into kustomize's own type, field
// names matched exactly.
func decodeKustomization(data []byte) (*types.Kustomization, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var k types.Kustomization
	strict, err := sigsjson.UnmarshalStrict(j, &k, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	return &k, errors.Join(strict...)
}

// render builds an overlay as `kubectl apply -k` would, with kustomize's own library, and decodes
// what comes out strictly.
func render(t *testing.T, overlay string) []runtime.Object {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(kubeDir, "overlays", overlay))
	if err != nil {
		t.Fatal(err)
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", overlay, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(kubeDecoder(), out)
	if err != nil {
		t.Fatalf("overlay %s renders what does not decode strictly: %v", overlay, err)
	}
	return objs
}

// only returns the one object of type T named name.
func only[T runtime.Object](t *testing.T, objs []runtime.Object, name string) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok && objectName(o) == name {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want one %T named %s, found %d", zero, name, len(found))
	}
	return found[0]
}

func objectName(o runtime.Object) string {
	if m, ok := o.(interface{ GetName() string }); ok {
		return m.GetName()
	}
	return ""
}

// yamlFiles lists the YAML files under dir.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && slices.Contains([]string{".yaml", ".yml"}, filepath.Ext(path)) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
