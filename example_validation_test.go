package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// Parameters are validated against the agent's parameters_schema before anything is created, and every
// error is reported at once, each with the JSONPath of the wrong value and the schema keyword it broke.
// The HTTP API answers the same error as a 400 body, and the MCP server hands it to the model, schema
// included, so that the caller can correct all of its input in one go.
func ExampleValidationError() {
	ctx := context.Background()
	sys := embed(coordinator.Config{}, nil)
	defer sys.stop()
	_, err := sys.coord.CreateAgent(ctx, &orchestrator.Blueprint{
		Name:        "crawler",
		Description: "Crawls pages",
		ParametersSchema: json.RawMessage(`{
			"type": "object",
			"required": ["pages"],
			"properties": {
				"pages": {"type": "array", "items": {
					"type": "object", "required": ["url"],
					"properties": {"url": {"type": "string", "format": "uri"}, "depth": {"type": "integer", "maximum": 3}}
				}}
			}
		}`),
	})
	if err != nil {
		log.Fatal(err)
	}

	_, err = sys.coord.StartRun(ctx, orchestrator.StartRunParams{
		AgentName:  "crawler",
		Parameters: json.RawMessage(`{"pages": [{"url": "https://example.com"}, {"url": "not a url", "depth": 9}, {}]}`),
	})
	var ve *orchestrator.ValidationError
	if !errors.As(err, &ve) {
		log.Fatalf("want a validation error, got %v", err)
	}
	fmt.Println(errors.Is(err, orchestrator.ErrInvalidParameters), ve.Code())
	for _, fe := range ve.Errors {
		fmt.Printf("%s: %s (%s)\n", fe.Path, fe.Message, fe.SchemaPath)
	}
	// Output:
	// true parameter_validation_failed
	// $.pages[1].depth: 9 is greater than the maximum of 3 (properties.pages.items.properties.depth.maximum)
	// $.pages[1].url: 'not a url' is not a valid URI (properties.pages.items.properties.url.format)
	// $.pages[2]: 'url' is a required property (properties.pages.items.required)
}
