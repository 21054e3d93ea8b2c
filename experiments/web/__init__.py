"""The harness in the app's page: the Experiments tab, live experiments' chat hook and panels."""

# Imported first, so Gradio's components load without writing type stubs
# (treadwise/web/gradio_stubs.py).
import treadwise.web  # noqa: F401
