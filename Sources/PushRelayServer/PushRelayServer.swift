// PushRelayServer: see docs/architecture.md
