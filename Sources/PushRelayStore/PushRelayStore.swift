// PushRelayStore: see docs/architecture.md
