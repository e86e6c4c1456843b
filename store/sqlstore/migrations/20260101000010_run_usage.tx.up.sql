-- The tokens and cost an AI agent's run consumed (orchestrator.Usage, JSON), from its reported result.
ALTER TABLE runs ADD COLUMN usage {{.JSON}}
