"""Reading runs: statistics, the report and its charts, comparisons between runs."""
