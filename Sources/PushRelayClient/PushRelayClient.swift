// PushRelayClient: see docs/architecture.md
