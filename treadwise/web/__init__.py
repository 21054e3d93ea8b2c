"""The Gradio web app: chat with a persona, inspect tool steps and plots, browse experiment runs."""
