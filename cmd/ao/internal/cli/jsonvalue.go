package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// object is a JSON object that remembers the order of its keys, so a schema's properties are shown in
// the order its author wrote them.
type object struct {
	keys []string
	m    map[string]any
}

// get returns the value of key, or nil.
func (o *object) get(key string) any {
	if o == nil {
		return nil
	}
	return o.m[key]
}

// obj returns the value of key when it is an object.
func (o *object) obj(key string) *object {
	v, _ := o.get(key).(*object)
	return v
}

// str returns the value of key when it is a string.
func (o *object) str(key string) string {
	v, _ := o.get(key).(string)
	return v
}

// has reports whether key is present (even as null).
func (o *object) has(key string) bool {
	if o == nil {
		return false
	}
	_, ok := o.m[key]
	return ok
}

// MarshalJSON writes the object with its keys in their original order.
func (o *object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := marshal(o.m[k])
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// set sets key, keeping its place when it is already there.
func (o *object) set(key string, v any) {
	if o.m == nil {
		o.m = map[string]any{}
	}
	if _, ok := o.m[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.m[key] = v
}

// decodeJSON decodes one JSON document into *object, []any, string, json.Number, bool or nil. Numbers
// stay json.Number, so large integers pass through exactly.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{m: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // string, json.Number, bool or nil
	}
}

// marshal is json.Marshal without HTML escaping: "<" stays "<" in what a person reads.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// compactJSON renders v as compact JSON, for showing values (defaults, enums) in one line.
func compactJSON(v any) string {
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// keysOrNil returns the object's keys in order (none for a nil object).
func (o *object) keysOrNil() []string {
	if o == nil {
		return nil
	}
	return o.keys
}
