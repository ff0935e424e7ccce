package metrics

import (
	"reflect"
	"sync"
)

// The error codes of a response are found by a generic walk over its kmsg
// struct: every int16 field named ErrorCode, at any depth, through
// structs, pointers to structs and slices of structs. The fields to visit
// are planned once per type (codePlan), so that a walk allocates nothing:
// reflect's StructField lookups allocate, Value.Field does not.

// codePlan lists, for one struct type, the ErrorCode fields and the
// fields that lead to more.
type codePlan struct {
	codes  []int // indexes of int16 ErrorCode fields
	nested []nestedField
}

type nestedField struct {
	index int
	kind  reflect.Kind // reflect.Struct, reflect.Pointer or reflect.Slice
	plan  *codePlan    // of the struct the field holds or points to
}

var (
	plansMu sync.Mutex
	plans   sync.Map // reflect.Type (a struct) -> *codePlan
)

// planFor returns the plan of struct type t, nil when nothing in t can
// hold an error code.
func planFor(t reflect.Type) *codePlan {
	if p, ok := plans.Load(t); ok {
		return p.(*codePlan)
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	return buildPlan(t, map[reflect.Type]*codePlan{})
}

// buildPlan plans t; building holds the plans being built, for types that
// contain themselves. REQUIRES: plansMu held.
func buildPlan(t reflect.Type, building map[reflect.Type]*codePlan) *codePlan {
	if p, ok := plans.Load(t); ok {
		return p.(*codePlan)
	}
	if p, ok := building[t]; ok {
		return p
	}
	p := &codePlan{}
	building[t] = p
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
			p.codes = append(p.codes, i)
			continue
		}
		elem, kind := f.Type, f.Type.Kind()
		switch kind {
		case reflect.Pointer, reflect.Slice:
			elem = f.Type.Elem()
		case reflect.Struct:
		default:
			continue
		}
		if elem.Kind() != reflect.Struct {
			continue
		}
		if sub := buildPlan(elem, building); sub != nil {
			p.nested = append(p.nested, nestedField{index: i, kind: kind, plan: sub})
		}
	}
	var out *codePlan
	if len(p.codes) > 0 || len(p.nested) > 0 {
		out = p
	}
	delete(building, t)
	if out != nil {
		plans.Store(t, out)
	} else {
		// A type that leads to no code is stored too, as an empty plan,
		// so it is not planned again; callers treat it as nil.
		plans.Store(t, &codePlan{})
	}
	return out
}

// codeCounts accumulates a response's error codes: the first few distinct
// ones in place, the rest (rare) in a map.
type codeCounts struct {
	n        int
	codes    [8]int16
	counts   [8]int
	overflow map[int16]int
}

func (a *codeCounts) add(code int16) {
	for i := range a.n {
		if a.codes[i] == code {
			a.counts[i]++
			return
		}
	}
	if a.n < len(a.codes) {
		a.codes[a.n], a.counts[a.n] = code, 1
		a.n++
		return
	}
	if a.overflow == nil {
		a.overflow = map[int16]int{}
	}
	a.overflow[code]++
}

// walkErrorCodes adds every ErrorCode of resp (a pointer to a kmsg
// struct) to acc.
func walkErrorCodes(resp any, acc *codeCounts) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	v = v.Elem()
	if p := planFor(v.Type()); p != nil {
		walkStruct(v, p, acc)
	}
}

func walkStruct(v reflect.Value, p *codePlan, acc *codeCounts) {
	for _, i := range p.codes {
		acc.add(int16(v.Field(i).Int()))
	}
	for _, nf := range p.nested {
		if len(nf.plan.codes) == 0 && len(nf.plan.nested) == 0 {
			continue
		}
		f := v.Field(nf.index)
		switch nf.kind {
		case reflect.Struct:
			walkStruct(f, nf.plan, acc)
		case reflect.Pointer:
			if !f.IsNil() {
				walkStruct(f.Elem(), nf.plan, acc)
			}
		case reflect.Slice:
			for j := range f.Len() {
				walkStruct(f.Index(j), nf.plan, acc)
			}
		}
	}
}
