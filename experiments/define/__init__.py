"""Defining a sweep: grid and scenario files, their checks and the price table."""
