"""The harness in the app's page: the Experiments tab, live experiments' chat hook and panels."""
