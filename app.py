"""Start the TreadWise web app (settings come from TREADWISE_* environment variables)."""

from treadwise.web.gradio_app import serve

if __name__ == "__main__":
    serve()
