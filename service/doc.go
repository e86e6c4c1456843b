// Package service is what the reference binaries are made of: the coordinator service (the HTTP API, MCP
// at /mcp and the dashboard over a store) and the runner service (a runner with its executor and its
// gateway, against a remote coordinator), each configured from command-line flags and environment
// variables, with start-up checks whose errors name the flag and the value at fault, and a logger chosen by
// -log-format and -log-level.
//
// A service of one's own that wants the same flags writes a few lines:
//
//	var cfg service.CoordinatorConfig
//	cfg.RegisterFlags(flag.CommandLine)
//	flag.Parse()
//	log, _ := cfg.Log.New(os.Stderr)
//	store, err := cfg.OpenStore(ctx, log)
//	…
//	err = cfg.Serve(ctx, store, log)
//
// The configs nest the libraries' own ([coordinator.Config.RegisterFlags], [runner.Config.RegisterFlags]),
// the pattern of large Go services: each package registers the flags of the settings it defines.
package service
