"""The Gradio web app: chat with a persona, inspect tool steps and plots, browse experiment runs."""

from treadwise.web import gradio_stubs

gradio_stubs.install()  # before any module of this package imports Gradio
