"""Analysis of a run: inference, tables and the report."""
