"""The rule-based language engine behind the offline model: reading, dialogue, next step."""
