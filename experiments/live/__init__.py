"""Live experiments: A/B tests of personas and models on real visitors (define, analyse)."""
