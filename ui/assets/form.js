// A form for an agent's parameters, built from its JSON Schema: strings, numbers, booleans and enums get
// their own inputs, lists of scalars a comma-separated field, everything else a JSON text area. Defaults
// are filled in and required fields marked. The API validates; its errors are shown next to the fields
// they name.

import { h, set, pretty } from './dom.js';

let formSeq = 0;

function baseType(s) {
  let t = s.type;
  if (Array.isArray(t)) t = t.find((x) => x !== 'null');
  return t;
}

function kindOf(s) {
  if (!s || typeof s !== 'object') return 'json';
  if (Array.isArray(s.enum) && s.enum.length) return 'enum';
  if ('const' in s) return 'enum';
  switch (baseType(s)) {
    case 'string': return 'string';
    case 'integer':
    case 'number': return 'number';
    case 'boolean': return 'boolean';
    case 'array': {
      const k = kindOf(s.items);
      return k === 'string' || k === 'number' || k === 'enum' ? 'list' : 'json';
    }
    default: return 'json';
  }
}

const numberRe = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

// scalar turns a typed-in item into the JSON value the schema s asks for; text the schema would refuse
// is sent as it is, for the API to say what is wrong.
function scalar(text, s) {
  const k = kindOf(s);
  if (k === 'number' && numberRe.test(text)) return Number(text);
  if (k === 'enum') {
    const values = Array.isArray(s.enum) ? s.enum : [s.const];
    const hit = values.find((v) => String(v) === text);
    if (hit !== undefined) return hit;
  }
  return text;
}

// fieldName finds the top-level parameter an API validation error is about: "$.url" and "$.items[2]"
// name url and items, "$['odd key']" odd key, and a missing required property is reported at "$" with
// "'url' is a required property".
export function fieldName(err) {
  const p = String(err.path || '');
  let m = p.match(/^\$\.([^.[]+)/);
  if (m) return m[1];
  m = p.match(/^\$\['((?:[^'\\]|\\.)*)'\]/);
  if (m) return m[1].replace(/\\(.)/g, '$1');
  if (p === '$' || p === '') {
    m = String(err.message || '').match(/^(?:'([^']*)'|"([^"]*)") is a required property$/);
    if (m) return m[1] !== undefined ? m[1] : m[2];
  }
  return null;
}

