"""TreadWise: a persona chatbot for TreadWise Tire Co. with math and business tools."""

__version__ = "0.1.0"
