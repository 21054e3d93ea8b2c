"""Privacy by design: normalisation, detection, redaction, consent, erasure (docs/privacy.md)."""