// ownPath is the path the API gives errors about the field itself.
function ownPath(f) {
  if (f.whole) return '$';
  return /^[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*$/.test(f.name)
    ? '$.' + f.name : "$['" + f.name.replace(/['\\]/g, '\\$&') + "']";
}

export function schemaForm(schema) {
  const id = 'p' + (++formSeq);
  const fields = new Map(); // name → field
  const general = h('ul', { class: 'form-errors', hidden: true, role: 'alert' });
  const box = h('div', { class: 'fields' }, general);
  const props = schema && typeof schema === 'object' && schema.properties && typeof schema.properties === 'object'
    ? schema.properties : null;
  const required = new Set(schema && Array.isArray(schema.required) ? schema.required : []);

  function addField(name, s, whole) {
    const n = fields.size;
    const fid = `${id}-${n}`;
    const kind = whole ? 'json' : kindOf(s);
    const req = required.has(name);
    const hasDefault = s && typeof s === 'object' && 'default' in s;
    const def = hasDefault ? s.default : undefined;
    let input;
    let hint = null;
    let values = null;
    switch (kind) {
      case 'enum': {
        values = Array.isArray(s.enum) ? s.enum : [s.const];
        input = h('select', { id: fid, name });
        if (!req || !hasDefault) input.append(h('option', { value: '' }, req ? 'choose…' : '—'));
        values.forEach((v, i) => input.append(h('option', { value: String(i), selected: hasDefault && v === def }, String(v))));
        break;
      }
      case 'boolean':
        input = h('select', { id: fid, name },
          h('option', { value: '' }, '—'),
          h('option', { value: 'true', selected: def === true }, 'true'),
          h('option', { value: 'false', selected: def === false }, 'false'));
        break;
      case 'number':
        input = h('input', { id: fid, name, type: 'text', inputmode: 'decimal', autocomplete: 'off', value: hasDefault ? String(def) : null });
        hint = baseType(s) === 'integer' ? 'integer' : 'number';
        break;
      case 'string':
        if (name === 'prompt' || (s.maxLength === undefined && s.format === undefined && /prompt|instructions/i.test(name))) {
          input = h('textarea', { id: fid, name, rows: 4 });
          if (hasDefault) input.value = String(def);
        } else {
          input = h('input', { id: fid, name, type: 'text', autocomplete: 'off', spellcheck: 'false', value: hasDefault ? String(def) : null });
        }
        if (s.format) hint = s.format;
        break;
      case 'list':
        input = h('input', { id: fid, name, type: 'text', autocomplete: 'off', value: Array.isArray(def) ? def.map(String).join(', ') : null });
        hint = 'comma-separated';
        break;
      default:
        input = h('textarea', { id: fid, name, rows: 4, class: 'mono', spellcheck: 'false' });
        if (hasDefault) input.value = pretty(def);
        hint = 'JSON';
    }
    const err = h('div', { class: 'field-error', id: fid + '-err', 'aria-live': 'polite' });
    input.setAttribute('aria-describedby', fid + '-err');
    if (req) input.setAttribute('aria-required', 'true');
    const label = h('label', { for: fid },
      whole ? 'parameters' : name,
      req ? h('span', { class: 'req', title: 'required' }, ' *') : null,
      hint ? h('span', { class: 'hint' }, ' ' + hint) : null);
    const desc = s && typeof s.description === 'string' ? h('div', { class: 'desc' }, s.description) : null;
    const wrap = h('div', { class: 'field', 'data-field': whole ? '$' : name }, label, desc, input, err);
    box.append(wrap);
    fields.set(whole ? '$' : name, { name, kind, input, err, wrap, schema: s, values, whole });
  }

  if (props) {
    for (const [name, s] of Object.entries(props)) addField(name, s || {}, false);
  } else if (schema && typeof schema === 'object') {
    addField('parameters', schema, true); // no properties to lay out: the whole object as JSON
  } else {
    box.append(h('p', { class: 'muted' }, 'This agent takes no parameters.'));
  }

  function clearErrors() {
    general.hidden = true;
    set(general);
    for (const f of fields.values()) {
      set(f.err);
      f.wrap.classList.remove('invalid');
      f.input.removeAttribute('aria-invalid');
    }
  }

  function fieldError(f, text) {
    f.err.append(h('div', null, text));
    f.wrap.classList.add('invalid');
    f.input.setAttribute('aria-invalid', 'true');
  }

  // showErrors puts the API's validation errors ({path, message, schema_path}) next to their fields;
  // those that name no field are listed above them.
  function showErrors(errors) {
    clearErrors();
    for (const e of errors) {
      const name = fieldName(e);
      const f = (name !== null && fields.get(name)) || fields.get('$');
      if (f) {
        const deeper = e.path && e.path !== '$' && e.path !== ownPath(f);
        fieldError(f, deeper ? `${e.path}: ${e.message}` : e.message);
      } else {
        general.append(h('li', null, e.path ? `${e.path}: ${e.message}` : e.message));
        general.hidden = false;
      }
    }
    // The first field on the form that is wrong, whatever order the errors came in.
    for (const f of fields.values()) {
      if (f.wrap.classList.contains('invalid')) {
        f.input.focus();
        break;
      }
    }
  }

  function showGeneral(text) {
    general.append(h('li', null, text));
    general.hidden = false;
  }

  // collect returns {params} or, when a JSON field does not parse, {errors} (already shown).
  function collect() {
    if (!fields.size) return { params: schema ? {} : undefined };
    const params = {};
    const bad = [];
    for (const [key, f] of fields) {
      const raw = f.input.value;
      let v;
      switch (f.kind) {
        case 'enum':
          if (raw === '') continue;
          v = f.values[Number(raw)];
          break;
        case 'boolean':
          if (raw === '') continue;
          v = raw === 'true';
          break;
        case 'number':
          if (raw.trim() === '') continue;
          v = scalar(raw.trim(), f.schema);
          break;
        case 'string':
          if (raw === '') continue;
          v = raw;
          break;
        case 'list': {
          const items = raw.split(',').map((x) => x.trim()).filter((x) => x !== '');
          if (!items.length) continue;
          v = items.map((x) => scalar(x, f.schema.items || {}));
          break;
        }
        default:
          if (raw.trim() === '') continue;
          try {
            v = JSON.parse(raw);
          } catch (e) {
            bad.push([f, 'not valid JSON: ' + e.message]);
            continue;
          }
      }
      if (key === '$') return bad.length ? { errors: bad } : { params: v };
      params[f.name] = v;
    }
    if (bad.length) {
      clearErrors();
      for (const [f, text] of bad) fieldError(f, text);
      bad[0][0].input.focus();
      return { errors: bad };
    }
    return { params };
  }

  return { element: box, collect, showErrors, showGeneral, clearErrors };
}
