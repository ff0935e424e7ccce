package kcompatd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kcompatd/kcompatd/partition"
)

// Each property is defined once: its name appears as a string literal in
// one production Go file, its catalog's. (meta.properties, a file format
// of its own, has a key spelled like the property node.id.) Names inside
// longer text, log and error messages that mention a property, are not
// definitions and are not counted.
func TestPropertyNamesWrittenOnce(t *testing.T) {
	names := map[string]bool{}
	for _, p := range properties {
		names[p.Name] = true
		for _, s := range p.synonyms {
			names[s] = true
		}
	}
	for _, n := range partition.TopicConfigNames() {
		names[n] = true
	}
	for _, b := range partition.BrokerLogConfigs() {
		names[b.Name] = true
		for _, s := range b.Synonyms {
			names[s.Name] = true
		}
	}
	exempt := map[string]string{filepath.Join("partition", "checkpoint.go"): "node.id"}
	files := map[string]map[string]bool{} // name -> files
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && names[s] && exempt[path] != s {
				if files[s] == nil {
					files[s] = map[string]bool{}
				}
				files[s][path] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range names {
		switch len(files[name]) {
		case 0:
			t.Errorf("%s appears in no production file", name)
		case 1:
		default:
			t.Errorf("%s is written in %d files: %v", name, len(files[name]), files[name])
		}
	}
}

// DescribeConfigs v3+ answers Kafka's documentation for every broker
// property, as for every topic config.
func TestEveryPropertyIsDocumented(t *testing.T) {
	for _, p := range properties {
		if p.Doc == "" || p.note == "" {
			t.Errorf("%s: doc %q, README note %q", p.Name, p.Doc, p.note)
		}
	}
	for _, b := range partition.BrokerLogConfigs() {
		if b.Doc == "" || b.Note == "" {
			t.Errorf("%s: doc %q, README note %q", b.Name, b.Doc, b.Note)
		}
		for _, s := range b.Synonyms {
			if s.Doc == "" {
				t.Errorf("%s has no doc", s.Name)
			}
		}
	}
}
