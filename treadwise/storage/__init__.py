"""Where TreadWise keeps things: leads and feedback, conversation memory, and lead exports."""
