package apidoc

import (
	"strings"
	"testing"
)

const testDoc = `
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /things:
    get:
      operationId: listThings
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/ThingList"}
        "400": {$ref: "#/components/responses/Bad"}
  /things/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string}}
    get:
      operationId: getThing
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Thing"}
        "204": {description: nothing}
  /things/special:
    delete:
      operationId: deleteSpecial
      responses:
        "204": {description: gone}
  /events:
    get:
      operationId: events
      responses:
        "200":
          description: a stream
          content:
            text/event-stream:
              schema: {$ref: "#/components/schemas/Stream"}
components:
  responses:
    Bad:
      description: bad
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Error"}
  schemas:
    Error:
      type: object
      required: [error, message]
      properties:
        error: {type: string}
        message: {type: string}
      additionalProperties: true
    Thing:
      type: object
      required: [id]
      properties:
        id: {type: string}
        size: {type: integer}
        created_at: {type: string, format: date-time}
        extra:
          allOf:
            - type: object
              properties:
                a: {type: string}
            - type: object
              properties:
                b: {type: string}
    ThingList:
      type: object
      required: [things]
      properties:
        things:
          type: array
          items: {$ref: "#/components/schemas/Thing"}
    End:
      type: object
      required: [done]
      properties:
        done: {const: true}
    Stream:
      type: string
      x-sse-data:
        end: {$ref: "#/components/schemas/End"}
        default: {$ref: "#/components/schemas/Thing"}
`

func parseTest(t *testing.T, src string) *Doc {
	t.Helper()
	d, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestMatch(t *testing.T) {
	d := parseTest(t, testDoc)
	for _, tc := range []struct {
		method, path, want string
		allowed            []string
	}{
		{"GET", "/things", "GET /things", nil},
		{"HEAD", "/things", "GET /things", nil},
		{"GET", "/things/t1", "GET /things/{id}", nil},
		{"GET", "/things/a%2Fb", "GET /things/{id}", nil},
		{"GET", "/things/special", "GET /things/{id}", nil}, // the literal path has no GET
		{"DELETE", "/things/special", "DELETE /things/special", nil},
		{"DELETE", "/things/t1", "", []string{"GET"}},
		{"POST", "/things", "", []string{"GET"}},
		{"GET", "/things/", "", nil},
		{"GET", "/nothing", "", nil},
	} {
		op, allowed := d.Match(tc.method, tc.path)
		got := ""
		if op != nil {
			got = op.String()
		}
		if got != tc.want || strings.Join(allowed, ",") != strings.Join(tc.allowed, ",") {
			t.Errorf("Match(%s %s) = %q %v, want %q %v", tc.method, tc.path, got, allowed, tc.want, tc.allowed)
		}
	}
}

func TestCheckResponse(t *testing.T) {
	d := parseTest(t, testDoc)
	const js = "application/json"
	for _, tc := range []struct {
		what         string
		method, path string
		status       int
		ct, body     string
		wantErr      string // "" for none
	}{
		{"a documented answer", "GET", "/things/t1", 200, js, `{"id":"t1","size":3,"created_at":"2026-01-02T03:04:05.123456Z"}`, ""},
		{"a charset parameter", "GET", "/things/t1", 200, js + "; charset=utf-8", `{"id":"t1"}`, ""},
		{"an undocumented status", "GET", "/things/t1", 404, js, `{"error":"not_found","message":"no"}`, "does not document"},
		{"a field the description lacks", "GET", "/things/t1", 200, js, `{"id":"t1","colour":"red"}`, "colour"},
		{"a field the description lacks, in an array item", "GET", "/things", 200, js, `{"things":[{"id":"t1","colour":"red"}]}`, "colour"},
		{"a required field missing", "GET", "/things/t1", 200, js, `{"size":1}`, "id"},
		{"a wrong type", "GET", "/things/t1", 200, js, `{"id":"t1","size":"big"}`, "size"},
		{"a malformed date-time", "GET", "/things/t1", 200, js, `{"id":"t1","created_at":"yesterday"}`, "date-time"},
		{"allOf branches are not closed", "GET", "/things/t1", 200, js, `{"id":"t1","extra":{"a":"x","b":"y"}}`, ""},
		{"an open schema takes more fields", "GET", "/things", 400, js, `{"error":"bad","message":"m","limit":3}`, ""},
		{"a response reference followed", "GET", "/things", 400, js, `{"error":"bad"}`, "message"},
		{"not JSON", "GET", "/things/t1", 200, js, `{"id":`, "not JSON"},
		{"an undocumented media type", "GET", "/things/t1", 200, "text/plain", `hello`, "text/plain"},
		{"a body where none is documented", "GET", "/things/t1", 204, "", `{}`, "documents none"},
		{"no body, none documented", "GET", "/things/t1", 204, "", ``, ""},
		{"HEAD has no body", "HEAD", "/things/t1", 200, js, ``, ""},
		{"no route: 404", "GET", "/nothing", 404, js, `{"error":"route_not_found","message":"no route"}`, ""},
		{"no route but 200", "GET", "/nothing", 200, js, `{}`, "matches no documented route"},
		{"wrong method: 405", "POST", "/things", 405, js, `{"error":"method_not_allowed","message":"no"}`, ""},
		{"wrong method but 404", "POST", "/things", 404, js, `{"error":"route_not_found","message":"no"}`, "should be 405"},
		{"an event stream", "GET", "/events", 200, "text/event-stream",
			": hello\n\nid: 1\nevent: thing\ndata: {\"id\":\"t1\"}\n\n: heartbeat\n\nevent: end\ndata: {\"done\":true}\n\n", ""},
		{"an event stream frame that does not match", "GET", "/events", 200, "text/event-stream",
			"id: 1\nevent: thing\ndata: {\"id\":\"t1\",\"colour\":\"red\"}\n\n", "colour"},
		{"an end frame that does not match", "GET", "/events", 200, "text/event-stream",
			"event: end\ndata: {\"done\":false}\n\n", "end"},
	} {
		err := d.CheckResponse(tc.method, tc.path, tc.status, tc.ct, []byte(tc.body))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.what, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("%s: no error, want one mentioning %q", tc.what, tc.wantErr)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("%s: %v; want it to mention %q", tc.what, err, tc.wantErr)
		}
	}
}

