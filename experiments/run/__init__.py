"""Running a sweep: plan its cases, run each on an agent, grade it and build its record."""
