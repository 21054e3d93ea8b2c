"""Test doubles and loopback servers shared by the tests, the benchmarks and the screenshots."""