func TestLintAcceptsTheTestDocument(t *testing.T) {
	for _, err := range parseTest(t, testDoc).Lint() {
		t.Error(err)
	}
}

func TestLintFindsMistakes(t *testing.T) {
	for _, tc := range []struct {
		what, old, new, want string
	}{
		{"a misspelt operation field", "operationId: listThings", "operationId: listThings\n      sumary: x", `"sumary" is not a field`},
		{"a reference that does not resolve", `$ref: "#/components/schemas/ThingList"`, `$ref: "#/components/schemas/ThingLists"`, "does not resolve"},
		{"an undeclared path parameter", "{name: id, in: path, required: true, schema: {type: string}}", "{name: key, in: path, required: true, schema: {type: string}}", "{id} is not declared"},
		{"a path parameter not required", "{name: id, in: path, required: true,", "{name: id, in: path,", "required: true"},
		{"a duplicate operationId", "operationId: getThing", "operationId: listThings", "same operationId"},
		{"a bad status key", `"204": {description: gone}`, `"2O4": {description: gone}`, "not a status code"},
		{"a response without a description", `"204": {description: nothing}`, `"204": {}`, "needs a description"},
		{"a schema that is not a schema", "size: {type: integer}", "size: {type: integr}", "metaschema"},
		{"another version", "openapi: 3.1.0", "openapi: 3.0.3", "want 3.1.x"},
	} {
		src := strings.Replace(testDoc, tc.old, tc.new, 1)
		if src == testDoc {
			t.Fatalf("%s: the test's replacement does not apply", tc.what)
		}
		errs := parseTest(t, src).Lint()
		var all []string
		found := false
		for _, err := range errs {
			all = append(all, err.Error())
			found = found || strings.Contains(err.Error(), tc.want)
		}
		if !found {
			t.Errorf("%s: lint said %q, want an error mentioning %q", tc.what, all, tc.want)
		}
	}
}

func TestParseRefusesUnquotedStatus(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(testDoc, `"204": {description: gone}`, `204: {description: gone}`, 1)))
	if err == nil || !strings.Contains(err.Error(), "quote it") {
		t.Fatalf("err = %v, want one saying to quote the key", err)
	}
}
