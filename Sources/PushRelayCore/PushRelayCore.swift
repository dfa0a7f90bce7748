// PushRelayCore: see docs/architecture.md
