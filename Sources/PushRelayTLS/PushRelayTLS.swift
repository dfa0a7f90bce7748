// PushRelayTLS: see docs/architecture.md
