package kcompatd

//go:generate go test -run ^TestREADMEConfigTables$ -update .

import (
	"fmt"
	"strings"

	"github.com/kcompatd/kcompatd/partition"
)

// README's configuration tables are generated from the property catalogs
// (config.go's properties, partition's topic config catalog), between
// marker comments; TestREADMEConfigTables fails when README drifts, and
// `go generate` rewrites them.

// readmeTables are the generated tables by marker name.
func readmeTables() map[string]string {
	var broker, logDefaults, topics strings.Builder
	row := func(b *strings.Builder, cells ...string) {
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
	row(&broker, "property", "default", "meaning")
	row(&broker, "---", "---", "---")
	for i := range properties {
		p := &properties[i]
		def := p.defaultNote
		if def == "" {
			def = codeOrEmpty(p.Default)
		}
		name := withSynonyms(p.Name, p.synonyms)
		if p.perListener {
			name += " (per listener)"
		}
		row(&broker, name, def, p.note)
	}

	row(&logDefaults, "property", "default", "meaning")
	row(&logDefaults, "---", "---", "---")
	for _, b := range partition.BrokerLogConfigs() {
		var syn []string
		def := codeOrEmpty(b.Default)
		for _, s := range b.Synonyms {
			syn = append(syn, s.Name)
			if b.NullDefault && !s.NullDefault {
				def = fmt.Sprintf("`%s` (`%s=%s`)", b.TopicDefault, s.Name, s.Default)
			}
		}
		if b.NullDefault && len(syn) == 0 {
			def = codeOrEmpty(b.TopicDefault)
		}
		note := b.Note
		if !b.Dynamic {
			note += " (read at start-up)"
		}
		row(&logDefaults, withSynonyms(b.Name, syn), def, note)
	}

	row(&topics, "topic config", "type", "default", "valid values", "broker default")
	row(&topics, "---", "---", "---", "---", "---")
	for _, name := range partition.TopicConfigNames() {
		d, _ := partition.TopicConfigDef(name)
		valid := d.Range.String()
		if d.OneOf != nil {
			valid = "`" + strings.Join(d.OneOf, "`, `") + "`"
		}
		var syn []string
		for _, s := range partition.BrokerSynonyms(name) {
			syn = append(syn, "`"+s+"`")
		}
		row(&topics, "`"+name+"`", strings.ToLower(d.Type.String()), codeOrEmpty(d.Default), valid, strings.Join(syn, ", "))
	}
	return map[string]string{"broker": broker.String(), "log-defaults": logDefaults.String(), "topic": topics.String()}
}

func codeOrEmpty(s string) string {
	if s == "" {
		return "empty"
	}
	return "`" + s + "`"
}

// withSynonyms words a property and the older names that set it when it
// is not given: `log.dirs` (else `log.dir`).
func withSynonyms(name string, synonyms []string) string {
	s := "`" + name + "`"
	for _, n := range synonyms {
		s += " (else `" + n + "`)"
	}
	return strings.Replace(s, ") (else", ", else", -1)
}

// spliceREADME replaces each generated table in readme, between
// "<!-- config:NAME -->" and "<!-- /config:NAME -->".
func spliceREADME(readme string) (string, error) {
	for name, table := range readmeTables() {
		open, end := "<!-- config:"+name+" -->\n", "<!-- /config:"+name+" -->"
		i := strings.Index(readme, open)
		j := strings.Index(readme, end)
		if i < 0 || j < i {
			return "", fmt.Errorf("README.md has no %q ... %q markers", open, end)
		}
		readme = readme[:i+len(open)] + table + readme[j:]
	}
	return readme, nil
}
